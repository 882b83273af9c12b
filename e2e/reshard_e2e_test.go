package e2e

// readside reshard end to end: the chat projection moved from two shards
// (-80, 80-) to three (-40, 40-c0, c0-: 40-80 moves to the server of 80-,
// c0- to a server of its own) on three real MariaDB sink servers and the
// real broker, while the source takes writes and `readside run` applies
// the projection and follows the routing generation; the reshard is
// SIGKILLed while filling, with its fence held and between two servers'
// cutovers, and the reruns finish it.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/internal/testsync"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// reshardBed is the chat source, three sink servers and the config.
type reshardBed struct {
	t       *testing.T
	bed     *testbed.Bed
	src     string
	servers [3]*testbed.MySQL
	dbs     [3]string
	cfgPath string
	cfg     config.Config
	dir     string
}

func newReshardBed(t *testing.T, name string, more ...string) *reshardBed {
	t.Helper()
	bed := testbed.Get(t)
	ctx := t.Context()
	rb := &reshardBed{t: t, bed: bed, dir: t.TempDir()}
	var err error
	if rb.src, err = bed.MySQL.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	table, err := testbed.CreateChat(ctx, bed.MySQL, rb.src)
	if err != nil {
		t.Fatal(err)
	}
	rb.servers[0] = bed.MySQL
	for i := 1; i < 3; i++ {
		rb.servers[i] = sinkServer(t, i-1)
	}
	for i, m := range rb.servers {
		if rb.dbs[i], err = m.CreateDatabase(ctx, name+"_r"); err != nil {
			t.Fatal(err)
		}
	}
	dsn := func(i int) string { return rb.servers[i].AdminDSN() + rb.dbs[i] }
	cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%s]
kafka:
  brokers: [%s]
  topic_prefix: rs%d
  partitions: 4
data_dir: %s
http:
  listen: %s
sinks:
  reads:
    shards:
      - {keyrange: "-80", dsn: %q}
      - {keyrange: "80-", dsn: %q}
  reads3:
    shards:
      - {keyrange: "-40", dsn: %q}
      - {keyrange: "40-c0", dsn: %q}
      - {keyrange: "c0-", dsn: %q}
projections:
%s`, bed.MySQL.ReplDSN(), testbed.NewServerID(), table, strings.Join(bed.Kafka.Brokers(), ", "), rand.IntN(1e6),
		filepath.Join(rb.dir, "data"), freeAddr(t), dsn(0), dsn(1), dsn(0), dsn(1), dsn(2), testbed.ChatProjectionYAML(rb.src)+moreProjections(rb.src, more))
	rb.cfgPath = filepath.Join(rb.dir, "readside.yaml")
	if err := os.WriteFile(rb.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if rb.cfg, err = config.Load(rb.cfgPath, nil); err != nil {
		t.Fatal(err)
	}
	return rb
}

// moreProjections are copies of the chat projection under other names.
func moreProjections(src string, names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(strings.Replace(testbed.ChatProjectionYAML(src), "messages_by_sender:", n+":", 1))
	}
	return b.String()
}

func (rb *reshardBed) projection(name ...string) *projections.Projection {
	rb.t.Helper()
	ps, err := projections.Compile(rb.cfg)
	if err != nil {
		rb.t.Fatal(err)
	}
	want := "messages_by_sender"
	if len(name) > 0 {
		want = name[0]
	}
	for _, p := range ps {
		if p.Name == want {
			return p
		}
	}
	rb.t.Fatalf("no projection %s", want)
	return nil
}

// write keeps a seeded workload of inserts, edits, sender moves and
// deletes going on a few thousand rows until ctx ends.
func (rb *reshardBed) write(ctx context.Context, rng *rand.Rand, first int) error {
	table := "`" + rb.src + "`.messages"
	db := rb.bed.MySQL.DB()
	live := map[int]bool{}
	for i := 0; ctx.Err() == nil; i++ {
		id := 1 + rng.IntN(4000)
		var err error
		switch r := rng.IntN(100); {
		case !live[id] || i < first:
			_, err = db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE body = VALUES(body)", id, rng.IntN(300),
				fmt.Sprintf("2026-01-01 00:%02d:%02d.%06d", rng.IntN(60), rng.IntN(60), rng.IntN(1e6)), fmt.Sprintf("m%d", i))
			live[id] = true
		case r < 40:
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET body = ? WHERE id = ?", fmt.Sprintf("e%d", i), id)
		case r < 75:
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET sender_id = ? WHERE id = ?", rng.IntN(300), id)
		default:
			_, err = db.ExecContext(ctx, "DELETE FROM "+table+" WHERE id = ?", id)
			delete(live, id)
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		if i >= first {
			time.Sleep(2 * time.Millisecond) // live traffic, not a bulk load
		}
	}
	return nil
}

// insertMessages inserts messages 1..n at once (seeded senders and times).
func (rb *reshardBed) insertMessages(n int, seed uint64) {
	rb.t.Helper()
	rng := rand.New(rand.NewPCG(seedFromEnv(rb.t), seed))
	var values []string
	for id := 1; id <= n; id++ {
		values = append(values, fmt.Sprintf("(%d, %d, '2026-01-01 00:%02d:%02d.%06d', 'm%d')", id, rng.IntN(300), rng.IntN(60), rng.IntN(60), rng.IntN(1e6), id))
	}
	if err := rb.bed.MySQL.Exec(rb.t.Context(), "INSERT INTO `"+rb.src+"`.messages VALUES "+strings.Join(values, ", ")); err != nil {
		rb.t.Fatal(err)
	}
}

// readRows waits until the read table holds want rows where cond, summed
// over databases dbs[i] on servers servers[i].
func (rb *reshardBed) readRows(servers []int, dbs []string, cond string, want int, logPath string) {
	rb.t.Helper()
	ctx := rb.t.Context()
	testbed.Eventually(rb.t, 90*time.Second, func() (bool, string) {
		n := 0
		for i, srv := range servers {
			var k int
			if err := rb.servers[srv].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+dbs[i]+"`.messages_by_sender WHERE "+cond).Scan(&k); err != nil {
				return false, err.Error()
			}
			n += k
		}
		return n == want, fmt.Sprintf("%d rows where %s in %v, want %d; log:\n%s", n, cond, dbs, want, tail(logPath))
	})
}

// reshardRun is one `readside reshard` process.
type reshardRun struct {
	cmd  *exec.Cmd
	out  *testsync.Buffer
	done chan struct{}
}

func (rb *reshardBed) startReshard(pause string, args ...string) *reshardRun {
	rb.t.Helper()
	return rb.startReshardOf("messages_by_sender", pause, args...)
}

func (rb *reshardBed) startReshardOf(projection, pause string, args ...string) *reshardRun {
	rb.t.Helper()
	r := &reshardRun{out: &testsync.Buffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(readsideBinary(rb.t), append([]string{"reshard", "-c", rb.cfgPath, "--projection", projection,
		"--sink", "reads3", "--to", "-40,40-c0,c0-", "--yes", "--progress-every", "1s"}, args...)...)
	r.cmd.Env = append(os.Environ(), "RS_TEST_RESHARD_PAUSE="+pause)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		rb.t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	rb.t.Cleanup(func() { _ = r.cmd.Process.Kill(); <-r.done })
	return r
}

// killAtPause waits for the run to pause at its phase, then SIGKILLs it.
func (rb *reshardBed) killAtPause(r *reshardRun, phase string) {
	rb.t.Helper()
	testbed.Eventually(rb.t, 90*time.Second, func() (bool, string) {
		select {
		case <-r.done:
			rb.t.Fatalf("reshard exited (%v) before pausing at %s:\n%s", r.cmd.ProcessState, phase, r.out.String())
		default:
		}
		return strings.Contains(r.out.String(), "paused for a test\" phase="+phase), "no pause at " + phase + " yet:\n" + r.out.String()
	})
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// generation is the routing generation of the projection on server i.
func (rb *reshardBed) generation(i int) uint64 {
	var g uint64
	err := rb.servers[i].DB().QueryRowContext(rb.t.Context(), "SELECT generation FROM `"+rb.dbs[i]+"`.`_readside_routing` WHERE projection = 'messages_by_sender'").Scan(&g)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		rb.t.Fatal(err)
	}
	return g
}

// phase is the recorded reshard phase on server i.
func (rb *reshardBed) phase(i int) string {
	var phase string
	err := rb.servers[i].DB().QueryRowContext(rb.t.Context(), "SELECT phase FROM `"+rb.dbs[i]+"`.`_readside_reshards` WHERE projection = 'messages_by_sender'").Scan(&phase)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		rb.t.Fatal(err)
	}
	return phase
}

// TestReshardSplitKill9: 2 → 3 shards under live writes while `readside
// run` applies the projection; kill -9 in filling, in the cutover (fence
// held) and between two servers' cutovers, reruns finish; then every row is on exactly the shard its
// new range names (after --cleanup), the read table equals the source
// (verify), and the daemon follows the new sink at generation 1.
func TestReshardSplitKill9(t *testing.T) {
	rb := newReshardBed(t, "rshk")
	p := rb.projection()
	logPath := filepath.Join(rb.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", rb.cfgPath)
	ctx := t.Context()

	wctx, stopWriting := context.WithCancel(ctx)
	werr := make(chan error, 1)
	seed := seedFromEnv(t)
	go func() { werr <- rb.write(wctx, rand.New(rand.NewPCG(seed, 28)), 3000) }()
	// The old shards hold rows before the reshard starts.
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		var n int
		err := rb.servers[1].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+rb.dbs[1]+"`.messages_by_sender").Scan(&n)
		return err == nil && n > 500, fmt.Sprintf("%d rows on 80- (%v)", n, err)
	})

	first := rb.startReshard("filling", "--chunk-rows", "50")
	rb.killAtPause(first, "filling")
	if ph := rb.phase(2); ph != "filling" {
		t.Fatalf("phase after the kill in filling = %q, want filling", ph)
	}
	second := rb.startReshard("cutover", "--chunk-rows", "50")
	rb.killAtPause(second, "cutover")
	if ph := rb.phase(2); ph != "cutover" {
		t.Fatalf("phase after the kill in the cutover = %q, want cutover\n%s", ph, second.out.String())
	}
	// Killed after the first server took generation 1 and before the
	// other: the servers disagree until the rerun finishes them.
	third := rb.startReshard("cutover-partial")
	rb.killAtPause(third, "cutover-partial")
	if g0, g1 := rb.generation(0), rb.generation(1); g0 != 1 || g1 != 0 {
		t.Fatalf("routing generations after the kill between two servers' cutovers: %d and %d, want 1 and 0\n%s", g0, g1, third.out.String())
	}
	last := rb.startReshard("", "--cleanup")
	select {
	case <-last.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the last reshard run did not finish:\n%s", last.out.String())
	}
	out := last.out.String()
	t.Logf("last reshard run:\n%s", out)
	if code := last.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out, "messages_by_sender now applies through sink reads3 (generation 1)") {
		t.Fatalf("reshard exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, "reshard of messages_by_sender done: fence ") {
		t.Errorf("last line %q, want the fence time", l)
	}
	if ph := rb.phase(2); ph != "clean" {
		t.Errorf("phase after --cleanup = %q, want clean", ph)
	}
	// readside status shows the phase and the fence (from the stores:
	// no daemon answers on that address).
	st := exec.Command(readsideBinary(t), "status", "-c", rb.cfgPath, "--http", "127.0.0.1:1", "--json")
	stOut, _ := st.Output()
	var rep struct {
		Reshards []struct {
			Phase   string `json:"phase"`
			ToSink  string `json:"to_sink"`
			FenceMS int64  `json:"fence_ms"`
		} `json:"reshards"`
	}
	if err := json.Unmarshal(stOut, &rep); err != nil || len(rep.Reshards) != 1 || rep.Reshards[0].Phase != "clean" || rep.Reshards[0].ToSink != "reads3" || rep.Reshards[0].FenceMS <= 0 {
		t.Errorf("readside status --json reshards %+v (%v), want messages_by_sender clean to reads3 with its fence:\n%s", rep.Reshards, err, stOut)
	}
	// A rerun says there is nothing to do.
	again := rb.startReshard("")
	<-again.done
	if code := again.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(again.out.String(), "already served by sink reads3") {
		t.Errorf("rerun: exit %d:\n%s", code, again.out.String())
	}

	stopWriting()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	rb.checkPlaced()
	rb.verifyEqual(p)
	if l, _ := os.ReadFile(logPath); !strings.Contains(string(l), "projection messages_by_sender follows routing generation 1 on sink reads3") {
		t.Errorf("the daemon did not say it follows generation 1 on reads3; log:\n%s", tail(logPath))
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d; log:\n%s", code, tail(logPath))
	}
}

// checkPlaced: every read row is on the server whose new range holds its
// keyspace id, and each server's routing row names reads3 at generation 1.
func (rb *reshardBed) checkPlaced() {
	rb.t.Helper()
	ranges := [][]string{{"-40"}, {"40-c0"}, {"c0-"}}
	total := 0
	for i, m := range rb.servers {
		var rs []keyspace.Range
		for _, text := range ranges[i] {
			r, _ := keyspace.ParseRange(text)
			rs = append(rs, r)
		}
		rows, err := m.DB().QueryContext(rb.t.Context(), "SELECT sender_id FROM `"+rb.dbs[i]+"`.messages_by_sender")
		if err != nil {
			rb.t.Fatal(err)
		}
		n, wrong := 0, 0
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rb.t.Fatal(err)
			}
			id := keyspace.ID([]byte(s))
			ok := false
			for _, r := range rs {
				ok = ok || r.Contains(id)
			}
			if !ok {
				wrong++
			}
			n++
		}
		rows.Close()
		total += n
		if wrong > 0 || n == 0 {
			rb.t.Errorf("server %d (%v): %d rows, %d outside its new range", i, ranges[i], n, wrong)
		}
		var gen uint64
		var sink string
		if err := m.DB().QueryRowContext(rb.t.Context(), "SELECT generation, sink FROM `"+rb.dbs[i]+"`.`_readside_routing` WHERE projection = 'messages_by_sender'").Scan(&gen, &sink); err != nil || gen != 1 || sink != "reads3" {
			rb.t.Errorf("server %d: routing generation %d sink %q (%v), want 1 reads3", i, gen, sink, err)
		}
	}
	if !rb.t.Failed() {
		rb.t.Logf("%d read rows on three servers, each where its new range names", total)
	}
}

// verifyEqual: verify over the new sink finds no drift (missing, extra,
// different or misplaced rows).
func (rb *reshardBed) verifyEqual(p *projections.Projection) {
	rb.t.Helper()
	ctx := rb.t.Context()
	src, err := verify.OpenSource(config.Source{DSN: config.Secret(rb.bed.MySQL.AdminDSN())})
	if err != nil {
		rb.t.Fatal(err)
	}
	defer src.Close()
	sink, err := sinks.OpenSharded(ctx, "reads3", rb.cfg.Sinks["reads3"])
	if err != nil {
		rb.t.Fatal(err)
	}
	defer sink.Close()
	testbed.Eventually(rb.t, time.Minute, func() (bool, string) {
		rep, err := verify.New(p, src, sink, verify.Options{Settle: 5 * time.Second, Ends: projector.Ends(rb.bed.Kafka.Brokers())}).Run(ctx)
		if err != nil {
			return false, err.Error()
		}
		return rep.Drift() == 0 && rep.SourceRows > 0, fmt.Sprintf("verify: %+v", *rep)
	})
}

// TestReshardFillRates measures both fills on the same rows (not a pass
// or fail: the numbers for choosing --fill's default). Two copies of the
// chat projection over E2E_RESHARD_FILL_ROWS source rows, each moved 2 → 3
// shards, one by copy and one from the topics, with the source quiet.
// Runs only when E2E_RESHARD_FILL_ROWS is set.
func TestReshardFillRates(t *testing.T) {
	rows := envInt("E2E_RESHARD_FILL_ROWS", 0)
	if rows == 0 {
		t.Skip("set E2E_RESHARD_FILL_ROWS to measure the reshard's fills")
	}
	rb := newReshardBed(t, "rsfr", "by_sender_copy", "by_sender_topics")
	startDaemon(t, filepath.Join(rb.dir, "readside.log"), "run", "-c", rb.cfgPath)
	ctx := t.Context()
	names := []string{"by_sender_copy", "by_sender_topics"}
	// Once a row written now is applied, the tailer captures what follows.
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		_ = rb.bed.MySQL.Exec(ctx, fmt.Sprintf("REPLACE INTO `%s`.messages VALUES (%d, 1, NOW(), 'probe')", rb.src, rows+1))
		total := 0
		for i := 0; i < 2; i++ {
			var c int
			_ = rb.servers[i].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+rb.dbs[i]+"`.by_sender_copy").Scan(&c)
			total += c
		}
		return total > 0, "the tailer captures nothing yet"
	})
	if err := rb.bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.messages SELECT seq, seq %% 300, TIMESTAMP'2026-01-01 00:00:00' + INTERVAL seq SECOND, CONCAT('m', seq) FROM `%s`.seq_1_to_%d", rb.src, rb.src, rows)); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 10*time.Minute, func() (bool, string) {
		total := 0
		for _, n := range names {
			for i := 0; i < 2; i++ {
				var c int
				_ = rb.servers[i].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+rb.dbs[i]+"`."+n).Scan(&c)
				total += c
			}
		}
		return total == 2*(rows+1), fmt.Sprintf("%d of %d rows applied", total, 2*(rows+1))
	})
	for i, fill := range []string{"copy", "topics"} {
		r := rb.startReshardOf(names[i], "", "--fill", fill, "--chunk-rows", fmt.Sprint(envInt("E2E_RESHARD_CHUNK_ROWS", 10000)))
		<-r.done
		out := r.out.String()
		if r.cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("--fill %s:\n%s", fill, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		t.Logf("--fill %s: %s", fill, lines[len(lines)-1])
	}
}
