package main

// The snapshot step (issue 40): a narrow table of millions of rows,
// snapshotted on request (`readside snapshot`, the DBLog chunks of
// cdc/snapshot.go) while the tailer streams an idle binlog. It reports
// the snapshot's rows/s into the topic next to the limit of that stage in
// the same run: min(the raw read of the same table, B1 of the snapshot's
// own records), and, in a second run under `readside run` with a copy
// projection, rows/s from the request until the read table is complete.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/cdc"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// snapshotResult is the snapshot step's numbers.
type snapshotResult struct {
	Rows      int     `json:"rows"`
	ChunkRows int     `json:"chunk_rows"` // readside's source.snapshot.chunk_rows (the default)
	FillS     float64 `json:"fill_s"`
	// RawRead is a plain keyset-chunked SELECT of the whole table from Go
	// with the same driver (rows scanned and discarded), best of 3.
	RawRead      rate      `json:"raw_read"`
	RawReadChunk int       `json:"raw_read_chunk_rows"`
	RawReadRuns  []float64 `json:"raw_read_runs_per_s"`
	// B1 produces a sample of the snapshot's own records again.
	B1        rate `json:"b1_raw_produce"`
	B1Records int  `json:"b1_records"`
	// Snapshot: the tailer alone, from the request to the last snapshot
	// record in the topic (acked: the topic's end offsets); Committed to
	// the checkpoint that records the snapshot done.
	Snapshot   rate    `json:"snapshot_to_topic"`
	CommittedS float64 `json:"snapshot_committed_s"`
	Limit      float64 `json:"limit_per_s"` // min(raw read, B1)
	VsLimit    float64 `json:"snapshot_vs_limit"`
	// ReadTable: `readside run` (tailer and projector in one process),
	// from the request until the copy projection's read table holds every
	// row (applied offsets at the topic's end, then COUNT(*) checked).
	ReadTable     rate    `json:"snapshot_to_read_table"`
	ReadTableRows int     `json:"read_table_rows"`
	ReadTableTopS float64 `json:"read_table_topic_s"` // the same run's snapshot into the topic
}

// snapshotRows is -snapshot-rows (0: the size's default).
var snapshotRows int

const snapshotTable = "snap_items"

// rawReadChunk is the raw read's keyset chunk.
const rawReadChunk = 10_000

func (e *env) runSnapshotStep(ctx context.Context, rows int) (*snapshotResult, error) {
	res := &snapshotResult{Rows: rows, RawReadChunk: rawReadChunk}
	db := e.bed.MySQL.DB()
	table := "`" + e.srcDB + "`." + snapshotTable
	if err := e.bed.MySQL.Exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY, k INT NOT NULL, a BIGINT NOT NULL, b VARCHAR(100) NOT NULL, commit_us BIGINT NOT NULL)"); err != nil {
		return nil, err
	}
	// Filled by INSERT ... SELECT in slices of 500k rows (one statement of
	// millions would be one binlog transaction of hundreds of MiB); rows of
	// narrow_insert's size (~150 bytes).
	t := time.Now()
	const slice = 500_000
	for lo := 0; lo < rows; lo += slice {
		n := min(slice, rows-lo)
		q := fmt.Sprintf("INSERT INTO %s SELECT seq + %d, (seq + %d) %% 1000, seq + %d, REPEAT('x', 100), 1700000000000000 + seq FROM %s", table, lo, lo, lo, seqRows(ctx, db, n))
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("filling %s: %w", table, err)
		}
	}
	res.FillS = time.Since(t).Seconds()
	logf("snapshot: %d rows filled in %.1f s", rows, res.FillS)

	// (a) The raw read.
	e.settle(ctx, "snapshot: the raw read")
	for range 3 {
		r, err := rawRead(ctx, db, table, rows)
		if err != nil {
			return nil, err
		}
		res.RawReadRuns = append(res.RawReadRuns, r.PerS)
		if r.PerS > res.RawRead.PerS {
			res.RawRead = r
		}
	}
	logf("snapshot: raw read %v rows/s", res.RawReadRuns)

	// (b) The tailer alone snapshots the table into its topic.
	prefix := prefixFor("snapshot")
	cfgPath, err := e.snapshotConfig(prefix)
	if err != nil {
		return nil, err
	}
	cfg, _, err := compile(cfgPath)
	if err != nil {
		return nil, err
	}
	res.ChunkRows = cfg.Source.Snapshot.ChunkRows
	topic := event.TopicFor(prefix, e.srcDB, snapshotTable)
	e.settle(ctx, "snapshot: into the topic")
	snap, committedS, err := e.snapshotToTopic(ctx, cfgPath, "tailer", prefix, topic, rows, nil)
	if err != nil {
		return nil, err
	}
	res.Snapshot, res.CommittedS = snap.rate, committedS
	logf("snapshot: %.0f rows/s into the topic", res.Snapshot.PerS)

	// B1: a sample of the snapshot's records produced again.
	res.B1Records = min(rows, 400_000)
	recs, err := e.readTopic(ctx, topic, res.B1Records)
	if err != nil {
		return nil, err
	}
	recFile := filepath.Join(e.dir, prefix+".records")
	if err := benchio.WriteRecords(recFile, recs); err != nil {
		return nil, err
	}
	recs = nil
	b1, err := e.runLimit(ctx, "rawproduce", "-config", cfgPath, "-records", recFile, "-topic", prefix)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(recFile)
	res.B1 = b1.rate
	res.Limit = min(res.RawRead.PerS, res.B1.PerS)
	res.VsLimit = res.Snapshot.PerS / res.Limit

	// (c) `readside run` snapshots it into a copy projection's read table.
	prefix = prefixFor("snapshot_run")
	if cfgPath, err = e.snapshotConfig(prefix); err != nil {
		return nil, err
	}
	_, projs, err := compile(cfgPath)
	if err != nil {
		return nil, err
	}
	proj := projs[0]
	if err := e.createReadTable(ctx, proj); err != nil {
		return nil, err
	}
	e.settle(ctx, "snapshot: into the read table")
	var readTableAt time.Time
	done := func() (bool, error) {
		applied, _, err := e.appliedAll(ctx, proj)
		if err != nil {
			return false, err
		}
		ends, _ := e.topicEnds(ctx, proj)
		if !caughtUpAll(applied, ends) {
			return false, nil
		}
		readTableAt = time.Now()
		return true, nil
	}
	topicRate, _, err := e.snapshotToTopic(ctx, cfgPath, "all", prefix, proj.Topic, rows, done)
	if err != nil {
		return nil, err
	}
	res.ReadTableTopS = topicRate.Seconds
	res.ReadTable = topicRate.rate
	res.ReadTable.Seconds = readTableAt.Sub(topicRate.start).Seconds()
	res.ReadTable.PerS = float64(rows) / res.ReadTable.Seconds
	res.ReadTable.CPUPer1000 = 0
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+e.sinkDB+"`.`"+proj.Table+"`").Scan(&res.ReadTableRows); err != nil {
		return nil, err
	}
	if res.ReadTableRows != rows {
		return nil, fmt.Errorf("the read table %s holds %d rows after the snapshot, the source %d", proj.Table, res.ReadTableRows, rows)
	}
	logf("snapshot: %.0f rows/s until the read table is complete", res.ReadTable.PerS)
	return res, nil
}

// seqRows is 1..n as a derived table: MariaDB's sequence engine where it
// is there, the test bed's digits cross join elsewhere.
func seqRows(ctx context.Context, db *sql.DB, n int) string {
	var one int
	if db.QueryRowContext(ctx, "SELECT seq FROM seq_1_to_1").Scan(&one) == nil {
		return fmt.Sprintf("(SELECT seq FROM seq_1_to_%d) AS seq_rows", n)
	}
	return testbed.Seq(n)
}

// rawRead reads the whole table by keyset chunks and discards the rows.
func rawRead(ctx context.Context, db *sql.DB, table string, want int) (rate, error) {
	var r rate
	r.Load1 = loadavg()
	cpu0 := benchio.SelfCPU()
	start := time.Now()
	last, n := int64(0), 0
	for {
		rows, err := db.QueryContext(ctx, "SELECT id, k, a, b, commit_us FROM "+table+" WHERE id > ? ORDER BY id LIMIT ?", last, rawReadChunk)
		if err != nil {
			return r, err
		}
		vals := make([]sql.RawBytes, 5)
		ptrs := make([]any, 5)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		got := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return r, err
			}
			got++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return r, err
		}
		if got == 0 {
			break
		}
		// The key of the chunk's last row, read from its raw bytes.
		if _, err := fmt.Sscan(string(vals[0]), &last); err != nil {
			return r, err
		}
		n += got
		if got < rawReadChunk {
			break
		}
	}
	if n != want {
		return r, fmt.Errorf("the raw read of %s saw %d rows, want %d", table, n, want)
	}
	r.drained(float64(n), time.Since(start), benchio.SelfCPU()-cpu0)
	return r, nil
}

// snapshotRun is a rate with the moment its request was written.
type snapshotRun struct {
	rate
	start time.Time
}

// snapshotToTopic starts readside in role, requests the snapshot, and
// times it from the request to the topic holding rows records (end
// offsets, less one commit marker per Kafka transaction at most; so the
// moment it has them may be up to rows/commit_every records early) and to
// the checkpoint that records it done. until, when given, is polled after
// that until it reports true.
func (e *env) snapshotToTopic(ctx context.Context, cfgPath, role, prefix, topic string, rows int, until func() (bool, error)) (snapshotRun, float64, error) {
	var r snapshotRun
	r.Load1 = loadavg()
	cfg, _, err := compile(cfgPath)
	if err != nil {
		return r, 0, err
	}
	p, err := startReadside(e.bin, cfgPath, role, cfgPath+"."+role+".log", freeAddr())
	if err != nil {
		return r, 0, err
	}
	defer func() {
		if p != nil {
			p.end()
		}
	}()
	cl, err := checkpointClient(e.bed, prefix)
	if err != nil {
		return r, 0, err
	}
	defer cl.Close()
	if _, err := waitCheckpoint(ctx, cl, e.bed, nil, time.Minute); err != nil {
		return r, 0, err
	}
	cpu0 := p.cpuSeconds()
	r.start = time.Now()
	if err := cdc.RequestSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, e.srcDB+"."+snapshotTable, ""); err != nil {
		return r, 0, err
	}
	var acked, committed time.Time
	var cpuAcked float64
	deadline := time.Now().Add(15 * time.Minute)
	for committed.IsZero() {
		if time.Now().After(deadline) {
			return r, 0, fmt.Errorf("the snapshot of %d rows was not committed within 15 minutes (see %s.%s.log)", rows, cfgPath, role)
		}
		if acked.IsZero() {
			if _, sum := e.endOffsets(ctx, topic); sum >= int64(rows) {
				acked, cpuAcked = time.Now(), p.cpuSeconds()
			}
		}
		// The checkpoint that records the snapshot done is the last one an
		// idle tailer writes: the topic's end offsets, polled first, may
		// only reach rows after it (one poll apart).
		if snapshotCommitted(ctx, cl, 20*time.Millisecond) {
			committed = time.Now()
			if acked.IsZero() {
				acked, cpuAcked = committed, p.cpuSeconds()
			}
		}
	}
	for until != nil {
		ok, err := until()
		if err != nil {
			return r, 0, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return r, 0, fmt.Errorf("the read table was not complete within 15 minutes (see %s.%s.log)", cfgPath, role)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.PeakRSSMiB = p.end()
	p = nil
	r.drained(float64(rows), acked.Sub(r.start), cpuAcked-cpu0)
	return r, committed.Sub(r.start).Seconds(), nil
}

// snapshotCommitted polls the checkpoint topic: true when a checkpoint
// has read a request (last_request) and holds no snapshot queued.
func snapshotCommitted(ctx context.Context, cl *kgo.Client, wait time.Duration) bool {
	pctx, cancel := context.WithTimeout(ctx, wait)
	fetches := cl.PollFetches(pctx)
	cancel()
	done := false
	fetches.EachRecord(func(r *kgo.Record) {
		var rec struct {
			Checkpoint cdc.Checkpoint `json:"checkpoint"`
		}
		if json.Unmarshal(r.Value, &rec) == nil {
			done = rec.Checkpoint.LastRequest > 0 && len(rec.Checkpoint.Snapshots) == 0
		}
	})
	return done
}

func (e *env) snapshotConfig(prefix string) (string, error) {
	e.serverID++
	var b strings.Builder
	fmt.Fprintf(&b, "source:\n  dsn: %q\n  server_id: %d\n  tables: [%s.%s]\n  snapshot:\n    mode: never\n", e.bed.MySQL.ReplDSN(), e.serverID, e.srcDB, snapshotTable)
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  topic_prefix: %s\n  partitions: 6\n", strings.Join(e.bed.Kafka.Brokers(), ", "), prefix)
	fmt.Fprintf(&b, "sinks:\n  reads:\n    dsn: %q\n", e.bed.MySQL.AdminDSN()+e.sinkDB)
	fmt.Fprintf(&b, "projections:\n  %s:\n    from: %s.%s\n    sink: reads\n    table: r_%s\n    key: [id]\n    columns: {id: id, k: k, a: a, b: b, commit_us: commit_us}\n", prefix, e.srcDB, snapshotTable, prefix)
	b.WriteString("log:\n  level: info\n")
	path := filepath.Join(e.dir, prefix+".yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// snapshotMarkdown is the snapshot step's section of latest.md.
func snapshotMarkdown(b *strings.Builder, r *snapshotResult) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "\n## Snapshot (`readside snapshot` of a %d-row narrow table, chunk_rows %d)\n\n", r.Rows, r.ChunkRows)
	fmt.Fprintf(b, "Raw read: a keyset-chunked `SELECT` of the whole table from Go (%d rows a chunk, same driver, rows discarded), best of 3 (%s rows/s). B1: %d of the snapshot's records produced again (best of 3). Snapshot: the tailer alone, from the request row to the topic holding every row (end offsets); committed: to the checkpoint that records it done. Read table: `readside run` with a copy projection, from the request until the read table holds every row.\n\n",
		r.RawReadChunk, joinRates(r.RawReadRuns), r.B1Records)
	b.WriteString("| rows | raw read | B1 produce | **snapshot → topic** | **snapshot / min(raw read, B1)** | committed s | tailer CPU s/1k | tailer peak RSS MiB | **→ read table rows/s** | read table s |\n|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| %d | %.0f | %.0f | **%.0f** | **%.2f** | %.1f | %.3f | %.0f | **%.0f** | %.1f |\n", r.Rows, r.RawRead.PerS, r.B1.PerS, r.Snapshot.PerS, r.VsLimit, r.CommittedS, r.Snapshot.CPUPer1000, r.Snapshot.PeakRSSMiB, r.ReadTable.PerS, r.ReadTable.Seconds)
}

func joinRates(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.0f", r))
	}
	return strings.Join(s, ", ")
}
