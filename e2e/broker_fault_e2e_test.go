package e2e

// readside (tailer and projectors in one `readside run`) riding through
// broker faults under a steady write load: the single broker stopped and
// started again here, a node of the three-node cluster killed in
// kafka_cluster_e2e_test.go. Both check the same invariants (brokerFaultPipeline.check).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// brokerFaultPipeline is the workload's two tables (accounts, pairs) on
// the test bed's MariaDB, captured and projected by one `readside run`
// through the Kafka of bed, into read tables on a sink database.
type brokerFaultPipeline struct {
	t       *testing.T
	bed     *testbed.Bed // the test bed's MariaDB, the Kafka under test
	src     string
	sink    string
	prefix  string
	cfgPath string
	logPath string
	d       *daemon
	w       *workload
	werr    chan error
}

// startBrokerFaultPipeline starts readside on bed and waits until its
// tailer has committed a checkpoint.
func startBrokerFaultPipeline(t *testing.T, bed *testbed.Bed) *brokerFaultPipeline {
	t.Helper()
	ctx := t.Context()
	p := &brokerFaultPipeline{t: t, bed: bed, prefix: "bf" + strconv.Itoa(rand.IntN(1e6))}
	var err error
	if p.src, err = bed.MySQL.CreateDatabase(ctx, "bfault"); err != nil {
		t.Fatal(err)
	}
	if p.sink, err = bed.MySQL.CreateDatabase(ctx, "bfault_r"); err != nil {
		t.Fatal(err)
	}
	if err := createWorkloadTables(ctx, bed.MySQL.DB(), p.src); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// accounts_by_seq moves its read row on every update of an account
	// (seq is in its key), as well as on the workload's primary key moves.
	cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %[1]d
  tables: [%[2]s.accounts, %[2]s.pairs]
  snapshot:
    mode: never
kafka:
  brokers: [%[3]s]
  topic_prefix: %[4]s
  partitions: 4
sinks:
  reads:
    dsn: "${SINK_DSN}"
projections:
  accounts_by_seq:
    from: %[2]s.accounts
    sink: reads
    key: [seq, id]
    shard_by: seq
    columns: {seq: seq, id: id, owner: owner, balance: balance}
  pairs_by_b:
    from: %[2]s.pairs
    sink: reads
    key: [b, a]
    columns: {b: b, a: a, seq: seq, v: v}
`, testbed.NewServerID(), p.src, strings.Join(bed.Kafka.Brokers(), ", "), p.prefix)
	p.cfgPath = filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	t.Setenv("SINK_DSN", bed.MySQL.AdminDSN()+p.sink)
	p.logPath = filepath.Join(dir, "readside.log")
	p.d = startDaemon(t, p.logPath, "run", "-c", p.cfgPath)
	waitForCheckpoint(t, bed, p.prefix)
	return p
}

// startLoad starts the seeded workload: two writers, each a transaction
// of 1–8 statements (inserts, updates, deletes, primary key moves,
// multi-row inserts, some rolled back) every ~10 ms.
func (p *brokerFaultPipeline) startLoad() {
	p.w = &workload{db: p.bed.MySQL.DB(), dbName: p.src, seed: seedFromEnv(p.t), writers: 2, model: newModel(), pause: 10 * time.Millisecond}
	p.werr = make(chan error, 1)
	go func() { p.werr <- p.w.run(p.t.Context(), 1<<40) }()
}

// stopLoad stops the writers between transactions.
func (p *brokerFaultPipeline) stopLoad() {
	p.t.Helper()
	p.w.stop.Store(true)
	if err := <-p.werr; err != nil {
		p.t.Fatalf("workload: %v", err)
	}
}

// writeFor lets the load run for d, failing at once if readside exited:
// it must ride through the fault, not leave it to a supervisor.
func (p *brokerFaultPipeline) writeFor(d time.Duration, what string) {
	p.t.Helper()
	select {
	case <-p.d.done:
		p.t.Fatalf("readside exited (%v) %s; log:\n%s", p.d.cmd.ProcessState, what, tail(p.logPath))
	case err := <-p.werr:
		p.t.Fatalf("workload ended early %s: %v", what, err)
	case <-time.After(d):
	}
}

// check waits for everything to arrive and checks, with the load stopped:
// every committed change on the topics exactly once, in commit order per
// key with increasing versions, nothing rolled back; the state rebuilt
// from the topics equals the source; the read tables equal their SQL
// expectation; `readside verify` says EQUAL; readside never exited and
// stops cleanly on SIGTERM.
func (p *brokerFaultPipeline) check() {
	t := p.t
	t.Helper()
	if !p.d.running() || p.d.starts != 1 {
		t.Fatalf("readside did not ride through the fault (running %v, %d starts); log:\n%s", p.d.running(), p.d.starts, tail(p.logPath))
	}
	events := consumeEvents(t, p.bed, p.w.model.total(), 4*time.Minute, p.prefix+"."+p.src+".accounts", p.prefix+"."+p.src+".pairs")
	t.Logf("%d committed row changes, %d events on the topics", p.w.model.total(), len(events))
	checkAgainstModel(t, events, p.w.model)
	checkAgainstSource(t, p.bed, p.src, events)

	db := p.bed.MySQL.DB()
	checks := []struct{ name, want, got string }{
		{"accounts_by_seq",
			"SELECT seq, id, owner, balance FROM `" + p.src + "`.accounts ORDER BY seq, id",
			"SELECT seq, id, owner, balance FROM `" + p.sink + "`.accounts_by_seq ORDER BY seq, id"},
		{"pairs_by_b",
			"SELECT b, a, seq, v FROM `" + p.src + "`.pairs ORDER BY b, a",
			"SELECT b, a, seq, v FROM `" + p.sink + "`.pairs_by_b ORDER BY b, a"},
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, c := range checks {
		for {
			want, got := testbed.RowsText(t, db, c.want), testbed.RowsText(t, db, c.got)
			if want == got {
				t.Logf("%s equals the SQL expectation: %d rows", c.name, strings.Count(want, "\n"))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s differs from the SQL expectation after 3 minutes (%d rows, want %d)\n%s\nlog tail:\n%s", c.name,
					strings.Count(got, "\n"), strings.Count(want, "\n"), rowDiff(got, want, 10), tail(p.logPath))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, readsideBinary(t), "verify", "-c", p.cfgPath).CombinedOutput()
	if err != nil {
		t.Errorf("readside verify: %v\n%s", err, out)
	}
	for _, name := range []string{"accounts_by_seq", "pairs_by_b"} {
		if !strings.Contains(string(out), name+": EQUAL") {
			t.Errorf("readside verify does not say %s: EQUAL:\n%s", name, out)
		}
	}
	if code := p.d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside exited %d after SIGTERM; log:\n%s", code, tail(p.logPath))
	}
}

// TestDaemonThroughBrokerRestart: the single broker is stopped (SIGTERM,
// a clean shutdown) for 15 s in the middle of the load and started again,
// then killed with SIGKILL for 10 s and started again. readside keeps
// running through both (no restart of its own process) and loses,
// duplicates and reorders nothing (brokerFaultPipeline.check).
func TestDaemonThroughBrokerRestart(t *testing.T) {
	bed := testbed.Get(t)
	if bed.Kafka.Nodes() == 0 {
		t.Skip("an external broker cannot be stopped by the test")
	}
	ctx := t.Context()
	down := false
	t.Cleanup(func() {
		// The broker is the package's: leave it running for the next test.
		if down {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := bed.Kafka.Restart(ctx, 0); err != nil {
				t.Errorf("starting the broker again after a failure: %v", err)
			}
		}
	})
	p := startBrokerFaultPipeline(t, bed)
	p.startLoad()
	p.writeFor(5*time.Second, "before the broker stopped")
	for _, fault := range []struct {
		name string
		do   func(int) error
		away time.Duration
	}{
		{"stopped (SIGTERM)", bed.Kafka.Stop, 15 * time.Second},
		{"killed (SIGKILL)", bed.Kafka.Kill, 10 * time.Second},
	} {
		began := time.Now()
		down = true
		if err := fault.do(0); err != nil {
			t.Fatal(err)
		}
		t.Logf("broker %s after %d committed changes (took %s)", fault.name, p.w.model.total(), time.Since(began).Round(time.Millisecond))
		p.writeFor(fault.away, "while the broker was "+fault.name)
		began = time.Now()
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err := bed.Kafka.Restart(rctx, 0)
		cancel()
		if err != nil {
			t.Fatalf("starting the broker again: %v", err)
		}
		down = false
		t.Logf("broker up again in %s, %d committed changes", time.Since(began).Round(time.Millisecond), p.w.model.total())
		p.writeFor(5*time.Second, "after the broker "+fault.name+" came back")
	}
	p.stopLoad()
	p.check()
}
