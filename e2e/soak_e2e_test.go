package e2e

// Issue 24's acceptance: one `readside run` under a steady write load rides
// through every fault of the broker and the sink in turn, and a DDL that
// breaks one of its three projections stops that one alone; afterwards
// every read table converges and verify says EQUAL.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/readside/readside/e2e/testbed"
)

// The three projections: two of the workload's tables, re-keyed, and one
// of a third table whose column `extra` only the third projects.
const (
	soakAccounts = "accounts_by_seq"
	soakPairs    = "pairs_by_b"
	soakNotes    = "notes_by_account"
)

// soakRig is the daemon between the test bed's MariaDB (the source) and a
// private MariaDB (the sink, frozen and restarted by the test), on the test
// bed's broker, with the writers that load it.
type soakRig struct {
	t     *testing.T
	bed   *testbed.Bed
	sinkS *testbed.MySQL
	p     *opsPipeline // config, log, HTTP endpoint; p.sink is on sinkS
	d     *daemon
	w     *workload
	werr  chan error
	notes *notesWriter
	nerr  chan error
}

func newSoakRig(t *testing.T) *soakRig {
	bed := testbed.Get(t)
	if bed.Kafka.Nodes() == 0 || !bed.MySQL.Private() {
		t.Skip("freezes and restarts the broker and starts a sink server: needs the test bed's own servers")
	}
	ctx := t.Context()
	sinkS, err := testbed.StartMariaDBWith(ctx, filepath.Join(bed.Dir(), "soak-sink"), testbed.MariaDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sinkS.Resume() // a frozen server stops only after its grace
		_ = sinkS.Close()
	})
	r := &soakRig{t: t, bed: bed, sinkS: sinkS}
	p := &opsPipeline{t: t, bed: bed, httpAddr: freeAddr(t)}
	if p.src, err = bed.MySQL.CreateDatabase(ctx, "soak"); err != nil {
		t.Fatal(err)
	}
	if p.sink, err = sinkS.CreateDatabase(ctx, "soak_r"); err != nil {
		t.Fatal(err)
	}
	if err := createWorkloadTables(ctx, bed.MySQL.DB(), p.src); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+p.src+"`.notes (id INT PRIMARY KEY, account INT NOT NULL, label VARCHAR(40) NOT NULL, extra VARCHAR(40) NOT NULL DEFAULT 'x')"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p.dataDir = filepath.Join(dir, "data")
	cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %[1]d
  tables: [%[2]s.accounts, %[2]s.pairs, %[2]s.notes]
  snapshot:
    mode: never
kafka:
  brokers: [%[3]s]
  topic_prefix: soak%[4]d
  partitions: 4
data_dir: %[5]s
sinks:
  reads:
    dsn: "${SINK_DSN}"
projections:
  %[7]s:
    from: %[2]s.accounts
    sink: reads
    key: [seq, id]
    shard_by: seq
    columns: {seq: seq, id: id, owner: owner, balance: balance}
  %[8]s:
    from: %[2]s.pairs
    sink: reads
    key: [b, a]
    columns: {b: b, a: a, seq: seq, v: v}
  %[9]s:
    from: %[2]s.notes
    sink: reads
    key: [account, id]
    columns: {account: account, id: id, label: label, extra: extra}
http:
  listen: %[6]s
`, testbed.NewServerID(), p.src, strings.Join(bed.Kafka.Brokers(), ", "), rand.IntN(1e6), p.dataDir, p.httpAddr,
		soakAccounts, soakPairs, soakNotes)
	p.cfgPath = filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	t.Setenv("SINK_DSN", sinkS.AdminDSN()+p.sink)
	p.logPath = filepath.Join(dir, "readside.log")
	r.p = p
	return r
}

// startLoad starts the writers: the seeded workload on accounts and pairs
// (two writers, a transaction of 1–8 statements every ~400 ms each, about
// 100 rows/s with its multi-row inserts) and the notes writer (about 20
// single-row statements/s).
func (r *soakRig) startLoad() {
	r.w = &workload{db: r.bed.MySQL.DB(), dbName: r.p.src, seed: seedFromEnv(r.t), writers: 2, model: newModel(), pause: 400 * time.Millisecond}
	r.werr = make(chan error, 1)
	go func() { r.werr <- r.w.run(r.t.Context(), 1<<40) }()
	r.notes = &notesWriter{db: r.bed.MySQL.DB(), table: "`" + r.p.src + "`.notes", rng: rand.New(rand.NewPCG(r.w.seed, 24))}
	r.nerr = make(chan error, 1)
	go func() { r.nerr <- r.notes.run(r.t.Context()) }()
}

// stopLoad stops both writers between statements.
func (r *soakRig) stopLoad() {
	r.t.Helper()
	r.w.stop.Store(true)
	r.notes.stop.Store(true)
	for _, c := range []chan error{r.werr, r.nerr} {
		if err := <-c; err != nil {
			r.t.Fatalf("writer: %v", err)
		}
	}
}

// hold lets the load run for d, failing at once if readside exited: it
// must ride through every fault itself, not leave it to a supervisor.
func (r *soakRig) hold(d time.Duration, what string) {
	r.t.Helper()
	select {
	case <-r.d.done:
		r.t.Fatalf("readside exited (%v) %s; log:\n%s", r.d.cmd.ProcessState, what, tail(r.p.logPath))
	case err := <-r.werr:
		r.t.Fatalf("workload ended %s: %v", what, err)
	case err := <-r.nerr:
		r.t.Fatalf("notes writer ended %s: %v", what, err)
	case <-time.After(d):
	}
}

// soakCounts is how far the tailer (change events published) and each
// projection (read-table writes committed) have got.
type soakCounts struct {
	published float64
	applied   map[string]float64
}

func (c soakCounts) String() string {
	return fmt.Sprintf("published %.0f, applied %s %.0f, %s %.0f, %s %.0f", c.published,
		soakAccounts, c.applied[soakAccounts], soakPairs, c.applied[soakPairs], soakNotes, c.applied[soakNotes])
}

func (r *soakRig) counts() soakCounts {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 30*time.Second)
	defer cancel()
	fams := r.p.scrape(ctx)
	c := soakCounts{published: metricSum(fams["readside_source_events_total"], nil), applied: map[string]float64{}}
	for _, name := range []string{soakAccounts, soakPairs, soakNotes} {
		c.applied[name] = metricSum(fams["readside_projection_applied_rows_total"], map[string]string{"projection": name})
	}
	return c
}

// metricSum adds up the samples of fam whose labels include want (0 when
// the family is missing: nothing counted yet).
func metricSum(fam *dto.MetricFamily, want map[string]string) float64 {
	var sum float64
	for _, m := range fam.GetMetric() {
		if hasLabels(m, want) {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// moving waits until the tailer and each of projections have gone past
// from, failing with the one that stood still. The load runs throughout,
// so a stopped count means a stopped tailer or projection.
func (r *soakRig) moving(phase string, from soakCounts, projections ...string) soakCounts {
	r.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r.hold(time.Second, phase)
		c := r.counts()
		var still []string
		if c.published <= from.published {
			still = append(still, "the tailer")
		}
		for _, name := range projections {
			if c.applied[name] <= from.applied[name] {
				still = append(still, "projection "+name)
			}
		}
		if len(still) == 0 {
			return c
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: %s stopped: no progress in 3 minutes under load (then %s; now %s)\nlog:\n%s",
				phase, strings.Join(still, " and "), from, c, tail(r.p.logPath))
		}
	}
}

// fault applies one fault for away under load, undoes it, and checks that
// the daemon never exited and that the tailer and projections move on.
// With tailerOn, the tailer must also publish while the fault lasts (it
// does not depend on the sink).
func (r *soakRig) fault(name string, do func() error, away time.Duration, undo func() error, tailerOn bool, projections ...string) {
	r.t.Helper()
	before := r.counts()
	began := time.Now()
	if err := do(); err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	r.t.Logf("%s (%s)", name, before)
	if tailerOn {
		r.hold(3*time.Second, "while "+name)
		during := r.counts()
		r.hold(away-time.Since(began), "while "+name)
		if c := r.counts(); c.published <= during.published {
			r.t.Fatalf("the tailer stopped while %s: published %.0f events, %s later still %.0f\nlog:\n%s",
				name, during.published, time.Since(began).Round(time.Second), c.published, tail(r.p.logPath))
		}
	} else {
		r.hold(away, "while "+name)
	}
	undone := time.Now()
	if err := undo(); err != nil {
		r.t.Fatalf("%s, undoing it: %v", name, err)
	}
	after := r.counts()
	r.t.Logf("%s: undone %s after it began, in %s (%s)", name, undone.Sub(began).Round(time.Second), time.Since(undone).Round(time.Millisecond), after)
	now := r.moving("after "+name, after, projections...)
	r.t.Logf("%s: all moving again (%s)", name, now)
}

// converge waits until each read table equals its SQL expectation on the
// source.
func (r *soakRig) converge(names ...string) {
	t := r.t
	t.Helper()
	src, sink := "`"+r.p.src+"`.", "`"+r.p.sink+"`."
	notesCols := "account, id, label, extra"
	if r.notes.dropped.Load() {
		notesCols = "account, id, label"
	}
	queries := map[string][2]string{
		soakAccounts: {"SELECT seq, id, owner, balance FROM " + src + "accounts ORDER BY seq, id",
			"SELECT seq, id, owner, balance FROM " + sink + soakAccounts + " ORDER BY seq, id"},
		soakPairs: {"SELECT b, a, seq, v FROM " + src + "pairs ORDER BY b, a",
			"SELECT b, a, seq, v FROM " + sink + soakPairs + " ORDER BY b, a"},
		soakNotes: {"SELECT " + notesCols + " FROM " + src + "notes ORDER BY account, id",
			"SELECT " + notesCols + " FROM " + sink + soakNotes + " ORDER BY account, id"},
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, name := range names {
		q := queries[name]
		for {
			want, got := testbed.RowsText(t, r.bed.MySQL.DB(), q[0]), testbed.RowsText(t, r.sinkS.DB(), q[1])
			if want == got {
				t.Logf("%s equals the source: %d rows", name, strings.Count(want, "\n"))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s differs from the source after 3 minutes (%d rows, want %d)\n%s\nlog:\n%s", name,
					strings.Count(got, "\n"), strings.Count(want, "\n"), rowDiff(got, want, 10), tail(r.p.logPath))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// verify runs `readside verify --projection` for each name and wants
// EQUAL.
func (r *soakRig) verify(names ...string) {
	r.t.Helper()
	for _, name := range names {
		ctx, cancel := context.WithTimeout(r.t.Context(), 3*time.Minute)
		began := time.Now()
		out, err := exec.CommandContext(ctx, readsideBinary(r.t), "verify", "-c", r.p.cfgPath, "--projection", name).CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), name+": EQUAL") {
			r.t.Errorf("readside verify --projection %s: %v, want EQUAL:\n%s", name, err, out)
			continue
		}
		r.t.Logf("readside verify --projection %s: EQUAL (%s)", name, time.Since(began).Round(time.Millisecond))
	}
}

// TestFaultsUnderSteadyLoad: one `readside run` with three projections
// under a steady load of inserts, updates, key moves and deletes, through
// in turn: the broker killed (SIGKILL) and restarted; the broker frozen
// (SIGSTOP) for 30 s; the sink frozen for 30 s; a clean restart of the
// sink; and a source DROP COLUMN of the column only the
// third projection projects. The process never exits; after each fault
// the tailer and the projections apply again (after the DDL, the other two
// and the tailer never stop); once the load stops every read table equals
// the source and verify says EQUAL — the broken projection's after its
// column is removed from the config, `plan --apply` and SIGHUP.
func TestFaultsUnderSteadyLoad(t *testing.T) {
	r := newSoakRig(t)
	bed := r.bed
	brokerPaused, brokerDown, sinkPaused := false, false, false
	t.Cleanup(func() {
		// The broker is the package's: leave it running for the next test.
		if brokerPaused {
			_ = bed.Kafka.Resume(0)
		}
		if brokerDown {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := bed.Kafka.Restart(ctx, 0); err != nil {
				t.Errorf("starting the broker again after a failure: %v", err)
			}
		}
		if sinkPaused {
			_ = r.sinkS.Resume()
		}
	})
	ctx := t.Context()
	r.d = startDaemon(t, r.p.logPath, "run", "-c", r.p.cfgPath)
	r.p.waitReady(2 * time.Minute)
	r.startLoad()
	all := []string{soakAccounts, soakPairs, soakNotes}
	r.moving("at the start", soakCounts{applied: map[string]float64{}}, all...)

	r.fault("broker killed (SIGKILL) for 5 s",
		func() error { brokerDown = true; return bed.Kafka.Kill(0) }, 5*time.Second,
		func() error {
			rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			err := bed.Kafka.Restart(rctx, 0)
			brokerDown = err != nil
			return err
		}, false, all...)
	r.fault("broker frozen (SIGSTOP) for 30 s",
		func() error { brokerPaused = true; return bed.Kafka.Pause(0) }, 30*time.Second,
		func() error { brokerPaused = false; return bed.Kafka.Resume(0) }, false, all...)
	r.fault("sink frozen (SIGSTOP) for 30 s",
		func() error { sinkPaused = true; return r.sinkS.Pause() }, 30*time.Second,
		func() error { sinkPaused = false; return r.sinkS.Resume() }, true, all...)
	r.fault("sink stopped cleanly for 10 s and started again",
		r.sinkS.Stop, 10*time.Second,
		func() error { return r.sinkS.Restart(ctx) }, true, all...)

	r.dropColumn()

	r.hold(3*time.Second, "before the load stopped")
	r.stopLoad()
	t.Logf("load stopped: %d committed row changes on accounts and pairs, %d notes statements", r.w.model.total(), r.notes.ops.Load())
	if !r.d.running() || r.d.starts != 1 {
		t.Fatalf("readside did not ride through the faults (running %v, %d starts); log:\n%s", r.d.running(), r.d.starts, tail(r.p.logPath))
	}
	r.converge(soakAccounts, soakPairs)
	r.verify(soakAccounts, soakPairs)
	r.resumeNotes()
	r.converge(soakNotes)
	r.verify(soakNotes)
	if code := r.d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside exited %d after SIGTERM; log:\n%s", code, tail(r.p.logPath))
	}
}

// dropColumn drops the column only notes_by_account projects: that
// projection stops, and for a while after it the tailer and the other two
// keep applying.
func (r *soakRig) dropColumn() {
	t := r.t
	t.Helper()
	before := r.counts()
	if err := r.notes.drop(t.Context(), "ALTER TABLE "+r.notes.table+" DROP COLUMN extra"); err != nil {
		t.Fatal(err)
	}
	t.Logf("source DROP COLUMN notes.extra (%s)", before)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r.hold(time.Second, "after the DROP COLUMN")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		fams := r.p.scrape(ctx)
		cancel()
		if metricSum(fams["readside_projection_stopped"], map[string]string{"projection": soakNotes}) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not reported stopped (readside_projection_stopped) 2 minutes after the DROP COLUMN of a column it projects\nlog:\n%s", soakNotes, tail(r.p.logPath))
		}
	}
	c := r.counts()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, st, err := (&isolationRig{opsPipeline: r.p}).statusOf(ctx, soakNotes); err == nil {
		t.Logf("%s %s: %s; fix: %s (%s)", soakNotes, st.State, st.StopReason, st.Fix, c)
	} else {
		t.Logf("%s stopped (%s); /status: %v", soakNotes, c, err)
	}
	for i := range 3 {
		c = r.moving(fmt.Sprintf("with %s stopped (%d)", soakNotes, i+1), c, soakAccounts, soakPairs)
	}
	if now := r.counts(); now.applied[soakNotes] != c.applied[soakNotes] {
		t.Logf("note: %s applied %.0f rows while reported stopped", soakNotes, now.applied[soakNotes]-c.applied[soakNotes])
	}
}

// resumeNotes is the user's fix after the DROP COLUMN: the column out of
// the projection's config, `plan --apply` (the read column made nullable),
// SIGHUP.
func (r *soakRig) resumeNotes() {
	t := r.t
	t.Helper()
	b, err := os.ReadFile(r.p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), ", extra: extra}", "}", 1)
	if cfg == string(b) {
		t.Fatal("the config has no extra column to remove")
	}
	if err := os.WriteFile(r.p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", r.p.cfgPath).CombinedOutput()
	if err != nil {
		t.Fatalf("readside plan --apply after removing the dropped column: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ALTER") {
			t.Logf("plan --apply: %s", line)
		}
	}
	reloads := strings.Count(r.p.log(), "SIGHUP: reload done")
	if err := r.d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !testbed.Poll(ctx, 200*time.Millisecond, func() bool { return strings.Count(r.p.log(), "SIGHUP: reload done") > reloads }) {
		t.Fatalf("no reload after SIGHUP; log:\n%s", tail(r.p.logPath))
	}
	if !testbed.Poll(ctx, time.Second, func() bool {
		fams := r.p.scrape(ctx)
		return metricSum(fams["readside_projection_stopped"], map[string]string{"projection": soakNotes}) == 0
	}) {
		t.Fatalf("%s still stopped after the fix and SIGHUP; log:\n%s", soakNotes, tail(r.p.logPath))
	}
}

// notesWriter inserts, edits, re-keys (a new account) and deletes notes
// rows one statement at a time, ~20 a second, setting `extra` until it is
// dropped.
type notesWriter struct {
	db      *sql.DB
	table   string
	rng     *rand.Rand
	mu      sync.Mutex // held per statement, so a DDL runs between two
	dropped atomic.Bool
	stop    atomic.Bool
	ops     atomic.Int64
}

func (n *notesWriter) run(ctx context.Context) error {
	var live []int
	next := 1
	for !n.stop.Load() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		n.mu.Lock()
		var err error
		switch r := n.rng.IntN(100); {
		case len(live) < 20 || r < 40:
			if n.dropped.Load() {
				_, err = n.db.ExecContext(ctx, "INSERT INTO "+n.table+" (id, account, label) VALUES (?, ?, ?)", next, n.rng.IntN(30), fmt.Sprintf("l%d", next))
			} else {
				_, err = n.db.ExecContext(ctx, "INSERT INTO "+n.table+" (id, account, label, extra) VALUES (?, ?, ?, ?)", next, n.rng.IntN(30), fmt.Sprintf("l%d", next), fmt.Sprintf("e%d", next))
			}
			live = append(live, next)
			next++
		case r < 70:
			_, err = n.db.ExecContext(ctx, "UPDATE "+n.table+" SET label = ? WHERE id = ?", fmt.Sprintf("u%d", n.ops.Load()), live[n.rng.IntN(len(live))])
		case r < 85:
			_, err = n.db.ExecContext(ctx, "UPDATE "+n.table+" SET account = ? WHERE id = ?", n.rng.IntN(30), live[n.rng.IntN(len(live))])
		default:
			i := n.rng.IntN(len(live))
			_, err = n.db.ExecContext(ctx, "DELETE FROM "+n.table+" WHERE id = ?", live[i])
			live = append(live[:i], live[i+1:]...)
		}
		n.mu.Unlock()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		n.ops.Add(1)
	}
	return nil
}

// drop runs ddl between two statements and switches the writer to leave
// `extra` out.
func (n *notesWriter) drop(ctx context.Context, ddl string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.db.ExecContext(ctx, ddl); err != nil {
		return err
	}
	n.dropped.Store(true)
	return nil
}
