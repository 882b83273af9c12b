// Command tailerdrain measures, in one run on one machine, how fast the
// readside tailer drains a pre-written binlog backlog into Kafka next to
// go-mysql's raw parse rate of the same binlog (B0, rows decoded and
// discarded), and the tailer's peak RSS. It starts its own test bed
// (E2E_BROKER selects the broker; the real Apache Kafka by default).
//
//	go run ./bench/tailerdrain [-rows 300000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/e2e/testbed"
)

func main() {
	rows := flag.Int("rows", 300_000, "rows inserted, then updated (2 row events each)")
	out := flag.String("out", "", "write the result as JSON here")
	flag.Parse()
	if err := run(*rows, *out); err != nil {
		fmt.Fprintln(os.Stderr, "tailerdrain:", err)
		os.Exit(1)
	}
}

type result struct {
	Broker          string  `json:"broker"`
	RowEvents       int     `json:"row_events"`
	RawParseRate    float64 `json:"b0_raw_parse_rows_per_s"`
	TailerDrainRate float64 `json:"tailer_drain_rows_per_s"`
	Ratio           float64 `json:"tailer_vs_b0"`
	TailerPeakRSSMB float64 `json:"tailer_peak_rss_mib"`
}

func run(rows int, out string) error {
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
	bin := filepath.Join(bed.Dir(), "readside")
	if b, err := exec.Command("go", "build", "-o", bin, "./cmd/readside").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, b)
	}
	db, err := bed.MySQL.CreateDatabase(ctx, "drain")
	if err != nil {
		return err
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.narrow (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(60) NOT NULL, c DECIMAL(12,2) NOT NULL, d DATETIME NOT NULL)", db)); err != nil {
		return err
	}
	prefix := "drain"
	cfgPath := filepath.Join(bed.Dir(), "readside.yaml")
	cfg := fmt.Sprintf("source:\n  dsn: %q\n  server_id: 777\n  tables: [%s.narrow]\n  snapshot:\n    mode: never\nkafka:\n  brokers: [%s]\n  topic_prefix: %s\n  partitions: 6\nlog:\n  level: warn\n",
		bed.MySQL.ReplDSN(), db, strings.Join(bed.Kafka.Brokers(), ", "), prefix)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}

	// First start: the tailer checkpoints at the end of the (empty) binlog.
	first, err := startTailer(bin, cfgPath, bed.Dir())
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(cdc.CheckpointTopic(prefix)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := waitCheckpoint(ctx, cl, bed, nil); err != nil {
		return err
	}
	_ = first.Process.Signal(syscall.SIGTERM)
	_ = first.Wait()

	// The backlog: inserts, then updates, 1000 rows per transaction.
	start, err := bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return err
	}
	for lo := 1; lo <= rows; lo += 1000 {
		hi := min(lo+999, rows)
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%[1]s`.narrow SELECT seq, seq %% 1000, CONCAT('name-', seq, '-', REPEAT('x', 30)), seq / 100, '2026-01-01 00:00:00' + INTERVAL seq SECOND FROM `%[1]s`.seq_%[2]d_to_%[3]d", db, lo, hi)); err != nil {
			return err
		}
	}
	for lo := 1; lo <= rows; lo += 1000 {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.narrow SET a = a + 1 WHERE id BETWEEN %d AND %d", db, lo, lo+999)); err != nil {
			return err
		}
	}
	end, err := bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return err
	}
	events := 2 * rows

	// B0: go-mysql's raw parse of the same binlog range.
	b0Start := time.Now()
	if err := rawParse(ctx, bed, start, end); err != nil {
		return err
	}
	b0 := time.Since(b0Start)

	// The tailer drains the backlog into Kafka.
	drainStart := time.Now()
	tailer, err := startTailer(bin, cfgPath, bed.Dir())
	if err != nil {
		return err
	}
	peak := make(chan int64, 1)
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go func() { peak <- testbed.SamplePeakRSS(sctx, tailer.Process.Pid) }()
	endPos, err := cdc.ParsePosition("mariadb", end.GTID)
	if err != nil {
		return err
	}
	if _, err := waitCheckpoint(ctx, cl, bed, &endPos); err != nil {
		return err
	}
	drain := time.Since(drainStart)
	stopSampling()
	_ = tailer.Process.Signal(syscall.SIGTERM)
	_ = tailer.Wait()

	r := result{Broker: bed.Kafka.Version(), RowEvents: events,
		RawParseRate: float64(events) / b0.Seconds(), TailerDrainRate: float64(events) / drain.Seconds(),
		TailerPeakRSSMB: float64(<-peak) / (1 << 20)}
	r.Ratio = r.TailerDrainRate / r.RawParseRate
	fmt.Printf("| broker | row events | B0 raw parse (rows/s) | tailer drain into Kafka (rows/s) | tailer / B0 | tailer peak RSS |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| %s | %d | %.0f | %.0f | %.2f | %.0f MiB |\n", r.Broker, r.RowEvents, r.RawParseRate, r.TailerDrainRate, r.Ratio, r.TailerPeakRSSMB)
	if out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		return os.WriteFile(out, b, 0o644)
	}
	return nil
}

func startTailer(bin, cfgPath, dir string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(filepath.Join(dir, "tailer.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "run", "--role", "tailer", "-c", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, cmd.Start()
}

// waitCheckpoint waits for a checkpoint (containing want, if given).
func waitCheckpoint(ctx context.Context, cl *kgo.Client, bed *testbed.Bed, want *cdc.Position) (*cdc.Position, error) {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if want == nil {
			_ = bed.MySQL.Exec(ctx, "CREATE DATABASE IF NOT EXISTS rs_ping", "CREATE TABLE IF NOT EXISTS rs_ping.p (id INT PRIMARY KEY)", "REPLACE INTO rs_ping.p VALUES (1)")
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		var found *cdc.Position
		fetches.EachRecord(func(r *kgo.Record) {
			var rec struct {
				Checkpoint struct {
					Position cdc.Position `json:"position"`
				} `json:"checkpoint"`
			}
			if json.Unmarshal(r.Value, &rec) == nil {
				p := rec.Checkpoint.Position
				found = &p
			}
		})
		if found != nil {
			if want == nil {
				return found, nil
			}
			if ok, err := found.Contains(*want); err == nil && ok {
				return found, nil
			}
		}
	}
	return nil, fmt.Errorf("no checkpoint reached %v in 10 minutes", want)
}

func rawParse(ctx context.Context, bed *testbed.Bed, start, end testbed.BinlogPosition) error {
	user, pw := bed.MySQL.ReplCredentials()
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: 778, Flavor: "mariadb", Host: bed.MySQL.Host,
		Port: uint16(bed.MySQL.Port), User: user, Password: pw, UseDecimal: true})
	defer syncer.Close()
	st, err := syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Pos})
	if err != nil {
		return err
	}
	file := start.File
	for {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			return err
		}
		if r, ok := ev.Event.(*replication.RotateEvent); ok {
			file = string(r.NextLogName)
		}
		if file == end.File && ev.Header.LogPos >= end.Pos {
			return nil
		}
	}
}
