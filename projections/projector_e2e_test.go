package projections_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

func logger() *slog.Logger {
	if os.Getenv("E2E_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// setup creates a source table chat.messages-like table, a sink database,
// and a config with the messages_by_sender projection re-keyed by sender.
func setup(t *testing.T, bed *testbed.Bed) (cfg config.Config, src, sinkDB string) {
	t.Helper()
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "chat")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err = bed.MySQL.CreateDatabase(ctx, "reads")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf(`CREATE TABLE `+"`%s`"+`.messages (
		id INT PRIMARY KEY, sender_id INT NOT NULL, conversation_id INT, created_at DATETIME(6) NOT NULL,
		body VARCHAR(200) CHARACTER SET utf8mb4, att VARBINARY(16), score DECIMAL(20,4))`, src)); err != nil {
		t.Fatal(err)
	}
	cfg = bed.Config("p", src+".messages")
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"messages_by_sender": {
		From: src + ".messages", Sink: "reads", Key: []string{"sender_id", "created_at", "id"}, ShardBy: "sender_id",
		Columns: map[string]string{"sender_id": "sender_id", "created_at": "created_at", "id": "id",
			"conversation_id": "conversation_id", "body": "body", "att": "att", "score": "score"},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg, src, sinkDB
}

// prepare compiles the projection and creates its read table.
func prepare(t *testing.T, bed *testbed.Bed, cfg config.Config, sinkDB string) (*projections.Projection, *sinks.MySQL) {
	t.Helper()
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	cols, err := p.SourceColumns(t.Context(), bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.Open(t.Context(), bed.MySQL.AdminDSN()+sinkDB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(t.Context(), sinks.DDL(p, cols)); err != nil {
		t.Fatal(err)
	}
	return p, sink
}

// writeMessages runs a seeded workload: inserts, body edits, sender
// changes (each a key move in the read table), deletes and re-inserts of
// deleted ids.
func writeMessages(t *testing.T, bed *testbed.Bed, src string, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	live := liveIDs(t, bed, "`"+src+"`.messages")
	db := bed.MySQL.DB()
	exec := func(q string, args ...any) {
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	table := "`" + src + "`.messages"
	for i := range ops {
		id := 1 + rng.IntN(400)
		switch r := rng.IntN(100); {
		case !live[id]:
			exec("INSERT INTO "+table+" VALUES (?, ?, ?, ?, ?, ?, ?)", id, rng.IntN(20), rng.IntN(50),
				fmt.Sprintf("2026-01-01 00:00:%02d.%06d", rng.IntN(60), rng.IntN(1e6)), fmt.Sprintf("msg %d ✓ '%d'", id, i),
				[]byte{byte(i), 0, 0xff}, fmt.Sprintf("%d.%04d", rng.IntN(1e6), rng.IntN(1e4)))
			live[id] = true
		case r < 40:
			exec("UPDATE "+table+" SET body = ?, score = score + 1 WHERE id = ?", fmt.Sprintf("edit %d", i), id)
		case r < 70:
			exec("UPDATE "+table+" SET sender_id = ? WHERE id = ?", rng.IntN(20), id) // key move
		default:
			exec("DELETE FROM "+table+" WHERE id = ?", id)
			delete(live, id)
		}
	}
}

// liveIDs are the ids a source table holds now, for a workload to go on
// from.
func liveIDs(t *testing.T, bed *testbed.Bed, table string) map[int]bool {
	t.Helper()
	live := map[int]bool{}
	rows, err := bed.MySQL.DB().QueryContext(t.Context(), "SELECT id FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		live[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return live
}

// twoShards is a sink of two shards (-80, 80-), each a database of its
// own named from prefix, and the databases' names.
func twoShards(t *testing.T, bed *testbed.Bed, prefix string) (config.Sink, []string) {
	t.Helper()
	var sink config.Sink
	var dbs []string
	for _, kr := range []string{"-80", "80-"} {
		db, err := bed.MySQL.CreateDatabase(t.Context(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(bed.MySQL.AdminDSN() + db)})
	}
	return sink, dbs
}

const readCols = "sender_id, created_at, id, conversation_id, body, HEX(att), score"

// tableText renders a table's rows in key order, for comparison.
func tableText(t *testing.T, bed *testbed.Bed, table string) string {
	t.Helper()
	return testbed.RowsText(t, bed.MySQL.DB(), "SELECT "+readCols+" FROM "+table+" ORDER BY sender_id, created_at, id")
}

// waitEqual waits until the read table equals the source expectation.
func waitEqual(t *testing.T, bed *testbed.Bed, want, got string) {
	t.Helper()
	var rows int
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		w, g := tableText(t, bed, want), tableText(t, bed, got)
		rows = strings.Count(w, "\n")
		return w == g, fmt.Sprintf("read table %s differs from %s:\nsource:\n%.2000s\nread:\n%.2000s", got, want, w, g)
	})
	t.Logf("read table equals the source: %d rows", rows)
}

// TestMessagesBySender: tailer and projector run while a workload edits,
// re-keys, deletes and re-inserts messages; the projector is stopped and
// restarted midway. The read table ends equal to the SQL expectation.
func TestMessagesBySender(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	p, sink := prepare(t, bed, cfg, sinkDB)
	runTailer(t, bed, cfg)

	runProjector := func() (stop func()) { return startProjector(t, p, sink, cfg.Kafka.Brokers) }
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := runProjector()
	writeMessages(t, bed, src, seed, 1500)
	stop() // a restart resumes from the offsets stored with the rows
	writeMessages(t, bed, src, seed+1, 1500)
	stop = runProjector()
	defer stop()
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkDB+"`.messages_by_sender")
}

// startProjector runs a projector until stop, which reports its error.
func startProjector(t *testing.T, p *projections.Projection, sink projections.Sink, brokers []string) (stop func()) {
	t.Helper()
	return startProjectorWith(t, p, sink, projector.Options{Brokers: brokers})
}

// startProjectors runs a projector for each of ps until stop.
func startProjectors(t *testing.T, ps []*projections.Projection, sink projections.Sink, brokers []string) (stop func()) {
	t.Helper()
	var stops []func()
	for _, p := range ps {
		stops = append(stops, startProjector(t, p, sink, brokers))
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// startProjectorWith is startProjector with options (o.Log: logger()).
func startProjectorWith(t *testing.T, p *projections.Projection, sink projections.Sink, o projector.Options) (stop func()) {
	t.Helper()
	o.Log = logger()
	pr, err := projector.New(p, sink, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- pr.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("projector: %v", err)
		}
	}
}

// TestOutOfOrderAndDuplicates: the same history applied in order, and
// again shuffled across batches with a fifth of it duplicated, gives the
// same table — the one the source implies. No row goes back in version.
func TestOutOfOrderAndDuplicates(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	p, sink := prepare(t, bed, cfg, sinkDB)
	ctx := t.Context()
	tl := runTailer(t, bed, cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	writeMessages(t, bed, src, seed, 2000)
	waitPublished(t, bed, tl)

	// Read the whole history from the topic.
	var count int
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+src+"`.messages").Scan(&count); err != nil {
		t.Fatal(err)
	}
	history := writesOf(t, p, testbed.TopicRecords(t, cfg.Kafka.Brokers, p.Topic))
	t.Logf("history: %d writes", len(history))

	rng := rand.New(rand.NewPCG(seed, 2))
	shuffled := append([]projections.Write{}, history...)
	for _, w := range history {
		if rng.IntN(5) == 0 {
			shuffled = append(shuffled, w)
		}
	}
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for start := 0; start < len(shuffled); {
		n := 1 + rng.IntN(200)
		batch := projections.Coalesce(shuffled[start:min(start+n, len(shuffled))])
		if err := sink.Apply(ctx, p, &projections.Batch{Writes: batch}); err != nil {
			t.Fatal(err)
		}
		start += n
	}
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkDB+"`.messages_by_sender")
}

// runTailer runs a tailer until the test ends and waits until it streams.
func runTailer(t *testing.T, bed *testbed.Bed, cfg config.Config) *cdc.Tailer {
	t.Helper()
	tl, err := cdc.New(cdc.Config{Source: cfg.Source, Kafka: cfg.Kafka, Cuts: cfg.TransactionalSinks()}, cfg.Kafka.Brokers, logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("tailer: %v", err)
		}
	})
	waitTailer(t, bed, cfg)
	return tl
}

// waitPublished waits until tl has committed to Kafka everything the
// source's binlog holds now, so a read of the topics sees every write
// made before the call (a topic that is quiet for a while may only have
// a slow tailer behind it).
func waitPublished(t *testing.T, bed *testbed.Bed, tl *cdc.Tailer) {
	t.Helper()
	end, err := bed.MySQL.CurrentPosition(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := cdc.Position{File: end.File, Pos: end.Pos}
	testbed.Eventually(t, 60*time.Second, func() (bool, string) {
		var at cdc.Position
		if cp := tl.Status().Checkpoint; cp != nil {
			at = cp.Position
			if ok, _ := at.Contains(want); ok { // file and offset: want has no GTID set
				return true, ""
			}
		}
		return false, fmt.Sprintf("the tailer's checkpoint is at %s:%d; the source's binlog ends at %s:%d", at.File, at.Pos, end.File, end.Pos)
	})
}

// waitTailer waits for the tailer's first checkpoint.
func waitTailer(t *testing.T, bed *testbed.Bed, cfg config.Config) {
	t.Helper()
	testbed.WaitForTailer(t, bed.MySQL, cfg.Kafka.Brokers, event.CheckpointTopic(cfg.Kafka.TopicPrefix))
}

// writesOf maps records of p's own topic to p's writes, in record order.
func writesOf(t *testing.T, p *projections.Projection, records []*kgo.Record) []projections.Write {
	t.Helper()
	var out []projections.Write
	for _, r := range records {
		if r.Value == nil {
			continue
		}
		e, err := event.DecodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := p.Writes(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ws...)
	}
	return out
}

// heldSink holds its first Apply until released, to stop a projector with
// a batch in flight.
type heldSink struct {
	projections.Sink
	entered, release chan struct{}
	held             bool
	ctxErr           error // the held Apply's context, once released
}

func (s *heldSink) Apply(ctx context.Context, p *projections.Projection, b *projections.Batch) error {
	if !s.held {
		s.held = true
		close(s.entered)
		<-s.release
		s.ctxErr = ctx.Err()
	}
	return s.Sink.Apply(ctx, p, b)
}

// TestStopLetsTheBatchInFlightCommit: a projector stopped while a batch is
// being applied lets that batch commit before Run returns, rather than
// cutting it off with its statements possibly still committing at the
// server (a rebuild forgets its shadow's offsets right after the stop; a
// late commit left them behind). Run must not return before the batch is
// done, the batch must not see the stop, and its offsets must be stored.
func TestStopLetsTheBatchInFlightCommit(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	p, sink := prepare(t, bed, cfg, sinkDB)
	p.ApplyConcurrency = 1 // one Apply per batch: the first is the held one
	runTailer(t, bed, cfg)
	writeMessages(t, bed, src, rand.Uint64(), 300)

	held := &heldSink{Sink: sink, entered: make(chan struct{}), release: make(chan struct{})}
	pr, err := projector.New(p, held, projector.Options{Brokers: cfg.Kafka.Brokers, Log: logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- pr.Run(ctx) }()
	select {
	case <-held.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no batch reached the sink in 60 s")
	}
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) while its batch was still being applied", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(held.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30 s after its batch was released")
	}
	if held.ctxErr != nil {
		t.Errorf("the batch in flight saw the stop: %v", held.ctxErr)
	}
	offs, err := sink.Offsets(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, parts := range offs {
		for _, next := range parts {
			stored += next
		}
	}
	if stored == 0 {
		t.Error("the batch in flight at the stop committed no offsets")
	}
}

// compileOne validates cfg, compiles its one projection and returns it
// with its read table's DDL planned against the live source.
func compileOne(ctx context.Context, t *testing.T, bed *testbed.Bed, cfg config.Config) (*projections.Projection, []string) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	types, err := ps[0].SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	return ps[0], sinks.DDL(ps[0], types)
}

// openSink opens the sink named reads, closed when the test ends, and
// runs ddl on it.
func openSink(ctx context.Context, t *testing.T, sink config.Sink, ddl []string) *sinks.Sharded {
	t.Helper()
	sk, err := sinks.OpenSharded(ctx, "reads", sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	if err := sk.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	return sk
}
