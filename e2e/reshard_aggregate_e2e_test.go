package e2e

// readside reshard of aggregate projections: payments per staff member
// (sum, count, count(distinct), min) and per staff member, their store
// (a joined parent's column) and month, moved from two shards (-80, 80-) to three on databases new
// to them (-40, 40-c0, c0-: 40-c0 overlaps both old shards, whose
// contributions tables are the same, so it is copied from one) while
// the source changes and `readside run` applies them.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/internal/sqlquote"
)

const reshardAggregateProjections = `  staff_stats:
    from: %[1]s.payment
    sink: reads
    group_by: [staff_id]
    shard_by: staff_id
    where: "staff_id IS NOT NULL"
    aggregates: {revenue: "sum(amount)", payments: "count(*)", items: "count(distinct inventory_id)", smallest: "min(amount)"}
  store_months:
    from: %[1]s.payment
    sink: reads
    join: [{from: %[1]s.staff, on: {staff_id: staff_id}, columns: {store_id: store_id}}]
    group_by: [staff_id, store_id, "bucket(payment_date, 'month')"]
    shard_by: staff_id
    where: "staff_id IS NOT NULL"
    aggregates: {revenue: "sum(amount)", payments: "count(*)", last_at: "max(payment_date)"}
`

// reshardAggregateExpected is each projection computed on the source, and
// read over the union of the sink databases dbs.
func reshardAggregateExpected(src string, dbs []string) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	union := func(sel, order string) string {
		var parts []string
		for _, db := range dbs {
			parts = append(parts, fmt.Sprintf(sel, "`"+db+"`"))
		}
		return strings.Join(parts, " UNION ALL ") + " ORDER BY " + order
	}
	return []struct{ name, want, got string }{
		{"staff_stats",
			"SELECT staff_id, SUM(amount), COUNT(*), COUNT(DISTINCT inventory_id), MIN(amount) FROM " + q("payment") + " WHERE staff_id IS NOT NULL GROUP BY 1 ORDER BY 1",
			union("SELECT staff_id, revenue, payments, items, smallest FROM %s.staff_stats", "1")},
		{"store_months",
			"SELECT p.staff_id, s.store_id, DATE_FORMAT(p.payment_date, '%Y-%m'), SUM(p.amount), COUNT(*), MAX(p.payment_date) FROM " + q("payment") + " p JOIN " + q("staff") +
				" s ON s.staff_id = p.staff_id WHERE s.store_id IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
			union("SELECT staff_id, store_id, bucket_payment_date_month, revenue, payments, last_at FROM %s.store_months", "1, 2, 3")},
	}
}

// TestReshardAggregateKill9: staff_stats (a plain group, count(distinct),
// min) and store_months (grouped by a joined parent's column) are each
// resharded 2 → 3 shards on new databases under live writes — payments
// inserted, changed, moved between staff and deleted, staff moving store
// (every payment of theirs changes group) — with each reshard SIGKILLed
// while copying the contributions and rerun to the end with --cleanup;
// the daemon follows the new sink; then the new shards' group rows (their
// union) equal the source's GROUP BY, and readside verify says EQUAL.
// Before that, a contributions table on an old shard whose comment lacks
// the every-group mark is refused.
func TestReshardAggregateKill9(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src := sourceWithSchema(t, bed, "rsagg", rentalSchema)
	// a0, a1: reads (-80, 80-); b0, b1, b2: reads3, databases new to the
	// projections (a server is an address and a database).
	r := newShardedRun(t, bed, "rsagg", "a0", "a1", "b0", "b1", "b2")
	dbs := r.dbs
	tables := []string{src + ".staff", src + ".film", src + ".inventory", src + ".payment"}
	decl := fmt.Sprintf(reshardAggregateProjections, src)
	r.start(t, bed, tables, fmt.Sprintf("  reads:\n    shards:\n      - {keyrange: \"-80\", dsn: %q}\n      - {keyrange: \"80-\", dsn: %q}\n"+
		"  reads3:\n    shards:\n      - {keyrange: \"-40\", dsn: %q}\n      - {keyrange: \"40-c0\", dsn: %q}\n      - {keyrange: \"c0-\", dsn: %q}\n",
		r.dsn(bed, 0), r.dsn(bed, 1), r.dsn(bed, 2), r.dsn(bed, 3), r.dsn(bed, 4)), decl)
	head, cfgPath, logPath, d := r.head, r.cfgPath, r.logPath, r.d
	utc := utcDB(t, bed)
	seed := seedFromEnv(t)
	if _, err := rentalWorkload(ctx, bed.MySQL.DB(), src, rand.New(rand.NewPCG(seed, 91)), 1500); err != nil {
		t.Fatal(err)
	}
	// Quiet payments (the workload changes ids up to 600): only a copy of
	// their contributions brings them to the new shards, and their
	// inventory items there only a rebuild of the distinct values.
	var stmts []string
	for i := range 120 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.payment VALUES (%d, %d, %d, %d.25, '2024-0%d-15 10:00:00')", src, 1001+i, 1+i%8, 101+i%40, 1+i%7, 1+i%6))
	}
	// Staff member 9 (the workload changes 1–8) last lost a payment: its
	// groups' _rs_version is that delete's, newer than any payment they
	// keep, so a group rebuilt from the contributions has an older one,
	// and only a check that leaves _rs_version out finds them equal.
	stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.staff VALUES (9, 1)", src))
	// Their ids sort first, so the first chunk the copy reads has them.
	for i := range 4 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.payment VALUES (%d, 9, %d, 3.50, '2024-02-10 10:00:00')", src, 10000+i, 101+i))
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, reshardAggregateExpected(src, dbs[:2]), logPath)
	// In a batch of its own (applied with the inserts, the delete would
	// only make a tombstone).
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("DELETE FROM `%s`.payment WHERE payment_id = 10003", src)); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, reshardAggregateExpected(src, dbs[:2]), logPath)

	writing := func(stream uint64) (stop func()) {
		wctx, cancel := context.WithCancel(ctx)
		werr := make(chan error, 1)
		go func() {
			rng := rand.New(rand.NewPCG(seed, stream))
			for wctx.Err() == nil {
				if _, err := rentalWorkload(wctx, bed.MySQL.DB(), src, rng, 30); stopped(wctx, err) != nil {
					werr <- err
					return
				}
				select {
				case <-wctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
			werr <- nil
		}()
		return func() {
			cancel()
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
		}
	}
	// A contributions table made before every shard stored every group
	// (its comment without the mark) is refused, naming the rebuild.
	agg := "`" + dbs[1] + "`.`_readside_agg_staff_stats`"
	var comment string
	if err := utc.QueryRowContext(ctx, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = '_readside_agg_staff_stats'", dbs[1]).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+agg+" COMMENT = 'readside contributions (old)'"); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, cfgPath, "reshard of an old contributions table", "reshard --projection staff_stats --sink reads3 --to -40,40-c0,c0- --yes", 1,
		"the contributions table _readside_agg_staff_stats of projection staff_stats on shard 80- of sink reads was made before every shard stored every contribution's group",
		"run readside replay --rebuild --projection staff_stats first")
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+agg+" COMMENT = "+sqlquote.Literal(comment)); err != nil {
		t.Fatal(err)
	}
	rb := &reshardBed{t: t, cfgPath: cfgPath}
	for i, name := range []string{"staff_stats", "store_months"} {
		stopWriting := writing(uint64(92 + 2*i))
		first := rb.startReshardOf(name, "filling", "--chunk-rows", "10")
		rb.killAtPause(first, "filling")
		var phase string
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT phase FROM `"+dbs[4]+"`.`_readside_reshards` WHERE projection = ?", name).Scan(&phase); err != nil || phase != "filling" {
			t.Fatalf("%s: phase after the kill in filling = %q (%v), want filling\n%s", name, phase, err, first.out.String())
		}
		if name == "store_months" {
			// Staff member 9 moves store while the reshard is down: its
			// payments' contributions were copied in their old groups
			// (the first chunk), the staff state is copied after the
			// last one.
			if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.staff SET store_id = 2 WHERE staff_id = 9", src)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(500 * time.Millisecond) // changes while the reshard is down
		last := rb.startReshardOf(name, "", "--cleanup", "--chunk-rows", "20", "--progress-every", "0")
		select {
		case <-last.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: the last reshard run did not finish:\n%s", name, last.out.String())
		}
		out := last.out.String()
		t.Logf("%s: last reshard run:\n%s", name, out)
		if code := last.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out, name+" now applies through sink reads3 (generation 1)") {
			t.Fatalf("%s: reshard exit %d:\n%s", name, code, out)
		}
		// The check compares group rows, the copy counted contributions:
		// its lines count rows with no share of a total (they read 0.2%
		// when the check was through).
		checks := 0
		for l := range strings.Lines(out) {
			if strings.Contains(l, "checking "+name+" ") {
				checks++
				if strings.Contains(l, "%") {
					t.Errorf("%s: a check line with a percentage: %q", name, l)
				}
			}
		}
		if checks == 0 {
			t.Errorf("%s: no line of the check's progress (every update is written at --progress-every 0):\n%s", name, out)
		}
		// The live projector follows the new sink while the source changes.
		time.Sleep(time.Second)
		stopWriting()
		if l, _ := os.ReadFile(logPath); !strings.Contains(string(l), "projection "+name+" follows routing generation 1 on sink reads3") {
			t.Errorf("the daemon did not say %s follows generation 1 on reads3; log:\n%s", name, tail(logPath))
		}
	}
	waitExpected(t, utc, reshardAggregateExpected(src, dbs[2:]), logPath)
	for _, db := range dbs[:2] {
		if left := testbed.RowsText(t, utc, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+db+"' AND (TABLE_NAME LIKE '%staff\\_stats%' OR TABLE_NAME LIKE '%store\\_months%')"); left != "" {
			t.Errorf("the cleanup left on %s: %s", db, left)
		}
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d; log:\n%s", code, tail(logPath))
	}
	// The config names the new sink, as the reshard says to do.
	if err := os.WriteFile(cfgPath, []byte(head+strings.ReplaceAll(decl, "    sink: reads\n", "    sink: reads3\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, cfgPath, "after the reshards", "verify", 0, "staff_stats: EQUAL", "store_months: EQUAL")
}
