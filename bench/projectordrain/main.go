// Command projectordrain measures, in one run, how fast a projector drains
// a pre-filled topic into its read table next to the raw rate of the same
// version-guarded upsert path into the same MariaDB (B2: the sink's Apply
// with the same writes, no Kafka, no decoding).
//
//	go run ./bench/projectordrain [-rows 200000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

type result struct {
	Broker            string  `json:"broker"`
	Rows              int     `json:"rows"`
	RawUpsertRate     float64 `json:"b2_raw_upsert_rows_per_s"`
	ProjectorRate     float64 `json:"projector_drain_rows_per_s"`
	ProjectorVsRawB2  float64 `json:"projector_vs_b2"`
	BatchRowsForB2    int     `json:"b2_batch_rows"`
	SinkConnectionsB2 int     `json:"b2_connections"`
}

func main() {
	rows := flag.Int("rows", 200_000, "rows in the topic")
	out := flag.String("out", "", "write the result as JSON here")
	flag.Parse()
	if err := run(*rows, *out); err != nil {
		fmt.Fprintln(os.Stderr, "projectordrain:", err)
		os.Exit(1)
	}
}

func run(n int, out string) error {
	ctx := context.Background()
	bed, err := testbed.Start(ctx, testbed.Options{})
	defer func() {
		if err := bed.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
		}
	}()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	src, err := bed.MySQL.CreateDatabase(ctx, "chat")
	if err != nil {
		return err
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "reads")
	if err != nil {
		return err
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.messages (id INT PRIMARY KEY, sender_id INT NOT NULL, conversation_id INT, created_at DATETIME(6) NOT NULL, body VARCHAR(100))", src)); err != nil {
		return err
	}
	cfg := config.Default()
	cfg.Source.DSN = config.Secret(bed.MySQL.ReplDSN())
	cfg.Source.ServerID = 900
	cfg.Source.Tables = []string{src + ".messages"}
	cfg.Source.Snapshot.Mode = "initial" // the rows exist first: the snapshot publishes them
	cfg.Kafka.Brokers = bed.Kafka.Brokers()
	cfg.Kafka.TopicPrefix = "pd" + strconv.Itoa(rand.IntN(1e6))
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cols := map[string]string{"sender_id": "sender_id", "created_at": "created_at", "id": "id", "conversation_id": "conversation_id", "body": "body"}
	cfg.Projections = map[string]config.Projection{
		"messages_by_sender": {From: src + ".messages", Sink: "reads", Key: []string{"sender_id", "created_at", "id"}, ShardBy: "sender_id", Columns: cols},
		"raw_b2":             {From: src + ".messages", Sink: "reads", Key: []string{"sender_id", "created_at", "id"}, ShardBy: "sender_id", Columns: cols},
	}

	for lo := 1; lo <= n; lo += 1000 {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%[1]s`.messages SELECT seq, seq %% 500, seq %% 97, '2026-01-01 00:00:00' + INTERVAL seq SECOND, CONCAT('message body ', seq) FROM `%[1]s`.seq_%[2]d_to_%[3]d", src, lo, min(lo+999, n))); err != nil {
			return err
		}
	}
	// Fill the topic: the tailer's initial snapshot publishes the n rows.
	tl, err := cdc.New(cfg, cfg.Kafka.Brokers, log, nil)
	if err != nil {
		return err
	}
	tctx, stopTailer := context.WithCancel(ctx)
	defer stopTailer()
	tdone := make(chan error, 1)
	go func() { tdone <- tl.Run(tctx) }()
	ps, err := projections.Compile(cfg)
	if err != nil {
		return err
	}
	var proj, raw *projections.Projection
	for _, p := range ps {
		if p.Name == "raw_b2" {
			raw = p
		} else {
			proj = p
		}
	}
	// Wait until the topic holds every event, collecting them for B2.
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Kafka.Brokers...), kgo.ConsumeTopics(proj.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return err
	}
	var writes []projections.Write
	deadline := time.Now().Add(5 * time.Minute)
	for len(writes) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d events in the topic after 5 minutes", len(writes), n)
		}
		select {
		case err := <-tdone:
			return fmt.Errorf("tailer stopped: %v", err)
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		var ferr error
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Value == nil || ferr != nil {
				return
			}
			e, err := projections.DecodeEvent(r.Value)
			if err == nil {
				var ws []projections.Write
				ws, err = raw.Writes(e)
				writes = append(writes, ws...)
			}
			ferr = err
		})
		if ferr != nil {
			return ferr
		}
	}
	cl.Close()
	stopTailer()
	if err := <-tdone; err != nil {
		return err
	}

	sink, err := sinks.Open(ctx, bed.MySQL.AdminDSN()+sinkDB)
	if err != nil {
		return err
	}
	defer sink.Close()
	srcDB := bed.MySQL.DB()
	for _, p := range []*projections.Projection{proj, raw} {
		c, err := p.SourceColumns(ctx, srcDB)
		if err != nil {
			return err
		}
		if err := sink.Exec(ctx, sinks.DDL(p, c)); err != nil {
			return err
		}
	}

	// B2: the same writes through the sink's Apply, 5000 per transaction.
	const batch = 5000
	b2Start := time.Now()
	for lo := 0; lo < len(writes); lo += batch {
		if err := sink.Apply(ctx, raw, &projections.Batch{Writes: writes[lo:min(lo+batch, len(writes))]}); err != nil {
			return err
		}
	}
	b2 := time.Since(b2Start)

	// The projector drains the topic.
	pr, err := projections.NewProjector(proj, sink, projections.Options{Brokers: cfg.Kafka.Brokers, Log: log})
	if err != nil {
		return err
	}
	pctx, stopProjector := context.WithCancel(ctx)
	defer stopProjector()
	pdone := make(chan error, 1)
	pStart := time.Now()
	go func() { pdone <- pr.Run(pctx) }()
	for {
		var count int
		if err := sink.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM messages_by_sender").Scan(&count); err != nil {
			return err
		}
		if count >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	drain := time.Since(pStart)
	stopProjector()
	if err := <-pdone; err != nil {
		return err
	}
	r := result{Broker: bed.Kafka.Version(), Rows: n, RawUpsertRate: float64(n) / b2.Seconds(), ProjectorRate: float64(n) / drain.Seconds(),
		BatchRowsForB2: batch, SinkConnectionsB2: 1}
	r.ProjectorVsRawB2 = r.ProjectorRate / r.RawUpsertRate
	fmt.Printf("| broker | rows | B2 raw upsert (rows/s, %d-row txns, 1 conn) | projector drain (rows/s) | projector / B2 |\n|---|---|---|---|---|\n", batch)
	fmt.Printf("| %s | %d | %.0f | %.0f | %.2f |\n", r.Broker, r.Rows, r.RawUpsertRate, r.ProjectorRate, r.ProjectorVsRawB2)
	if out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		return os.WriteFile(out, b, 0o644)
	}
	return nil
}
