package e2e

// Operations on the forms of issue 44 — an aggregate grouped by a joined
// parent's column with distinct counts, and children whose elements carry
// their own parent's columns — on one running daemon: status, /wait
// (a source row's change, a parent's change that moves groups or renames
// elements), and replay --rebuild over damaged state while the source
// keeps changing.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// castRentalSchema adds to rentalSchema the actors and the film's cast.
var castRentalSchema = []string{
	"CREATE TABLE `%[1]s`.actor (actor_id INT PRIMARY KEY, first_name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL, last_name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL)",
	"CREATE TABLE `%[1]s`.film_actor (film_id INT NOT NULL, actor_id INT NOT NULL, PRIMARY KEY (film_id, actor_id), KEY (actor_id))",
}

// joinedFormsProjections: payments per store (a joined parent's column)
// and month with a distinct count and a distinct sum, and each film with
// its cast's names (the child's own parent's columns).
const joinedFormsProjections = `  store_month_stats:
    from: %[1]s.payment
    sink: reads
    join: [{from: %[1]s.staff, on: {staff_id: staff_id}, columns: {store_id: store_id}}]
    group_by: [store_id, "bucket(payment_date, 'month')"]
    aggregates: {revenue: "sum(amount)", payments: "count(*)", items: "count(distinct inventory_id)", amounts: "sum(distinct amount)"}
  film_cast:
    from: %[1]s.film
    sink: reads
    key: [film_id]
    columns: {film_id: film_id, category_id: category_id}
    children:
      actors:
        from: %[1]s.film_actor
        on: {film_id: film_id}
        columns: {actor_id: actor_id}
        join:
          - from: %[1]s.actor
            on: {actor_id: actor_id}
            columns: {first_name: first_name, last_name: last_name}
        order_by: [last_name]
`

func joinedFormsExpectations(src, sink string) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	cast := " FROM " + q("film_actor") + " fa LEFT JOIN " + q("actor") + " a ON a.actor_id = fa.actor_id WHERE fa.film_id = f.film_id"
	return []struct{ name, want, got string }{
		{"store_month_stats",
			"SELECT s.store_id, DATE_FORMAT(p.payment_date, '%Y-%m'), SUM(p.amount), COUNT(*), COUNT(DISTINCT p.inventory_id), SUM(DISTINCT p.amount) FROM " + q("payment") +
				" p JOIN " + q("staff") + " s ON s.staff_id = p.staff_id WHERE s.store_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
			"SELECT store_id, bucket_payment_date_month, revenue, payments, items, amounts FROM `" + sink + "`.store_month_stats ORDER BY 1, 2"},
		{"film_cast",
			"SELECT f.film_id, f.category_id, (SELECT JSON_ARRAYAGG(JSON_OBJECT('actor_id', fa.actor_id, 'first_name', a.first_name, 'last_name', a.last_name)" +
				" ORDER BY a.last_name, fa.film_id, fa.actor_id)" + cast + "), (SELECT COUNT(*)" + cast + ") FROM " + q("film") + " f ORDER BY 1",
			"SELECT film_id, category_id, actors, actors_count FROM `" + sink + "`.film_cast ORDER BY 1"},
	}
}

// castRentalWorkload is rentalWorkload's history with the cast changing
// too, in turns of a few dozen changes each until target: cast rows added
// and removed, actors renamed (every film's array they are in), deleted
// and inserted again, pausing pause after each turn. Few parents, so
// each change of one moves many groups or elements.
func castRentalWorkload(ctx context.Context, bed *testbed.Bed, src string, rng *rand.Rand, target int, pause time.Duration) (int, error) {
	a, fa := "`"+src+"`.actor", "`"+src+"`.film_actor"
	names := []string{"Guiness", "Wahlberg", "Chase", "Davis", "Lollobrigida", "Nicholson", "Mostel", "Johansson"}
	cast := func(i int) (string, []any) {
		switch x := rng.IntN(100); {
		case x < 40:
			return "INSERT IGNORE INTO " + fa + " VALUES (?, ?)", []any{1 + rng.IntN(6), 1 + rng.IntN(10)}
		case x < 60:
			return "DELETE FROM " + fa + " WHERE film_id = ? AND actor_id = ?", []any{1 + rng.IntN(6), 1 + rng.IntN(10)}
		case x < 92:
			return "INSERT INTO " + a + " VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE last_name = VALUES(last_name), first_name = VALUES(first_name)",
				[]any{1 + rng.IntN(10), fmt.Sprintf("First %d", i), names[rng.IntN(len(names))]}
		default:
			return "DELETE FROM " + a + " WHERE actor_id = ?", []any{1 + rng.IntN(10)}
		}
	}
	done := 0
	for done < target && ctx.Err() == nil {
		n, err := randomTxns(ctx, bed.MySQL.DB(), rng, min(40, target-done), 3, cast)
		done += n
		if err != nil || done >= target {
			return done, stopped(ctx, err)
		}
		n, err = rentalWorkload(ctx, bed.MySQL.DB(), src, rng, min(60, target-done))
		done += n
		if err != nil {
			return done, stopped(ctx, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	return done, nil
}

// TestJoinedFormsWaitStatusRebuild: store_month_stats (groups from a
// joined parent, count(distinct), sum(distinct)) and film_cast (children
// with joined columns) in one daemon on real MariaDB and Kafka:
//   - a history converges to the source's GROUP BY and JSON_ARRAYAGG;
//   - `readside status` lists both consuming with no lag;
//   - /wait with the GTID of a payment, of a staff member moving store
//     (every payment of theirs changes group) and of an actor renamed
//     (every film they are in changes) answers 200, and right after it
//     the whole read table equals the source's query;
//   - `replay --rebuild` of each, with every state table damaged and the
//     source changing throughout, swaps in a table and state tables that
//     the later changes apply to exactly (the read tables equal the
//     source's, the distinct values table holds exactly the source's
//     (group, value) pairs and row counts), leaves no shadow table,
//     state or bookkeeping behind (the group lock row included), keeps
//     the damaged state in __old, and `readside verify` says EQUAL;
//     status lists both consuming with no lag after.
func TestJoinedFormsWaitStatusRebuild(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db := bed.MySQL.DB()
	src, sink := sourceAndSinkDBs(t, bed, "jfops")
	var stmts []string
	for _, s := range append(append([]string{}, rentalSchema...), castRentalSchema...) {
		stmts = append(stmts, fmt.Sprintf(s, src))
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	tables := []string{src + ".staff", src + ".film", src + ".inventory", src + ".payment", src + ".actor", src + ".film_actor"}
	dir := t.TempDir()
	head := bedConfigHead(bed, tables, "jfops", filepath.Join(dir, "data"), sink)
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(head+fmt.Sprintf(joinedFormsProjections, src)+"http:\n  listen: "+addr+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	p := &opsPipeline{t: t, bed: bed, src: src, sink: sink, cfgPath: cfgPath, logPath: logPath, httpAddr: addr}
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	waitForCheckpoint(t, bed, topicPrefixOf(t, head))
	p.waitReady(90 * time.Second)
	utc := utcDB(t, bed)
	expect := joinedFormsExpectations(src, sink)
	names := []string{"store_month_stats", "film_cast"}

	seed := seedFromEnv(t)
	if _, err := castRentalWorkload(ctx, bed, src, rand.New(rand.NewPCG(seed, 61)), 1200, 0); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, expect, logPath)

	consuming := func(when string) {
		t.Helper()
		var out string
		testbed.Eventually(t, 30*time.Second, func() (bool, string) {
			var code int
			out, code = p.status(t, "--http", addr)
			ok := code == 0
			for _, name := range names {
				ok = ok && regexp.MustCompile(`(?m)^`+name+`\s+consuming\s+1\s+0\s*$`).MatchString(out)
			}
			return ok, fmt.Sprintf("%s: readside status (exit %d), want both consuming with lag 0:\n%s", when, code, out)
		})
		t.Logf("%s: readside status:\n%s", when, out)
	}
	consuming("after the history")

	// /wait: each write visible in the whole read table right after 200.
	// Each statement changes a row (a GTID to wait for).
	waitThen := func(projection, what, stmt string, args ...any) {
		t.Helper()
		gtid := writeGTID(t, bed.MySQL, stmt, args...)
		if code, body := p.wait(ctx, addr, projection, gtid, "60s"); code != http.StatusOK {
			t.Fatalf("/wait %s after %s (%s): %d %v", projection, what, gtid, code, body)
		}
		for _, e := range expect {
			if e.name != projection {
				continue
			}
			if want, got := testbed.RowsText(t, utc, e.want), testbed.RowsText(t, utc, e.got); want != got {
				t.Errorf("right after /wait answered 200 for %s, %s differs from the source:\n%s", what, projection, testbed.FirstDifference(got, want))
			}
		}
	}
	var moved int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+src+"`.payment WHERE staff_id = 1").Scan(&moved); err != nil {
		t.Fatal(err)
	}
	waitThen("store_month_stats", "a staff member's store set", "INSERT INTO `"+src+"`.staff VALUES (1, 1) ON DUPLICATE KEY UPDATE store_id = IF(store_id <=> 1, 2, 1)")
	waitThen("store_month_stats", "a payment", "INSERT INTO `"+src+"`.payment VALUES (9001, 1, 1, 12.34, '2024-03-05 10:00:00')")
	waitThen("store_month_stats", fmt.Sprintf("a staff member (%d payments) moving store", moved+1), "UPDATE `"+src+"`.staff SET store_id = 3 WHERE staff_id = 1")
	// Films 7 and up are not the workload's.
	var films int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+src+"`.film_actor WHERE actor_id = 1").Scan(&films); err != nil {
		t.Fatal(err)
	}
	waitThen("film_cast", "an actor inserted or renamed", "INSERT INTO `"+src+"`.actor VALUES (1, 'Penelope', 'Aaaa') ON DUPLICATE KEY UPDATE last_name = IF(last_name = 'Aaaa', 'Aaab', 'Aaaa')")
	waitThen("film_cast", "a film", "INSERT INTO `"+src+"`.film VALUES (7, 2)")
	waitThen("film_cast", "a cast row", "INSERT INTO `"+src+"`.film_actor VALUES (7, 1)")
	waitThen("film_cast", fmt.Sprintf("an actor in %d films renamed", films+1), "UPDATE `"+src+"`.actor SET last_name = 'Zzzz' WHERE actor_id = 1")

	// replay --rebuild over damaged state, the source changing throughout.
	cfg, err := config.Load(cfgPath, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var states, olds []string
	var distinct string
	for _, cp := range compiled {
		st := sinks.StateTables(cp, cp.Table)
		states = append(states, st...)
		olds = append(olds, append([]string{cp.Table + "__old"}, sinks.StateTables(cp, cp.Table+"__old")...)...)
		if cp.Aggregation != nil {
			distinct = cp.DistinctTable("items")
		}
	}
	// contributions, two distinct values tables; child state, link, the
	// actors' state.
	if len(states) != 6 {
		t.Fatalf("state tables %v, want 6", states)
	}
	for _, st := range states {
		if err := bed.MySQL.Exec(ctx, "DELETE FROM `"+sink+"`.`"+st+"` WHERE RAND() < 0.5"); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	werr := make(chan error, 1)
	go func() {
		_, err := castRentalWorkload(wctx, bed, src, rand.New(rand.NewPCG(seed, 62)), 1_000_000, 50*time.Millisecond)
		werr <- err
	}()
	for _, name := range names {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		out, code := p.replayCmd(rctx, "--projection", name, "--rebuild")
		cancel()
		t.Logf("readside replay --projection %s --rebuild (exit %d):\n%s", name, code, out)
		if code != 0 {
			t.Fatalf("rebuild of %s failed; log:\n%s", name, tail(logPath))
		}
	}
	// A little more after both swaps, then the source rests.
	time.Sleep(2 * time.Second)
	stopWriting()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, expect, logPath)
	if want, got := testbed.RowsText(t, utc, "SELECT COUNT(*), SUM(n) FROM (SELECT s.store_id, DATE_FORMAT(p.payment_date, '%Y-%m'), p.inventory_id, COUNT(*) n FROM `"+src+
		"`.payment p JOIN `"+src+"`.staff s ON s.staff_id = p.staff_id WHERE s.store_id IS NOT NULL AND p.inventory_id IS NOT NULL GROUP BY 1, 2, 3) x"),
		testbed.RowsText(t, utc, "SELECT COUNT(*), SUM(_rs_refs) FROM `"+sink+"`.`"+distinct+"` WHERE _rs_refs > 0"); want != got {
		t.Errorf("after the rebuild the distinct values table %s holds (pairs, rows) %q, the source %q", distinct, got, want)
	}
	q := func(table string) string { return "`" + sink + "`.`" + table + "`" }
	if left := testbed.RowsText(t, db, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+sink+"' AND TABLE_NAME LIKE '%\\_\\_rebuild%'"); left != "" {
		t.Errorf("tables of the rebuilds left behind:\n%s", left)
	}
	if left := testbed.RowsText(t, db, "SELECT projection FROM "+q("_readside_truncations")+" WHERE projection LIKE '%\\_\\_rebuild%'"+
		" UNION ALL SELECT DISTINCT projection FROM "+q("_readside_offsets")+" WHERE projection LIKE '%\\_\\_rebuild%'"+
		" UNION ALL SELECT DISTINCT projection FROM "+q("_readside_tombstones")+" WHERE projection LIKE '%\\_\\_rebuild%'"+
		" UNION ALL SELECT projection FROM "+q("_readside_rebuilds")); left != "" {
		t.Errorf("bookkeeping of the rebuilds left behind:\n%s", left)
	}
	for _, o := range olds {
		if testbed.RowsText(t, db, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+sink+"' AND TABLE_NAME = '"+o+"'") == "" {
			t.Errorf("after the rebuilds %s is missing: the swap did not move the live table or its state there", o)
		}
	}
	consuming("after the rebuilds")
	expectReadside(t, cfgPath, "after the rebuilds", "verify", 0, "store_month_stats: EQUAL", "film_cast: EQUAL")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

// stopped is err, or nil once ctx is cancelled: a workload stopped
// mid-statement fails that statement (with the cancellation, or the
// driver's "invalid connection" for the connection it abandoned), which
// is the stop it was asked for, not a failure of the source.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// shardedFormsProjections are projections of the rental and cast schema
// on a sharded sink: payments per staff member with a distinct count
// (shard_by must be a group column of the source row itself), and
// film_cast sharded by film.
const shardedFormsProjections = `  staff_stats:
    from: %[1]s.payment
    sink: reads
    group_by: [staff_id]
    shard_by: staff_id
    where: "staff_id IS NOT NULL"
    aggregates: {revenue: "sum(amount)", payments: "count(*)", items: "count(distinct inventory_id)"}
  film_cast:
    from: %[1]s.film
    sink: reads
    key: [film_id]
    shard_by: film_id
    columns: {film_id: film_id, category_id: category_id}
    children:
      actors:
        from: %[1]s.film_actor
        on: {film_id: film_id}
        columns: {actor_id: actor_id}
        join:
          - from: %[1]s.actor
            on: {actor_id: actor_id}
            columns: {first_name: first_name, last_name: last_name}
        order_by: [last_name]
`

// TestReshardRefusedMovedWithDowntime: `readside reshard` refuses
// staff_stats onto a sink whose shard would fill a piece on a database
// that keeps an old shard, naming its form, the shard, and the move with
// downtime; that move — the projections' (film_cast's too)
// sink set to the three-shard sink in the config, `readside run`
// restarted while the source keeps changing — fills the new shards from
// the topics' history: the read tables there (the union of the shards)
// equal the source's query, and `readside verify` says EQUAL.
func TestReshardRefusedMovedWithDowntime(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "jfmove")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, s := range append(append([]string{}, rentalSchema...), castRentalSchema...) {
		stmts = append(stmts, fmt.Sprintf(s, src))
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	// Two shards of reads, three of reads3, on the test bed's server.
	r := newShardedRun(t, bed, "jfmove", "a0", "a1", "b0", "b1", "b2")
	dbs := r.dbs
	tables := []string{src + ".staff", src + ".film", src + ".inventory", src + ".payment", src + ".actor", src + ".film_actor"}
	decl := fmt.Sprintf(shardedFormsProjections, src)
	r.start(t, bed, tables, fmt.Sprintf("  reads:\n    shards:\n      - {keyrange: \"-80\", dsn: %q}\n      - {keyrange: \"80-\", dsn: %q}\n"+
		"  reads3:\n    shards:\n      - {keyrange: \"-40\", dsn: %q}\n      - {keyrange: \"40-c0\", dsn: %q}\n      - {keyrange: \"c0-\", dsn: %q}\n"+
		"  reads2x:\n    shards:\n      - {keyrange: \"-c0\", dsn: %q}\n      - {keyrange: \"c0-\", dsn: %q}\n",
		r.dsn(bed, 0), r.dsn(bed, 1), r.dsn(bed, 2), r.dsn(bed, 3), r.dsn(bed, 4), r.dsn(bed, 0), r.dsn(bed, 1)), decl)
	head, cfgPath, logPath, d := r.head, r.cfgPath, r.logPath, r.d
	utc := utcDB(t, bed)
	// The expectation over the union of a sink's shards.
	over := func(shards []string) []struct{ name, want, got string } {
		out := joinedFormsExpectations(src, shards[0])[1:] // film_cast
		out = append(out, struct{ name, want, got string }{"staff_stats",
			"SELECT staff_id, SUM(amount), COUNT(*), COUNT(DISTINCT inventory_id) FROM `" + src + "`.payment WHERE staff_id IS NOT NULL GROUP BY 1 ORDER BY 1",
			"SELECT staff_id, revenue, payments, items FROM `" + shards[0] + "`.staff_stats ORDER BY 1"})
		for i := range out {
			sel, order, _ := strings.Cut(out[i].got, " ORDER BY ")
			var parts []string
			for _, db := range shards {
				parts = append(parts, strings.Replace(sel, "`"+shards[0]+"`.", "`"+db+"`.", 1))
			}
			out[i].got = strings.Join(parts, " UNION ALL ") + " ORDER BY " + order
		}
		return out
	}
	seed := seedFromEnv(t)
	if _, err := castRentalWorkload(ctx, bed, src, rand.New(rand.NewPCG(seed, 71)), 800, 0); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, over(dbs[:2]), logPath)

	// reads2x's -c0 on a0 would fill 80-c0 beside a0's -80.
	expectReadside(t, cfgPath, "reshard of the aggregate", "reshard --projection staff_stats --sink reads2x --to -c0,c0- --yes", 2,
		"projection staff_stats is an aggregate projection (group_by, with count(distinct) in items), which readside reshard moves only onto databases new to it",
		"shard -c0 of sink reads2x would fill 80-c0 on database",
		"set projections.staff_stats.sink: reads2x in the config and restart readside run")

	// The move with downtime, the source changing throughout.
	wctx, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	werr := make(chan error, 1)
	go func() {
		_, err := castRentalWorkload(wctx, bed, src, rand.New(rand.NewPCG(seed, 72)), 1_000_000, 50*time.Millisecond)
		werr <- err
	}()
	time.Sleep(time.Second)
	if err := os.WriteFile(cfgPath, []byte(head+strings.ReplaceAll(decl, "    sink: reads\n", "    sink: reads3\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
	d = startDaemon(t, logPath, "run", "-c", cfgPath)
	time.Sleep(3 * time.Second)
	stopWriting()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, over(dbs[2:]), logPath)
	expectReadside(t, cfgPath, "after the move", "verify", 0, "staff_stats: EQUAL", "film_cast: EQUAL")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
