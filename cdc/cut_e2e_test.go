package cdc

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestCheckpointCut: with a transactional sink in the config, every
// checkpoint names a cut of the table topics that a consistent applier
// can apply (docs/design/consistent-sinks.md): (a) per partition it only
// moves forward and always names every partition; (b) it holds whole
// source transactions: every transaction has all its records below the
// cut in their partitions, or none; (c) the last one covers exactly what
// the topics hold. A workload of multi-table, multi-row transactions runs
// across a stop and start of the tailer, with the checkpoint in the
// events' transaction and committed alone (the embedded broker's way).
// CUT_SEED replays a workload. The embedded broker's crash between the
// two commits is TestCheckpointCutAfterOrphans's.
func TestCheckpointCut(t *testing.T) {
	bed := testbed.Get(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CUT_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("CUT_SEED=%d", seed)
	for _, c := range []struct {
		name     string
		embedded bool
	}{{"in_txn", false}, {"alone", true}} {
		t.Run(c.name, func(t *testing.T) { testCheckpointCut(t, bed, rand.New(rand.NewPCG(seed, 42)), c.embedded) })
	}
}

func testCheckpointCut(t *testing.T, bed *testbed.Bed, rng *rand.Rand, embedded bool) {
	cfg, w, topics := cutSetup(t, bed, rng)
	var opts []Option
	if embedded {
		opts = append(opts, EmbeddedBroker())
	}
	stop := startTailer(t, cfg, opts...)
	waitForTailer(t, bed, cfg)
	w.run(t, 100)
	// Stopped and started again while the workload runs.
	wrote := make(chan error, 1)
	go func() { wrote <- w.runErr(t.Context(), 200) }()
	time.Sleep(300 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("tailer: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	stop = startTailer(t, cfg, opts...)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	w.run(t, 50)
	waitCaughtUp(t, cfg, w.mark(t))
	if err := stop(); err != nil {
		t.Fatalf("tailer: %v", err)
	}
	checkCuts(t, cfg, topics, w)
}

// cutSetup creates three tables and a config capturing them for a
// transactional sink, and a workload over them.
func cutSetup(t *testing.T, bed *testbed.Bed, rng *rand.Rand) (config.Config, *cutWorkload, []string) {
	t.Helper()
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	tables := []string{"a", "b", "c"}
	var names, topics []string
	for _, tbl := range tables {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.`%s` (id INT PRIMARY KEY, n INT)", db, tbl)); err != nil {
			t.Fatal(err)
		}
		names = append(names, db+"."+tbl)
	}
	cfg := tailerConfig(t, bed, names...)
	for _, tbl := range tables {
		topics = append(topics, event.TopicFor(cfg.Kafka.TopicPrefix, db, tbl))
	}
	cfg.Kafka.CommitEvery = 25 // a Kafka transaction of one to a few source transactions
	cfg.Sinks = map[string]config.Sink{"read": {DSN: config.Secret(bed.MySQL.AdminDSN()), Consistency: config.ConsistencyTransaction}}
	return cfg, &cutWorkload{db: bed.MySQL.DB(), schema: db, tables: tables, rng: rng}, topics
}

// checkCuts reads every checkpoint and every table record once the
// tailer stopped and checks (a), (b) and (c) of TestCheckpointCut.
func checkCuts(t *testing.T, cfg config.Config, topics []string, w *cutWorkload) []cutRecord {
	t.Helper()
	cuts := readCuts(t, cfg)
	last := cuts[len(cuts)-1]
	recs := readCutRecords(t, cfg.Kafka.Brokers, topics, last.Published)
	checkCutsMonotone(t, cuts, topics, cfg.Kafka.Partitions)
	checkCutsWhole(t, cuts, recs)
	checkLastCut(t, last, recs)
	if last.Transactions < uint64(w.txns) {
		t.Errorf("the last checkpoint counts %d source transactions, the workload committed %d: the count was not carried across restarts", last.Transactions, w.txns)
	}
	t.Logf("%d checkpoints, %d records, %d source transactions, %d records published again after a restart", len(cuts), len(recs), w.txns, republished(recs))
	return recs
}

// cutWorkload commits source transactions of several statements over
// several tables, each statement changing one or more rows.
type cutWorkload struct {
	db     *sql.DB
	schema string
	tables []string
	rng    *rand.Rand
	txns   int
}

func (w *cutWorkload) run(t *testing.T, n int) {
	t.Helper()
	if err := w.runErr(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func (w *cutWorkload) runErr(ctx context.Context, n int) error {
	for range n {
		if err := w.txn(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (w *cutWorkload) txn(ctx context.Context) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	first := w.rng.IntN(len(w.tables))
	for i := range 2 + w.rng.IntN(4) {
		tbl := w.tables[(first+i)%len(w.tables)] // the first two on two tables
		if i >= 2 {
			tbl = w.tables[w.rng.IntN(len(w.tables))]
		}
		id := w.rng.IntN(40)
		op := w.rng.IntN(3)
		if i == 0 {
			op = 0 // a change for sure: a transaction that changes nothing is not in the binlog
		}
		var q string
		switch op {
		case 0:
			q = fmt.Sprintf("INSERT INTO `%s`.`%s` VALUES (%d, 1), (%d, 1) ON DUPLICATE KEY UPDATE n = n + 1", w.schema, tbl, id, id+1)
		case 1:
			q = fmt.Sprintf("UPDATE `%s`.`%s` SET n = n + 1 WHERE id BETWEEN %d AND %d", w.schema, tbl, id, id+4)
		default:
			q = fmt.Sprintf("DELETE FROM `%s`.`%s` WHERE id = %d", w.schema, tbl, id)
		}
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	w.txns++
	return nil
}

// mark commits one more change and returns its GTID.
func (w *cutWorkload) mark(t *testing.T) string {
	t.Helper()
	conn, err := w.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), fmt.Sprintf("REPLACE INTO `%s`.`%s` VALUES (1000, 1)", w.schema, w.tables[0])); err != nil {
		t.Fatal(err)
	}
	w.txns++
	var gtid string
	if err := conn.QueryRowContext(t.Context(), "SELECT @@last_gtid").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	return gtid
}

// waitCaughtUp waits until the tailer's committed checkpoint covers gtid.
func waitCaughtUp(t *testing.T, cfg config.Config, gtid string) {
	t.Helper()
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		cp, found, err := ReadCheckpoint(t.Context(), cfg.Kafka.Brokers, event.CheckpointTopic(cfg.Kafka.TopicPrefix), cfg.TransactionalID())
		if err != nil || !found {
			return false, fmt.Sprintf("no checkpoint yet (%v)", err)
		}
		ok, err := cp.Position.Contains(Position{Flavor: cp.Position.Flavor, GTID: gtid})
		return ok && err == nil, fmt.Sprintf("checkpoint at %s, waiting for %s (%v)", cp.Position, gtid, err)
	})
}

// readCuts reads every committed checkpoint of the tailer, oldest first,
// as a reader does (event.Cut).
func readCuts(t *testing.T, cfg config.Config) []event.Cut {
	t.Helper()
	topic := event.CheckpointTopic(cfg.Kafka.TopicPrefix)
	want, found, err := ReadCheckpoint(t.Context(), cfg.Kafka.Brokers, topic, cfg.TransactionalID())
	if err != nil || !found {
		t.Fatalf("reading the last checkpoint: found %v, %v", found, err)
	}
	var cuts []event.Cut
	pollAll(t, cfg.Kafka.Brokers, []string{topic}, func(r *kgo.Record) {
		if string(r.Key) != cfg.TransactionalID() {
			return
		}
		c, err := event.DecodeCut(r.Value)
		if err != nil {
			t.Fatalf("checkpoint at offset %d: %v", r.Offset, err)
		}
		cuts = append(cuts, c)
	}, func() (bool, string) {
		return len(cuts) > 0 && cuts[len(cuts)-1].WrittenAt.Equal(want.WrittenAt) && cuts[len(cuts)-1].Position.GTID == want.Position.GTID,
			fmt.Sprintf("read %d checkpoints, not yet the last one (%s)", len(cuts), want.Position)
	})
	return cuts
}

// cutRecord is a table record: where it is and the source transaction
// its event belongs to.
type cutRecord struct {
	topic  string
	part   int32
	offset int64
	gtid   string
	// version is the event's (0 for a tombstone): a copy published
	// again has the same.
	version uint64
}

// readCutRecords reads the table topics until every partition reached
// the cut end, and a little longer to see anything past it.
func readCutRecords(t *testing.T, brokers []string, topics []string, end event.Offsets) []cutRecord {
	t.Helper()
	var recs []cutRecord
	seen := event.Offsets{}
	lastGTID := map[string]string{} // topic/partition/key -> the GTID of its last event (for its tombstone)
	pollAll(t, brokers, topics, func(r *kgo.Record) {
		seen.Set(r.Topic, r.Partition, r.Offset+1)
		where := fmt.Sprintf("%s/%d/%s", r.Topic, r.Partition, r.Key)
		gtid, version := lastGTID[where], uint64(0) // a tombstone follows its delete
		if r.Value != nil {
			var e struct {
				Version uint64 `json:"version"`
				Source  struct {
					GTID string `json:"gtid"`
				} `json:"source"`
			}
			if err := json.Unmarshal(r.Value, &e); err != nil || e.Source.GTID == "" {
				t.Fatalf("record %s@%d has no source GTID (%v): %s", where, r.Offset, err, r.Value)
			}
			gtid, version = e.Source.GTID, e.Version
			lastGTID[where] = gtid
		}
		recs = append(recs, cutRecord{r.Topic, r.Partition, r.Offset, gtid, version})
	}, func() (bool, string) {
		for topic, parts := range end {
			for p, off := range parts {
				if off > 0 && seen[topic][p] < off {
					return false, fmt.Sprintf("%s/%d read up to %d of %d", topic, p, seen[topic][p], off)
				}
			}
		}
		return true, ""
	})
	return recs
}

// pollAll reads topics read-committed from the start until done, then a
// second more.
func pollAll(t *testing.T, brokers []string, topics []string, each func(*kgo.Record), done func() (bool, string)) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(60 * time.Second)
	var extra time.Time
	for extra.IsZero() || time.Now().Before(extra) {
		if time.Now().After(deadline) {
			_, why := done()
			adm := kadm.NewClient(cl)
			hwm, _ := adm.ListEndOffsets(t.Context(), topics...)
			lso, _ := adm.ListCommittedOffsets(t.Context(), topics...)
			var ends []string
			hwm.Each(func(o kadm.ListedOffset) {
				l, _ := lso.Lookup(o.Topic, o.Partition)
				ends = append(ends, fmt.Sprintf("%s/%d: high watermark %d, last stable offset %d", o.Topic, o.Partition, o.Offset, l.Offset))
			})
			t.Fatalf("reading %v: not done after 60s: %s; %v", topics, why, ends)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				t.Logf("fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fetches.EachRecord(each)
		if ok, _ := done(); extra.IsZero() && ok {
			extra = time.Now().Add(time.Second)
		}
	}
}

// checkCutsMonotone: (a) every cut names every partition of every table
// topic, no partition's offset goes back from one checkpoint to the next,
// and the source time and transaction count do not go back either.
func checkCutsMonotone(t *testing.T, cuts []event.Cut, topics []string, partitions int32) {
	t.Helper()
	var prev event.Cut
	for i, c := range cuts {
		if c.Published == nil {
			t.Errorf("checkpoint %d carries no cut", i)
			continue
		}
		for _, topic := range topics {
			for p := range partitions {
				off, ok := c.Published[topic][p]
				if !ok {
					t.Errorf("checkpoint %d does not name %s/%d: %v", i, topic, p, c.Published)
				}
				if before := prev.Published[topic][p]; off < before {
					t.Errorf("checkpoint %d: %s/%d went back from %d to %d", i, topic, p, before, off)
				}
			}
		}
		if c.Transactions < prev.Transactions || c.SourceTS < prev.SourceTS {
			t.Errorf("checkpoint %d: transactions %d, source_ts %d after %d, %d", i, c.Transactions, c.SourceTS, prev.Transactions, prev.SourceTS)
		}
		prev = c
	}
}

// checkCutsWhole: (b) every cut holds each source transaction's records
// (all their copies, after a restart republished some) all or none.
func checkCutsWhole(t *testing.T, cuts []event.Cut, recs []cutRecord) {
	t.Helper()
	byTxn := map[string][]cutRecord{}
	for _, r := range recs {
		byTxn[r.gtid] = append(byTxn[r.gtid], r)
	}
	bad := 0
	for i, c := range cuts {
		for gtid, rs := range byTxn {
			below := 0
			for _, r := range rs {
				if r.offset < c.Published[r.topic][r.part] {
					below++
				}
			}
			if below != 0 && below != len(rs) && bad < 5 {
				bad++
				t.Errorf("checkpoint %d (%s) cuts source transaction %s: %d of its %d records below the cut %v; records %v", i, c.Position.GTID, gtid, below, len(rs), c.Published, rs)
			}
		}
	}
}

// checkLastCut: (c) the last checkpoint covers every record the topics
// hold.
func checkLastCut(t *testing.T, last event.Cut, recs []cutRecord) {
	t.Helper()
	for _, r := range recs {
		if r.offset >= last.Published[r.topic][r.part] {
			t.Errorf("record %s/%d@%d (%s) is past the last checkpoint's cut %d", r.topic, r.part, r.offset, r.gtid, last.Published[r.topic][r.part])
		}
	}
}

// republished counts the events seen twice: copies published again from
// a checkpoint.
func republished(recs []cutRecord) int {
	seen := map[uint64]bool{}
	n := 0
	for _, r := range recs {
		if r.version != 0 && seen[r.version] {
			n++
		}
		seen[r.version] = true
	}
	return n
}
