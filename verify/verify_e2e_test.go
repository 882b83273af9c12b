package verify_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

func logger() *slog.Logger {
	if os.Getenv("E2E_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// shop: customers and orders on the source; orders_by_customer re-keyed
// and sharded by customer over two sink shards, filtered (no drafts), with
// the customer's name and tier joined in.
type shop struct {
	bed    *testbed.Bed
	cfg    config.Config
	src    string
	shards []string
	p      *projections.Projection
	sink   *sinks.Sharded
}

func newShop(t *testing.T, bed *testbed.Bed) *shop {
	t.Helper()
	ctx := t.Context()
	s := &shop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "vshop"); err != nil {
		t.Fatal(err)
	}
	tables, err := testbed.CreateShop(ctx, bed.MySQL, s.src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("v", tables...)
	sink := config.Sink{}
	for _, kr := range []string{"-80", "80-"} {
		db, err := bed.MySQL.CreateDatabase(ctx, "vreads")
		if err != nil {
			t.Fatal(err)
		}
		s.shards = append(s.shards, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(bed.MySQL.AdminDSN() + db)})
	}
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"orders_by_customer": testbed.OrdersByCustomer(s.src, "reads")}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.p = ps[0]
	if s.sink, err = sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.sink.Close() })
	types, err := s.p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.sink.Exec(ctx, sinks.DDL(s.p, types)); err != nil {
		t.Fatal(err)
	}
	return s
}

// load inserts customers and orders in multi-row statements: some orders
// are drafts (filtered out), some refer to customers that do not exist.
func (s *shop) load(t *testing.T, customers, orders int) {
	t.Helper()
	db := s.bed.MySQL.DB()
	tiers := []string{"'free'", "'pro'", "'vip'", "NULL"}
	var vals []string
	for i := 1; i <= customers; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'customer %d ✓', %s)", i, i, tiers[i%4]))
	}
	if _, err := db.ExecContext(t.Context(), "INSERT INTO `"+s.src+"`.customers VALUES "+strings.Join(vals, ",")); err != nil {
		t.Fatal(err)
	}
	statuses := []string{"draft", "new", "paid", "shipped"}
	for start := 1; start <= orders; start += 2000 {
		vals = vals[:0]
		for i := start; i < start+2000 && i <= orders; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, '%s', %d, '2026-03-%02d 10:00:00.%06d')", i, 1+i%(customers+customers/10), statuses[i%4], i*7, 1+i%28, i))
		}
		if _, err := db.ExecContext(t.Context(), "INSERT INTO `"+s.src+"`.orders VALUES "+strings.Join(vals, ",")); err != nil {
			t.Fatal(err)
		}
	}
}

// run starts the tailer and a projector for the test's lifetime; the
// function it returns stops the projector alone (a stalled projection).
func (s *shop) run(t *testing.T) (stopProjector func()) {
	t.Helper()
	tl, err := cdc.New(cdc.Config{Source: s.cfg.Source, Kafka: s.cfg.Kafka, Cuts: s.cfg.TransactionalSinks()}, s.cfg.Kafka.Brokers, logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	pctx, pstop := context.WithCancel(ctx)
	tailerDone, projectorDone := make(chan error, 1), make(chan error, 1)
	go func() { tailerDone <- tl.Run(ctx) }()
	pr, err := projector.New(s.p, s.sink, projector.Options{Brokers: s.cfg.Kafka.Brokers, Log: logger()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { projectorDone <- pr.Run(pctx) }()
	var projectorErr error
	var once sync.Once
	stopProjector = func() {
		once.Do(func() {
			pstop()
			projectorErr = <-projectorDone
		})
	}
	t.Cleanup(func() {
		stop()
		stopProjector()
		for _, err := range []error{<-tailerDone, projectorErr} {
			if err != nil && ctx.Err() == nil {
				t.Errorf("stopped: %v", err)
			}
		}
	})
	s.waitTailer(t)
	return stopProjector
}

// waitTailer waits for the tailer's first checkpoint.
func (s *shop) waitTailer(t *testing.T) {
	t.Helper()
	testbed.WaitForTailer(t, s.bed.MySQL, s.cfg.Kafka.Brokers, event.CheckpointTopic(s.cfg.Kafka.TopicPrefix))
}

// expected and actual are the independent SQL statement of the contract
// (not verify's own code): the LEFT JOIN over the source, and the union of
// the shards.
func (s *shop) expected(t *testing.T) string {
	return rowsText(t, "SELECT o.customer_id, o.id, o.status, o.total_cents, o.created_at, c.name, c.tier FROM `"+s.src+
		"`.orders o LEFT JOIN `"+s.src+"`.customers c ON c.id = o.customer_id WHERE o.status <> 'draft' ORDER BY 1, 2")
}

func (s *shop) actual(t *testing.T) string {
	var parts []string
	for _, db := range s.shards {
		parts = append(parts, "SELECT customer_id, id, status, total_cents, created_at, customer_name, customer_tier FROM `"+db+"`.orders_by_customer")
	}
	return rowsText(t, "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1, 2")
}

func rowsText(t *testing.T, query string) string {
	t.Helper()
	return testbed.RowsText(t, testbed.Get(t).MySQL.DB(), query)
}

func (s *shop) waitConverged(t *testing.T, within time.Duration) {
	t.Helper()
	testbed.Eventually(t, within, func() (bool, string) {
		want, got := s.expected(t), s.actual(t)
		return want == got, fmt.Sprintf("read table not converged: %d rows expected, %d on the sink", strings.Count(want, "\n"), strings.Count(got, "\n"))
	})
}

func (s *shop) verifier(t *testing.T, opts verify.Options) *verify.Verifier {
	src, err := verify.OpenSource(s.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	opts.Ends = projector.Ends(s.cfg.Kafka.Brokers)
	opts.Log = logger()
	return verify.New(s.p, src, s.sink, opts)
}

// home is the shard index a customer's rows belong on.
func (s *shop) home(cid int) int {
	for i, sh := range s.sink.Shards {
		if sh.Range.Contains(keyspace.ID([]byte(strconv.Itoa(cid)))) {
			return i
		}
	}
	t := -1
	return t
}

func (s *shop) shardExec(t *testing.T, shard int, q string, args ...any) {
	t.Helper()
	if _, err := s.sink.Shards[shard].DB().ExecContext(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestVerifyConvergedDriftRepair: a converged projection with a join and
// two shards verifies equal (and the time per million rows is logged);
// drift injected by hand on the sink — a row deleted, a row added, a
// column changed (own and joined), a row moved to the wrong shard — is
// found exactly, and --repair fixes all of it through the tailer and the
// projector.
func TestVerifyConvergedDriftRepair(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed)
	ctx := t.Context()
	s.run(t)
	const customers, orders = 400, 40000
	s.load(t, customers, orders)
	s.waitConverged(t, 3*time.Minute)

	var lines strings.Builder // not a terminal, Every 0: a line per chunk that moved the count
	v := s.verifier(t, verify.Options{ChunkRows: 2000, Settle: 8 * time.Second, StateFile: t.TempDir() + "/state.json", Progress: progress.Line{Out: &lines}})
	rep, err := v.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.Unsettled != 0 || rep.ChunksDiffering != 0 {
		t.Fatalf("converged projection reported drift: %+v", rep)
	}
	// A filtered projection: the rows its where passes are not known
	// before the scan, so no percentage.
	checkScanLines(t, lines.String(), s.p.Name, rep.SourceRows, false)
	if rep.SourceRows != int64(strings.Count(s.expected(t), "\n")) || rep.SinkRows != rep.SourceRows {
		t.Fatalf("compared %d source and %d sink rows, want %d each", rep.SourceRows, rep.SinkRows, strings.Count(s.expected(t), "\n"))
	}
	t.Logf("converged: %d rows (two shards, join, filter) verified equal in %.2fs in %d chunks: %.1fs per million rows",
		rep.SourceRows, rep.Seconds, rep.Chunks, rep.Seconds/float64(rep.SourceRows)*1e6)

	// Resumable: a run stopped midway (context cancelled, as by a crash
	// or SIGTERM) leaves its progress in the state file; the next run
	// continues after the last finished chunk and counts the same rows.
	state := t.TempDir() + "/resume.json"
	slow := s.verifier(t, verify.Options{ChunkRows: 2000, Settle: 8 * time.Second, StateFile: state, MaxRowsPerSecond: 10000})
	cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	if _, err := slow.Run(cctx); err == nil {
		t.Fatal("throttled run finished within 1.5s; want it interrupted")
	}
	cancel()
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no progress file after an interrupted run: %v", err)
	}
	resumed, err := s.verifier(t, verify.Options{ChunkRows: 2000, Settle: 8 * time.Second, StateFile: state}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !resumed.Resumed || resumed.Drift() != 0 || resumed.SourceRows != rep.SourceRows || resumed.Chunks != rep.Chunks {
		t.Fatalf("resumed run: resumed %v, drift %d, %d rows in %d chunks (want %d in %d)", resumed.Resumed, resumed.Drift(), resumed.SourceRows, resumed.Chunks, rep.SourceRows, rep.Chunks)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("progress file left after a finished run: %v", err)
	}

	// Pick rows by their shard. Orders with id%4 == 0 are drafts (not in
	// the read table); customer_id = 1 + id%(customers*1.1).
	cidOf := func(id int) int { return 1 + id%(customers+customers/10) }
	var deleted, changed, joinChanged, moved int
	for id := 101; joinChanged == 0; id++ {
		if id%4 == 0 || cidOf(id) > customers {
			continue
		}
		switch {
		case deleted == 0:
			deleted = id
		case changed == 0:
			changed = id
		default:
			joinChanged = id
		}
	}
	// The misplaced row alone in its chunk (customers 350+ are chunks
	// away from 102..106): its chunk's checksums are equal, only the
	// shard placement check can find it.
	for id := 350; moved == 0; id++ {
		if id%4 != 0 && cidOf(id) == 351 {
			moved = id
		}
	}
	tbl := "orders_by_customer"
	s.shardExec(t, s.home(cidOf(deleted)), "DELETE FROM "+tbl+" WHERE customer_id = ? AND id = ?", cidOf(deleted), deleted)
	extraCid := 3
	s.shardExec(t, s.home(extraCid), "INSERT INTO "+tbl+" (customer_id, id, status, total_cents, created_at, customer_name, customer_tier, _rs_v_join1, _rs_version) VALUES (?, 999999, 'new', 1, '2026-01-01 00:00:00', 'ghost', NULL, 0, 1)", extraCid)
	s.shardExec(t, s.home(cidOf(changed)), "UPDATE "+tbl+" SET total_cents = total_cents + 1 WHERE customer_id = ? AND id = ?", cidOf(changed), changed)
	s.shardExec(t, s.home(cidOf(joinChanged)), "UPDATE "+tbl+" SET customer_name = 'wrong name' WHERE customer_id = ? AND id = ?", cidOf(joinChanged), joinChanged)
	from, to := s.home(cidOf(moved)), 1-s.home(cidOf(moved))
	s.shardExec(t, to, "INSERT INTO `"+s.shards[to]+"`."+tbl+" SELECT * FROM `"+s.shards[from]+"`."+tbl+" WHERE customer_id = ? AND id = ?", cidOf(moved), moved)
	s.shardExec(t, from, "DELETE FROM "+tbl+" WHERE customer_id = ? AND id = ?", cidOf(moved), moved)

	rep, err = v.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("after injecting drift:\n%s", text.String())
	want := map[string]string{
		"missing":   fmt.Sprintf("missing customer_id=%d,id=%d", cidOf(deleted), deleted),
		"extra":     fmt.Sprintf("extra customer_id=%d,id=999999", extraCid),
		"misplaced": fmt.Sprintf("misplaced customer_id=%d,id=%d", cidOf(moved), moved),
	}
	got := map[string][]string{}
	for _, d := range rep.Samples {
		line := fmt.Sprintf("%s customer_id=%s,id=%s", d.Kind, d.Key["customer_id"], d.Key["id"])
		for _, c := range d.Columns {
			line += " " + c.Name
		}
		got[d.Kind] = append(got[d.Kind], line)
	}
	if rep.Missing != 1 || rep.Extra != 1 || rep.Different != 2 || rep.Misplaced != 1 || rep.Unsettled != 0 {
		t.Fatalf("want missing 1, extra 1, different 2, misplaced 1; got %+v", got)
	}
	for kind, line := range want {
		if len(got[kind]) != 1 || got[kind][0] != line {
			t.Errorf("%s: got %v, want %q", kind, got[kind], line)
		}
	}
	wantDiff := []string{fmt.Sprintf("different customer_id=%d,id=%d total_cents", cidOf(changed), changed),
		fmt.Sprintf("different customer_id=%d,id=%d customer_name", cidOf(joinChanged), joinChanged)}
	if strings.Join(got["different"], ";") != strings.Join(wantDiff, ";") && strings.Join(got["different"], ";") != wantDiff[1]+";"+wantDiff[0] {
		t.Errorf("different: got %v, want %v", got["different"], wantDiff)
	}
	if misplaced := rep.Samples; len(misplaced) > 0 {
		for _, d := range misplaced {
			if d.Kind == "misplaced" && d.Shard != s.sink.Shards[to].Range.Text {
				t.Errorf("misplaced copy reported on shard %s, it is on %s", d.Shard, s.sink.Shards[to].Range.Text)
			}
		}
	}

	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, s.cfg.Source.DSN.Reveal(), s.cfg.Source.TLS, s.cfg.Source.Snapshot.SignalDB, s.cfg.Source.ServerID, table, where)
	}
	res, err := v.Repair(ctx, rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair: %+v", *res)
	if res.Remaining != 0 {
		t.Fatalf("repair left %d keys differing", res.Remaining)
	}
	if res.Deleted != 2 || res.Published != 4 || res.ParentKeys != 1 {
		t.Errorf("repair: deleted %d (want 2: the extra row, the misplaced copy), published %d (want 4), parent keys %d (want 1)", res.Deleted, res.Published, res.ParentKeys)
	}
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatal("after repair the read table still differs from the SQL join")
	}
	rep, err = v.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 {
		t.Fatalf("verify after repair: %+v", rep)
	}
}

// TestVerifyLiveLoad: verify while the source takes about 1k row changes a
// second (inserts, updates moving rows between customers and in and out of
// the filter, deletes, customer renames) reports no drift.
func TestVerifyLiveLoad(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed)
	ctx := t.Context()
	s.run(t)
	const customers, orders = 300, 20000
	s.load(t, customers, orders)
	s.waitConverged(t, 3*time.Minute)

	wctx, stopLoad := context.WithCancel(ctx)
	var changed atomic.Int64
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		db := bed.MySQL.DB()
		rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
		statuses := []string{"draft", "new", "paid", "shipped"}
		o, c := "`"+s.src+"`.orders", "`"+s.src+"`.customers"
		tick := time.NewTicker(6 * time.Millisecond) // up to ~160 statements/s of ~7 rows
		defer tick.Stop()
		for wctx.Err() == nil {
			<-tick.C
			id := 1 + rng.IntN(orders+5000)
			var err error
			var res interface{ RowsAffected() (int64, error) }
			switch r := rng.IntN(10); {
			case r < 3:
				res, err = db.ExecContext(wctx, "UPDATE "+o+" SET total_cents = total_cents + 1 WHERE id BETWEEN ? AND ?", id, id+9)
			case r < 5:
				res, err = db.ExecContext(wctx, "UPDATE "+o+" SET status = ? WHERE id BETWEEN ? AND ?", statuses[rng.IntN(4)], id, id+9)
			case r < 7:
				res, err = db.ExecContext(wctx, "UPDATE "+o+" SET customer_id = ? WHERE id BETWEEN ? AND ?", 1+rng.IntN(customers), id, id+9)
			case r < 8:
				res, err = db.ExecContext(wctx, "DELETE FROM "+o+" WHERE id BETWEEN ? AND ?", id, id+4)
			case r < 9:
				var vals []string
				for i := range 10 {
					vals = append(vals, fmt.Sprintf("(%d, %d, 'new', 5, NOW(6))", id+i, 1+rng.IntN(customers)))
				}
				res, err = db.ExecContext(wctx, "INSERT INTO "+o+" VALUES "+strings.Join(vals, ",")+" ON DUPLICATE KEY UPDATE total_cents = total_cents + 1")
			default:
				cid := 1 + rng.IntN(customers)
				res, err = db.ExecContext(wctx, "UPDATE "+c+" SET name = CONCAT('renamed ', ?) WHERE id BETWEEN ? AND ?", rng.IntN(1000), cid, cid+2)
			}
			if err != nil {
				if wctx.Err() == nil {
					t.Errorf("load: %v", err)
				}
				return
			}
			n, _ := res.RowsAffected()
			changed.Add(n)
		}
	}()
	time.Sleep(3 * time.Second) // the load is under way and the projection lags behind it
	// Throttled so the scan overlaps the load for several seconds.
	v := s.verifier(t, verify.Options{ChunkRows: 1000, Settle: 30 * time.Second, MaxRowsPerSecond: 2000})
	start := time.Now()
	before := changed.Load()
	rep, err := v.Run(ctx)
	elapsed := time.Since(start)
	rate := float64(changed.Load()-before) / elapsed.Seconds()
	stopLoad()
	<-loadDone
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("verify during a live load of %.0f source rows changed/s (%d changes during %.1fs):\n%s", rate, changed.Load()-before, elapsed.Seconds(), text.String())
	if rep.Drift() != 0 {
		t.Fatalf("false drift under live load: %+v", rep.Samples)
	}
	if rep.ChunksDiffering == 0 {
		t.Log("note: no chunk differed during the load (the projection kept up between checksums)")
	}
	s.waitConverged(t, 2*time.Minute)
}

// TestVerifySchedule: the daemon's scheduled mode (verify.every) exports
// the drift and the last run time per projection; a row added by hand on
// the sink shows as one drifting row.
func TestVerifySchedule(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed)
	s.run(t)
	s.load(t, 50, 2000)
	s.waitConverged(t, 2*time.Minute)
	sched := verify.Scheduled{Every: 300 * time.Millisecond, Source: s.cfg.Source,
		Ends: projector.Ends(s.cfg.Kafka.ClientBrokers()), DataDir: t.TempDir(), Sinks: s.cfg.Sinks}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- verify.Schedule(ctx, sched, []*projections.Projection{s.p}, reg, logger()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("schedule: %v", err)
		}
	}()
	gauge := func(name string) (float64, bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == "orders_by_customer" {
						return m.GetGauge().GetValue(), true
					}
				}
			}
		}
		return 0, false
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		testbed.Eventually(t, 90*time.Second, func() (bool, string) { return ok(), "no " + what })
	}
	waitFor("first scheduled run", func() bool { v, ok := gauge("readside_verify_last_run_timestamp_seconds"); return ok && v > 0 })
	if v, _ := gauge("readside_verify_drift_rows"); v != 0 {
		t.Fatalf("readside_verify_drift_rows = %v on a converged projection", v)
	}
	s.shardExec(t, s.home(7), "INSERT INTO orders_by_customer (customer_id, id, status, total_cents, created_at, _rs_version) VALUES (7, 888888, 'new', 1, '2026-01-01 00:00:00', 1)")
	waitFor("drift of one row", func() bool { v, _ := gauge("readside_verify_drift_rows"); return v == 1 })
}

// TestVerifyBehindStalledProjection: a projection that stopped applying
// while its source moved on is not reported EQUAL: the rows it has not
// applied differ the same way on every re-check while it never catches
// up with its topics, so verify says BEHIND (Behind, not Equal), and
// counts no drift.
func TestVerifyBehindStalledProjection(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed)
	stopProjector := s.run(t)
	s.load(t, 20, 400)
	s.waitConverged(t, 3*time.Minute)
	stopProjector()
	before := s.published(t)
	db := bed.MySQL.DB()
	if _, err := db.ExecContext(t.Context(), "UPDATE `"+s.src+"`.orders SET total_cents = total_cents + 1 WHERE id <= 40 AND status <> 'draft'"); err != nil {
		t.Fatal(err)
	}
	// The tailer published the 30 updates the stalled projector will not
	// apply (else the projector would look caught up with its topics).
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		n := s.published(t)
		return n >= before+30, fmt.Sprintf("%d of 30 updates on the orders topic", n-before)
	})

	rep, err := s.verifier(t, verify.Options{ChunkRows: 100, Settle: 4 * time.Second, StateFile: t.TempDir() + "/state.json"}).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	if rep.Behind == 0 || rep.Equal() || rep.Drift() != 0 || !strings.Contains(text.String(), ": BEHIND") {
		t.Fatalf("a stalled projection with 30 unapplied updates: want BEHIND (behind > 0, no drift, not equal); got behind %d, drift %d, unsettled %d, equal %v:\n%s",
			rep.Behind, rep.Drift(), rep.Unsettled, rep.Equal(), text.String())
	}
	t.Logf("stalled projection: %d row(s) behind\n%s", rep.Behind, text.String())
}

// published is the sum of the end offsets of the orders topic's
// partitions (commit markers included).
func (s *shop) published(t *testing.T) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Kafka.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), s.p.Topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// checkScanLines: the scan's progress on a writer that is no terminal is
// timestamped lines, no carriage return, more than the final one, the
// rate on them once measurable, and the final one with every row scanned;
// with an estimate (pct) a percentage under 100 while the scan goes and
// 100 on the final one, else none.
func checkScanLines(t *testing.T, out, name string, rows int64, pct bool) {
	t.Helper()
	if strings.Contains(out, "\r") {
		t.Errorf("a carriage return in progress written to no terminal:\n%s", out)
	}
	line := regexp.MustCompile(`^20\d\d-\d\d-\d\dT\S+ ` + regexp.QuoteMeta(name) + `: (\d+) rows( \((~\d+|100)%\))?(, \d+ rows/s)?, 0 chunks differ, 0 keys to re-check$`)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	rated := false
	for i, l := range got {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("progress line %q is not a timestamped scan line", l)
			continue
		}
		rated = rated || m[4] != ""
		switch final := i == len(got)-1; {
		case !pct && m[2] != "":
			t.Errorf("progress line %q has a percentage, of no estimate", l)
		case pct && final != (m[3] == "100"):
			t.Errorf("progress line %d of %d says %s%%: want ~0–99%% while the scan goes, 100%% on the final one", i+1, len(got), m[3])
		}
	}
	if !rated {
		t.Errorf("no progress line has a rate:\n%s", out)
	}
	if len(got) < 2 {
		t.Errorf("%d progress lines, want lines as the scan goes and the final one:\n%s", len(got), out)
	}
	if m := line.FindStringSubmatch(got[len(got)-1]); m == nil || m[1] != fmt.Sprint(rows) {
		t.Errorf("the last progress line does not count every row scanned (%d): %q", rows, got[len(got)-1])
	}
}
