package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// TestReshardTwoToThreeUnderLoad is issue 28's acceptance on the real
// binary: a projection sharded on two servers (-80 on A, 80- on B) served
// by `readside run` is resharded onto three (-80 A, 80-c0 B, c0- C) while
// inserts, updates and deletes keep coming; the reshard is SIGKILLed once
// during the fill and once during the cutover and rerun each time, then
// cleaned up. At the end `readside verify` says EQUAL, no shard holds a row
// its range does not name, and a reader that routed by
// _readside_routing throughout never missed a key it knew existed.
// RESHARD_ROWS sets the rows loaded before the reshard.
func TestReshardTwoToThreeUnderLoad(t *testing.T) {
	r := newReshardRig(t, "rs23",
		sinkLayout{{"-80", 0}, {"80-", 1}},
		sinkLayout{{"-80", 0}, {"80-c0", 1}, {"c0-", 2}})
	r.run(envInt("RESHARD_ROWS", 40_000))
}

// TestReshardUnshardedToTwo is the same move for an unsharded read table:
// "-" on A becomes -80 on A and 80- on B.
func TestReshardUnshardedToTwo(t *testing.T) {
	r := newReshardRig(t, "rs12",
		sinkLayout{{"-", 0}},
		sinkLayout{{"-80", 0}, {"80-", 1}})
	r.run(envInt("RESHARD_ROWS", 40_000) / 2)
}

// TestReshardTwoToUnsharded is the way back, a merge of ranges: -80 on A
// and 80- on B become "-" on A, and the cleanup leaves nothing of the
// projection on B.
func TestReshardTwoToUnsharded(t *testing.T) {
	r := newReshardRig(t, "rs21",
		sinkLayout{{"-80", 0}, {"80-", 1}},
		sinkLayout{{"-", 0}})
	r.run(envInt("RESHARD_ROWS", 40_000) / 4)
}

// TestReshardReplicatedToSharded: a projection replicated on two servers
// becomes one split by its shard_by over three. The operator edits the
// declaration (no `replicated`, a shard_by) and runs the reshard with it;
// the daemon, still running the replicated declaration, stops that
// projection at the cutover instead of copying every row to every new
// shard, and the restart the command asks for resumes it on the new
// sink. Rows written between the cutover and the restart arrive.
func TestReshardReplicatedToSharded(t *testing.T) {
	r := newReshardRig(t, "rsrep",
		sinkLayout{{"-80", 0}, {"80-", 1}},
		sinkLayout{{"-80", 0}, {"80-c0", 1}, {"c0-", 2}})
	r.replicated = true
	r.writeConfig("old")
	ctx := t.Context()
	rows := envInt("RESHARD_ROWS", 40_000) / 4
	logPath := filepath.Join(r.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", r.cfgPath)
	waitForCheckpoint(t, r.bed, r.prefix)
	if err := loadItems(ctx, r.bed.MySQL.DB(), r.src, rows); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 5*time.Minute, func() (bool, string) {
		a, b := len(r.ids(0)), len(r.ids(1))
		return a == rows && b == rows, fmt.Sprintf("replicated: %d and %d of %d rows on A and B; log:\n%s", a, b, rows, tail(logPath))
	})

	r.replicated = false
	r.writeConfig("old")
	expectReadside(t, r.cfgPath, "replicated → sharded", "reshard --projection "+reshardProj+" --to "+r.new.ranges()+" --sink new --yes", 0,
		reshardProj+" now applies through sink new (generation 1)")
	// The next apply meets the new generation.
	if _, err := r.bed.MySQL.DB().ExecContext(ctx, "INSERT INTO `"+r.src+"`.items (id, grp, v, note, commit_us) SELECT id + 10000000, grp, v, 'after the cutover', commit_us FROM `"+r.src+"`.items WHERE id <= 200"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "this process declares it replicated"),
			"the daemon running the replicated declaration does not stop the projection at the cutover; log:\n" + tail(logPath)
	})
	d.stop(30 * time.Second)
	d = startDaemon(t, logPath, "run", "-c", r.cfgPath)
	expectReadside(t, r.cfgPath, "cleanup", "reshard --projection "+reshardProj+" --to "+r.new.ranges()+" --sink new --yes --cleanup", 0)
	want := r.sourceCount()
	testbed.Eventually(t, 3*time.Minute, func() (bool, string) {
		got := r.count(r.new)
		return got == want, fmt.Sprintf("the new shards hold %d rows in their ranges, the source %d; log:\n%s", got, want, tail(logPath))
	})
	r.checkPlacement()
	expectReadside(t, r.cfgPath, "after the restart", "verify", 0,
		fmt.Sprintf("%s: EQUAL (read table %s on sink new, %d shard(s))", reshardProj, reshardProj, len(r.new)))
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

// TestReshardWithoutShardBy: a projection on an unsharded sink declared
// without shard_by. readside reshard onto two shards refuses it (every row
// would stay on the first shard) and names the fix; with shard_by set in
// the config the reshard runs while the daemon keeps the old declaration,
// and the daemon stops that projection at the cutover instead of routing
// every row to the first shard; a SIGHUP (the stopped projection restarts
// with its declaration as it is now) resumes it on the new sink, with the
// rows written in between.
func TestReshardWithoutShardBy(t *testing.T) {
	r := newReshardRig(t, "rsnoby",
		sinkLayout{{"-", 0}},
		sinkLayout{{"-80", 0}, {"80-", 1}})
	r.noShardBy = true
	r.writeConfig("old")
	ctx := t.Context()
	rows := 2_000
	logPath := filepath.Join(r.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", r.cfgPath)
	waitForCheckpoint(t, r.bed, r.prefix)
	if err := loadItems(ctx, r.bed.MySQL.DB(), r.src, rows); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 3*time.Minute, func() (bool, string) {
		n := len(r.ids(0))
		return n == rows, fmt.Sprintf("%d of %d rows on A; log:\n%s", n, rows, tail(logPath))
	})
	verb := "reshard --projection " + reshardProj + " --to " + r.new.ranges() + " --sink new --yes"
	expectReadside(t, r.cfgPath, "no shard_by", verb, 2,
		"projection "+reshardProj+" has no shard_by, and sink new has 2 shards: its rows would all stay on the first shard")

	r.noShardBy = false
	r.writeConfig("old")
	expectReadside(t, r.cfgPath, "with shard_by", verb, 0, reshardProj+" now applies through sink new (generation 1)")
	if _, err := r.bed.MySQL.DB().ExecContext(ctx, "INSERT INTO `"+r.src+"`.items (id, grp, v, note, commit_us) SELECT id + 10000000, grp, v, 'after the cutover', commit_us FROM `"+r.src+"`.items WHERE id <= 200"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "this process declares it without shard_by"),
			"the daemon running the declaration without shard_by does not stop the projection at the cutover; log:\n" + tail(logPath)
	})
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, r.cfgPath, "cleanup", verb+" --cleanup", 0)
	want := r.sourceCount()
	testbed.Eventually(t, 3*time.Minute, func() (bool, string) {
		got := r.count(r.new)
		return got == want, fmt.Sprintf("the new shards hold %d rows in their ranges, the source %d; log:\n%s", got, want, tail(logPath))
	})
	r.checkPlacement()
	if n := len(r.ids(1)); n == 0 {
		t.Errorf("shard 80- on B holds no row")
	}
	expectReadside(t, r.cfgPath, "after the SIGHUP", "verify", 0,
		fmt.Sprintf("%s: EQUAL (read table %s on sink new, %d shard(s))", reshardProj, reshardProj, len(r.new)))
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

// sinkLayout is a sink's shards in order: each a key range on one of the
// rig's sink servers (an index into reshardRig.servers).
type sinkLayout []struct {
	keyrange string
	server   int
}

func (l sinkLayout) ranges() string {
	rs := make([]string, len(l))
	for i, s := range l {
		rs[i] = s.keyrange
	}
	return strings.Join(rs, ",")
}

// reshardProj is the projection the reshard tests move.
const reshardProj = "items_by_id"

// reshardRig is a source database on the test bed's MariaDB, the shared
// sink servers (sinkServer; a database of the rig's own on each), a
// config naming the sinks "old" (serving the projection) and "new" (the
// reshard's target), and the daemon.
type reshardRig struct {
	t        *testing.T
	bed      *testbed.Bed
	src      string
	servers  []*testbed.MySQL
	dbs      []string // the sink database on each server
	old, new sinkLayout
	// replicated declares the projection replicated (no shard_by).
	replicated bool
	// noShardBy declares the projection neither replicated nor with a
	// shard_by (possible on an unsharded sink only).
	noShardBy bool
	cfgPath   string
	prefix    string
	dir       string
}

func newReshardRig(t *testing.T, name string, old, new sinkLayout) *reshardRig {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("starts sink servers of its own: needs the test bed's own MariaDB")
	}
	ctx := t.Context()
	r := &reshardRig{t: t, bed: bed, old: old, new: new, dir: t.TempDir()}
	var err error
	if r.src, err = bed.MySQL.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+r.src+"`.items (id BIGINT PRIMARY KEY, grp INT NOT NULL, v BIGINT NOT NULL, note VARCHAR(40) NOT NULL, commit_us BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range append(append(sinkLayout{}, old...), new...) {
		n = max(n, l.server+1)
	}
	for i := range n {
		m := sinkServer(t, i)
		db, err := m.CreateDatabase(ctx, name+"_r")
		if err != nil {
			t.Fatal(err)
		}
		r.servers, r.dbs = append(r.servers, m), append(r.dbs, db)
	}
	r.prefix = name + fmt.Sprint(rand.IntN(1e6))
	r.cfgPath = filepath.Join(r.dir, "readside.yaml")
	r.writeConfig("old")
	return r
}

// writeConfig writes the config with the projection on sink serving.
func (r *reshardRig) writeConfig(serving string) {
	placement := "shard_by: id"
	switch {
	case r.replicated:
		placement = "replicated: true"
	case r.noShardBy:
		placement = ""
	}
	sink := func(l sinkLayout) string {
		if len(l) == 1 && l[0].keyrange == "-" {
			return fmt.Sprintf("    dsn: %q\n", r.dsn(l[0].server))
		}
		s := "    shards:\n"
		for _, sh := range l {
			s += fmt.Sprintf("      - {keyrange: %q, dsn: %q}\n", sh.keyrange, r.dsn(sh.server))
		}
		return s
	}
	cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%s.items]
  snapshot:
    mode: never
kafka:
  brokers: [%s]
  topic_prefix: %s
  partitions: 4
data_dir: %s
sinks:
  old:
%s  new:
%sprojections:
  %s:
    from: %s.items
    sink: %s
    key: [id]
    %s
    columns: {id: id, grp: grp, v: v, note: note, commit_us: commit_us}
`, r.bed.MySQL.ReplDSN(), testbed.NewServerID(), r.src, strings.Join(r.bed.Kafka.Brokers(), ", "), r.prefix,
		filepath.Join(r.dir, "data"), sink(r.old), sink(r.new), reshardProj, r.src, serving, placement)
	if err := os.WriteFile(r.cfgPath, []byte(cfg), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *reshardRig) dsn(server int) string { return r.servers[server].AdminDSN() + r.dbs[server] }

// table is the read table on a server, quoted.
func (r *reshardRig) table(server int) string { return "`" + r.dbs[server] + "`.`" + reshardProj + "`" }

// run loads rows, starts the daemon on "old", moves the projection to
// "new" under a live load with a SIGKILL in the fill and one in the
// cutover, cleans up and checks what the test's comment says.
func (r *reshardRig) run(rows int) {
	t, ctx := r.t, r.t.Context()
	t.Logf("%d rows, %s → %s", rows, r.old.ranges(), r.new.ranges())
	logPath := filepath.Join(r.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", r.cfgPath)
	waitForCheckpoint(t, r.bed, r.prefix)

	start := time.Now()
	if err := loadItems(ctx, r.bed.MySQL.DB(), r.src, rows); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	testbed.Eventually(t, 10*time.Minute, func() (bool, string) {
		n := r.count(r.old)
		return n == rows, fmt.Sprintf("%d of %d rows applied on the old shards; log:\n%s", n, rows, tail(logPath))
	})
	t.Logf("%d rows written in %s, applied on %s after %s", rows, loaded.Round(time.Millisecond), r.old.ranges(), time.Since(start).Round(time.Millisecond))

	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	l := newReshardLoad(r, rows, seedFromEnv(t))
	l.start(lctx)

	time.Sleep(2 * time.Second) // latency samples before the reshard starts
	l.mark("reshard")
	began := time.Now()
	out := r.reshard()
	l.mark("after")
	t.Logf("readside reshard: three runs took %s", time.Since(began).Round(time.Millisecond))
	if !strings.Contains(out, reshardProj+" now applies through sink new (generation 1)") {
		t.Errorf("the last reshard run does not say the projection moved to sink new at generation 1:\n%s", out)
	}
	if m := regexp.MustCompile(`reshard of ` + reshardProj + ` done: fence (\d+) ms[^\n]*`).FindStringSubmatch(out); m == nil {
		t.Errorf("the last reshard run does not say how long the fence held:\n%s", out)
	} else {
		t.Logf("%s (the fence: live applies on the old shards wait at most this long)", m[0])
	}
	began = time.Now()
	var said []string
	if r.leavesAServer() {
		said = append(said, "dropped "+reshardProj+"'s tables from ")
	}
	expectReadside(t, r.cfgPath, "cleanup", "reshard --projection "+reshardProj+" --to "+r.new.ranges()+" --sink new --yes --cleanup", 0, said...)
	t.Logf("readside reshard --cleanup took %s", time.Since(began).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the load goes on a little after the cleanup
	stopLoad()
	l.wait()

	l.report()
	r.checkPlacement()

	// verify follows the routing the config does not name yet. The daemon
	// applies what the load wrote last; verify re-checks live.
	var verified string
	testbed.Eventually(t, 3*time.Minute, func() (bool, string) {
		out, code := readsideOutput(t, r.cfgPath, "verify")
		verified = out
		want := fmt.Sprintf("%s: EQUAL (read table %s on sink new, %d shard(s))", reshardProj, reshardProj, len(r.new))
		// The load has stopped: a row verify still sees changing is one
		// that will not settle, not one being written.
		return code == 0 && strings.Contains(out, want) && !strings.Contains(out, "kept changing"), "readside verify, want " + want + " and no rows changing:\n" + out
	})
	t.Logf("readside verify:\n%s", verified)
	// The operator's step the command prints: the config names the new
	// sink.
	r.writeConfig("new")
	expectReadside(t, r.cfgPath, "with the config naming the new sink", "verify", 0,
		fmt.Sprintf("%s: EQUAL (read table %s on sink new, %d shard(s))", reshardProj, reshardProj, len(r.new)))
	want := r.sourceCount()
	if got := r.count(r.new); got != want {
		t.Errorf("the new shards hold %d rows, the source %d", got, want)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

// reshard runs `readside reshard` three times: paused (the command's
// test hook) after its first copied chunk and SIGKILLed there, with
// _readside_reshards saying filling; paused with the fence held and
// SIGKILLed, the phase saying cutover; then to the end. It returns the
// last run's output.
func (r *reshardRig) reshard() string {
	t := r.t
	logPath := filepath.Join(r.dir, "reshard.log")
	args := []string{"reshard", "--projection", reshardProj, "--to", r.new.ranges(), "--sink", "new", "--yes", "-c", r.cfgPath}
	for _, phase := range []string{"filling", "cutover", ""} {
		if err := os.WriteFile(logPath, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("RS_TEST_RESHARD_PAUSE", phase)
		p := &daemon{t: t, args: args, logPath: logPath}
		p.start()
		t.Cleanup(func() {
			if p.running() {
				p.kill9()
			}
		})
		if phase == "" {
			select {
			case <-p.done:
			case <-time.After(10 * time.Minute):
				p.kill9()
				t.Fatalf("readside reshard did not finish within 10 minutes; output:\n%s", tail(logPath))
			}
			out, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("readside reshard exit %d; output:\n%s", code, out)
			}
			return string(out)
		}
		testbed.Eventually(t, 10*time.Minute, func() (bool, string) {
			if !p.running() {
				t.Fatalf("readside reshard exited before pausing in %s:\n%s", phase, tail(logPath))
			}
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), "paused for a test") && r.phase() == phase,
				fmt.Sprintf("no pause in %s yet (_readside_reshards.phase %q):\n%s", phase, r.phase(), tail(logPath))
		})
		p.kill9()
		t.Logf("readside reshard SIGKILLed in %s", phase)
		t.Setenv("RS_TEST_RESHARD_PAUSE", "")
	}
	panic("unreachable")
}

// phase is the reshard's phase as the first new server records it ("" if
// none yet).
func (r *reshardRig) phase() string {
	srv := r.new[0].server
	var phase string
	_ = r.servers[srv].DB().QueryRowContext(r.t.Context(), "SELECT phase FROM `"+r.dbs[srv]+"`.`_readside_reshards` WHERE projection = ?", reshardProj).Scan(&phase)
	return phase
}

// count is the read rows over a layout's shards (each shard's rows in its
// range only, so copies a cleanup has not removed yet do not count).
func (r *reshardRig) count(l sinkLayout) int {
	total := 0
	for _, sh := range l {
		rg, err := keyspace.ParseRange(sh.keyrange)
		if err != nil {
			r.t.Fatal(err)
		}
		ids := r.ids(sh.server)
		for _, id := range ids {
			if rg.Contains(keyspaceID(id)) {
				total++
			}
		}
	}
	return total
}

func (r *reshardRig) ids(server int) []int64 {
	rows, err := r.servers[server].DB().QueryContext(r.t.Context(), "SELECT id FROM "+r.table(server))
	if err != nil {
		if strings.Contains(err.Error(), "doesn't exist") {
			return nil
		}
		r.t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			r.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return ids
}

// checkPlacement fails for every row on a new shard whose range does not
// hold its keyspace id (after the cleanup none may be left).
func (r *reshardRig) checkPlacement() {
	for _, sh := range r.new {
		rg, err := keyspace.ParseRange(sh.keyrange)
		if err != nil {
			r.t.Fatal(err)
		}
		ids, bad := r.ids(sh.server), 0
		for _, id := range ids {
			if ks := keyspaceID(id); !rg.Contains(ks) {
				if bad++; bad <= 5 {
					r.t.Errorf("shard %s holds id %d, whose keyspace id %016x it does not own", sh.keyrange, id, ks)
				}
			}
		}
		if bad > 0 {
			r.t.Errorf("shard %s: %d of %d rows are outside its range", sh.keyrange, bad, len(ids))
		} else {
			r.t.Logf("shard %s holds %d rows, all in its range", sh.keyrange, len(ids))
		}
	}
	// An old server the new sink does not use keeps no row of the
	// projection after the cleanup.
	used := map[int]bool{}
	for _, sh := range r.new {
		used[sh.server] = true
	}
	for _, sh := range r.old {
		if ids := r.ids(sh.server); !used[sh.server] && len(ids) > 0 {
			r.t.Errorf("server %c, which the new sink does not use, still holds %d rows after the cleanup", 'A'+sh.server, len(ids))
		}
	}
}

// leavesAServer reports whether an old shard's server serves no new shard.
func (r *reshardRig) leavesAServer() bool {
	used := map[int]bool{}
	for _, sh := range r.new {
		used[sh.server] = true
	}
	for _, sh := range r.old {
		if !used[sh.server] {
			return true
		}
	}
	return false
}

func (r *reshardRig) sourceCount() int {
	var n int
	if err := r.bed.MySQL.DB().QueryRowContext(r.t.Context(), "SELECT COUNT(*) FROM `"+r.src+"`.items").Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// keyspaceID routes an id as the projector does (shard_by id, a BIGINT).
func keyspaceID(id int64) uint64 {
	return keyspace.ID(projections.ShardValue(projections.ValueOf(id), 0))
}

// loadItems inserts ids 1..rows in multi-row statements.
func loadItems(ctx context.Context, db *sql.DB, src string, rows int) error {
	const batch = 2000
	for lo := 1; lo <= rows; lo += batch {
		var b strings.Builder
		b.WriteString("INSERT INTO `" + src + "`.items VALUES ")
		now := time.Now().UnixMicro()
		for id := lo; id < lo+batch && id <= rows; id++ {
			if id > lo {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d,0,'n%d',%d)", id, id%97, id, now)
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// readsideOutput runs a readside verb on cfgPath and returns its combined
// output and exit code.
func readsideOutput(t *testing.T, cfgPath string, verb string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), readsideBinary(t), append(strings.Fields(verb), "-c", cfgPath)...)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}
