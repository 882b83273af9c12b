package e2e

// Operations on aggregate projections and projections with children, on
// one running daemon: a history through TRUNCATEs, status, /wait, the
// dead-letter topic, replay --from earliest, replay --rebuild over a
// damaged state table, a projection added by SIGHUP, and verify.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// ordersByStatus is the aggregate projection SIGHUP adds: no where, the
// group column is NOT NULL at the source.
const ordersByStatus = `  orders_by_status:
    from: %[1]s.orders
    sink: reads
    group_by: [status]
    aggregates: {orders: "count(*)", total_cents: "sum(total_cents)", last_order_at: "max(created_at)"}
`

// orderSkus is the projection with children SIGHUP adds: each order's
// skus in sku order, no limit.
const orderSkus = `  order_skus:
    from: %[1]s.orders
    sink: reads
    key: [id]
    columns: {id: id}
    children:
      skus:
        from: %[1]s.order_lines
        on: {order_id: id}
        columns: {sku: sku}
        order_by: [sku]
`

func sighupExpectations(src, sink string) []struct{ name, want, got string } {
	return []struct{ name, want, got string }{{"orders_by_status",
		"SELECT status, COUNT(*), SUM(total_cents), MAX(created_at) FROM `" + src + "`.orders GROUP BY status ORDER BY 1",
		"SELECT status, orders, total_cents, last_order_at FROM `" + sink + "`.orders_by_status ORDER BY 1"},
		{"order_skus",
			"SELECT o.id, (SELECT JSON_ARRAYAGG(JSON_OBJECT('sku', l.sku) ORDER BY l.sku, l.id) FROM `" + src + "`.order_lines l WHERE l.order_id = o.id)," +
				" (SELECT COUNT(*) FROM `" + src + "`.order_lines l WHERE l.order_id = o.id) FROM `" + src + "`.orders o ORDER BY 1",
			"SELECT id, skus, skus_count FROM `" + sink + "`.order_skus ORDER BY 1"}}
}

// TestAggregatesChildrenOps: with customer_order_stats and
// orders_with_lines (both on_error: dlq) running in one daemon on real
// Kafka:
//   - a history with TRUNCATEs of both source tables in the middle
//     converges to the SQL expectation;
//   - `readside status` lists both as consuming with no lag;
//   - /wait with a write's GTID answers 200 and the group row or the
//     parent's array shows the write right after;
//   - a row whose group the sink rejects (a CHECK the operator added)
//     goes to the dead-letter topic and the other groups go on; its
//     next change applies whole; a line whose child state the sink
//     rejects goes there too, and the other arrays go on;
//   - `replay --from earliest` re-applies the whole history and both read
//     tables stay exactly as they were throughout (not doubled);
//   - `replay --rebuild` of both, after their state tables were damaged,
//     swaps in tables and state that later changes apply to exactly;
//   - an aggregate projection and one with children added by SIGHUP
//     fill from the topics' whole history (truncations included);
//   - `readside verify` says EQUAL for all four.
func TestAggregatesChildrenOps(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db := bed.MySQL.DB()
	src, sink := sourceAndSinkDBs(t, bed, "aggops")
	tables := createShopAgg(t, bed, src)
	dir := t.TempDir()
	head := bedConfigHead(bed, tables, "aggops", filepath.Join(dir, "data"), sink)
	addr := freeAddr(t)
	decl := strings.Replace(fmt.Sprintf(shopAggProjections, src), "    sink: reads\n", "    sink: reads\n    on_error: dlq\n", 2)
	cfgPath := filepath.Join(dir, "readside.yaml")
	tailCfg := "http:\n  listen: " + addr + "\n"
	if err := os.WriteFile(cfgPath, []byte(head+decl+tailCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	p := &opsPipeline{t: t, bed: bed, src: src, sink: sink, cfgPath: cfgPath, logPath: logPath, httpAddr: addr}
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	prefix := topicPrefixOf(t, head)
	waitForCheckpoint(t, bed, prefix)
	p.waitReady(90 * time.Second)
	utc := utcDB(t, bed)
	expect := shopAggExpectations(src, sink)

	// A history through truncations of both tables.
	seed := seedFromEnv(t)
	if _, err := shopAggWorkload(ctx, db, src, rand.New(rand.NewPCG(seed, 51)), 1500); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "TRUNCATE TABLE `"+src+"`.order_lines", "TRUNCATE TABLE `"+src+"`.orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := shopAggWorkload(ctx, db, src, rand.New(rand.NewPCG(seed, 52)), 1500); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, expect, logPath)

	// status: both consuming, no consumer lag.
	var out string
	testbed.Eventually(t, 30*time.Second, func() (bool, string) {
		var code int
		out, code = p.status(t, "--http", addr)
		ok := code == 0
		for _, name := range []string{"customer_order_stats", "orders_with_lines"} {
			ok = ok && regexp.MustCompile(`(?m)^`+name+`\s+consuming\s+1\s+0\s*$`).MatchString(out)
		}
		return ok, fmt.Sprintf("readside status (exit %d), want both consuming with lag 0:\n%s", code, out)
	})
	t.Logf("readside status:\n%s", out)

	// /wait: read-your-writes on a group row and on a parent's array.
	for i := 1; i <= 5; i++ {
		cust, amount := 900+i, 1000*i
		gtid := writeGTID(t, bed.MySQL, "INSERT INTO `"+src+"`.orders VALUES (?, ?, 'paid', ?, '2024-06-01 00:00:00')", 9000+i, cust, amount)
		if code, body := p.wait(ctx, addr, "customer_order_stats", gtid, "60s"); code != http.StatusOK {
			t.Fatalf("/wait customer_order_stats %s: %d %v", gtid, code, body)
		}
		if got := testbed.RowsText(t, db, fmt.Sprintf("SELECT orders, total_cents, paid_orders FROM `%s`.customer_order_stats WHERE customer_id = %d", sink, cust)); got != fmt.Sprintf("1|%d|1|\n", amount) {
			t.Errorf("right after /wait, group %d is %q, want 1|%d|1|", cust, got, amount)
		}
		gtid = writeGTID(t, bed.MySQL, "INSERT INTO `"+src+"`.order_lines VALUES (?, ?, 1, ?, 7)", 9000+i, 9000+i, fmt.Sprintf("w%d", i))
		if code, body := p.wait(ctx, addr, "orders_with_lines", gtid, "60s"); code != http.StatusOK {
			t.Fatalf("/wait orders_with_lines %s: %d %v", gtid, code, body)
		}
		if got := testbed.RowsText(t, db, fmt.Sprintf("SELECT `lines`, lines_count FROM `%s`.orders_with_lines WHERE id = %d", sink, 9000+i)); got != fmt.Sprintf("[{\"qty\": 7, \"sku\": \"w%d\"}]|1|\n", i) {
			t.Errorf("right after /wait, order %d's lines are %q", 9000+i, got)
		}
	}

	// The dead-letter topic: a group the sink rejects.
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+sink+"`.customer_order_stats ADD CONSTRAINT no_whale CHECK (total_cents < 100000000)"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		"INSERT INTO `"+src+"`.orders VALUES (9100, 999, 'paid', 500000000, '2024-06-02 00:00:00')",
		"INSERT INTO `"+src+"`.orders VALUES (9101, 998, 'paid', 1234, '2024-06-02 00:00:00')"); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"projection": "customer_order_stats"}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		got := testbed.RowsText(t, db, "SELECT orders FROM `"+sink+"`.customer_order_stats WHERE customer_id = 998")
		return got == "1|\n", "the order after the rejected one was not applied: " + got + "\n" + tail(logPath)
	})
	if n := gauge(t, p.scrape(ctx), "readside_projection_dead_letters_total", labels); n != 1 {
		t.Errorf("%v dead letters, want 1 (the whale's order)", n)
	}
	dl := testbed.TopicRecords(t, bed.Kafka.Brokers(), event.DLQTopic(prefix, "customer_order_stats"))
	if len(dl) != 1 || !strings.Contains(string(dl[0].Value), "500000000") {
		t.Errorf("dead-letter topic holds %d records, want the whale's order", len(dl))
	}
	// Its next change applies whole: the group counts it from then on.
	if err := bed.MySQL.Exec(ctx, "UPDATE `"+src+"`.orders SET total_cents = 4321 WHERE id = 9100"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		got := testbed.RowsText(t, db, "SELECT orders, total_cents, paid_orders FROM `"+sink+"`.customer_order_stats WHERE customer_id = 999")
		return got == "1|4321|1|\n", "the dead-lettered order's next change, want group 999 at 1|4321|1|: " + got + "\n" + tail(logPath)
	})
	// Its delete retracts its one contribution: the group disappears, as
	// the source's GROUP BY says.
	if err := bed.MySQL.Exec(ctx, "DELETE FROM `"+src+"`.orders WHERE id = 9100"); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, expect, logPath)

	// The dead-letter topic: a line whose child state the sink rejects.
	// The other line of that poll fills its order's array; the rejected
	// line's next change applies whole.
	startCfg, err := config.Load(cfgPath, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	atStart, err := projections.Compile(startCfg)
	if err != nil {
		t.Fatal(err)
	}
	var linesState string
	for _, cp := range atStart {
		if cp.Name == "orders_with_lines" {
			linesState = cp.Children[0].StateTable(cp)
		}
	}
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+sink+"`.`"+linesState+"` ADD CONSTRAINT no_rejects CHECK (c_sku IS NULL OR c_sku <> 'reject-me')"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		"INSERT INTO `"+src+"`.orders VALUES (9200, 1, 'paid', 10, '2024-06-03 00:00:00'), (9201, 1, 'paid', 10, '2024-06-03 00:00:00')",
		"INSERT INTO `"+src+"`.order_lines VALUES (9200, 9200, 1, 'reject-me', 1)",
		"INSERT INTO `"+src+"`.order_lines VALUES (9201, 9201, 1, 'fine', 2)"); err != nil {
		t.Fatal(err)
	}
	lineLabels := map[string]string{"projection": "orders_with_lines"}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		got := testbed.RowsText(t, db, "SELECT id, `lines`, lines_count FROM `"+sink+"`.orders_with_lines WHERE id IN (9200, 9201) ORDER BY id")
		return got == "9200|<nil>|0|\n9201|[{\"qty\": 2, \"sku\": \"fine\"}]|1|\n", "the line after the rejected one was not applied: " + got + "\n" + tail(logPath)
	})
	if n := gauge(t, p.scrape(ctx), "readside_projection_dead_letters_total", lineLabels); n != 1 {
		t.Errorf("%v dead letters of orders_with_lines, want 1 (the rejected line)", n)
	}
	dl = testbed.TopicRecords(t, bed.Kafka.Brokers(), event.DLQTopic(prefix, "orders_with_lines"))
	if len(dl) != 1 || !strings.Contains(string(dl[0].Value), "reject-me") {
		t.Errorf("dead-letter topic of orders_with_lines holds %d records, want the rejected line", len(dl))
	}
	if err := bed.MySQL.Exec(ctx, "UPDATE `"+src+"`.order_lines SET sku = 'accepted' WHERE id = 9200"); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, expect, logPath)

	// replay --from earliest: the whole history again, the tables as they
	// were at every moment (a reader compares them every few
	// milliseconds throughout).
	before := map[string]string{}
	for _, e := range expect {
		before[e.name] = driftRows(ctx, bed, e.got)
	}
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	var samples atomic.Int64
	var changed atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sctx.Err() == nil {
			for _, e := range expect {
				got := driftRows(sctx, bed, e.got)
				if sctx.Err() != nil {
					return
				}
				if got != before[e.name] && changed.Load() == nil {
					changed.Store(e.name + ":" + testbed.FirstDifference(got, before[e.name]))
				}
			}
			samples.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	fams := p.scrape(ctx)
	applied0 := map[string]float64{}
	for _, name := range []string{"customer_order_stats", "orders_with_lines"} {
		applied0[name] = gauge(t, fams, "readside_projection_applied_rows_total", map[string]string{"projection": name})
		out, code := p.replayCmd(ctx, "--projection", name, "--from", "earliest")
		if code != 0 || !strings.Contains(out, "taken by the projector of "+name) {
			t.Fatalf("replay --from earliest of %s (exit %d):\n%s\nlog:\n%s", name, code, out, tail(logPath))
		}
	}
	// Every row there is now had an event, and a batch keeps one change
	// per source row: the replay applies at least one per row.
	var orders, lines int
	if err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM `"+src+"`.orders), (SELECT COUNT(*) FROM `"+src+"`.order_lines)").Scan(&orders, &lines); err != nil {
		t.Fatal(err)
	}
	atLeast := map[string]float64{"customer_order_stats": float64(orders), "orders_with_lines": float64(orders + lines)}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		resets := strings.Count(p.log(), "replaying: partition reset by readside replay")
		fams := p.scrape(ctx)
		grown := true
		for name, a0 := range applied0 {
			grown = grown && gauge(t, fams, "readside_projection_applied_rows_total", map[string]string{"projection": name}) >= a0+atLeast[name]
		}
		// 6 partitions: one topic for the aggregate, three for the other.
		return resets >= 24 && grown, fmt.Sprintf("%d partition resets (want 24), applied rows grown: %v", resets, grown)
	})
	p.waitReady(time.Minute) // back at the end offsets
	stopSampling()
	wg.Wait()
	if c := changed.Load(); c != nil {
		t.Fatalf("a read table changed during the replay from earliest: %s", c)
	}
	for _, e := range expect {
		if got := driftRows(ctx, bed, e.got); got != before[e.name] {
			t.Fatalf("%s changed by the replay from earliest:\n%s", e.name, testbed.FirstDifference(got, before[e.name]))
		}
	}
	if samples.Load() < 10 {
		t.Errorf("only %d samples during the replay: the check saw too little", samples.Load())
	}
	t.Logf("replay from earliest: both read tables unchanged over %d samples", samples.Load())

	// replay --rebuild, over damaged state: the swap brings the shadow's
	// state with the shadow's table, and later changes apply exactly.
	compiled := atStart
	var damaged []string
	for _, cp := range compiled {
		if cp.Aggregation != nil {
			damaged = append(damaged, cp.ContributionsTable())
		}
		for _, c := range cp.Children {
			damaged = append(damaged, c.StateTable(cp))
		}
	}
	if len(damaged) != 2 {
		t.Fatalf("state tables %v, want the contributions and the lines' state", damaged)
	}
	for _, st := range damaged {
		if err := bed.MySQL.Exec(ctx, "DELETE FROM `"+sink+"`.`"+st+"` WHERE RAND() < 0.5"); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"customer_order_stats", "orders_with_lines"} {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		out, code := p.replayCmd(rctx, "--projection", name, "--rebuild")
		cancel()
		t.Logf("readside replay --projection %s --rebuild (exit %d):\n%s", name, code, out)
		if code != 0 {
			t.Fatalf("rebuild of %s failed; log:\n%s", name, tail(logPath))
		}
	}
	left := testbed.RowsText(t, db, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+sink+"' AND TABLE_NAME LIKE '%\\_\\_rebuild%'")
	if left != "" {
		t.Errorf("tables of the rebuilds left behind:\n%s", left)
	}
	// The shadows' identities are forgotten, the floors their TRUNCATEs
	// left (the aggregate's own, the children's) included.
	q := func(table string) string { return "`" + sink + "`.`" + table + "`" }
	if left := testbed.RowsText(t, db, "SELECT projection FROM "+q("_readside_truncations")+" WHERE projection LIKE '%\\_\\_rebuild%'"+
		" UNION ALL SELECT DISTINCT projection FROM "+q("_readside_offsets")+" WHERE projection LIKE '%\\_\\_rebuild%'"+
		" UNION ALL SELECT projection FROM "+q("_readside_rebuilds")); left != "" {
		t.Errorf("bookkeeping of the rebuilds left behind:\n%s", left)
	}
	var olds []string
	for _, cp := range compiled {
		olds = append(olds, append([]string{cp.Table + "__old"}, sinks.StateTables(cp, cp.Table+"__old")...)...)
	}
	for _, o := range olds {
		if testbed.RowsText(t, db, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+sink+"' AND TABLE_NAME = '"+o+"'") == "" {
			t.Errorf("after the rebuilds %s is missing: the swap did not move the live table or its state there", o)
		}
	}
	if _, err := shopAggWorkload(ctx, db, src, rand.New(rand.NewPCG(seed, 53)), 1500); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, expect, logPath)
	for _, name := range []string{"customer_order_stats", "orders_with_lines"} {
		if out, code := p.replayCmd(ctx, "--projection", name, "--drop-old"); code != 0 {
			t.Errorf("--drop-old of %s (exit %d):\n%s", name, code, out)
		}
	}
	for _, o := range olds {
		if testbed.RowsText(t, db, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+sink+"' AND TABLE_NAME = '"+o+"'") != "" {
			t.Errorf("%s is still there after --drop-old", o)
		}
	}

	// SIGHUP adds an aggregate projection and one with children: they
	// fill from the history.
	if err := os.WriteFile(cfgPath, []byte(head+decl+fmt.Sprintf(ordersByStatus, src)+fmt.Sprintf(orderSkus, src)+tailCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 30*time.Second, func() (bool, string) {
		log := p.log()
		return strings.Contains(log, `SIGHUP: started the projector of a new projection" projection=orders_by_status`) &&
			strings.Contains(log, `SIGHUP: started the projector of a new projection" projection=order_skus`), "no new projectors after SIGHUP:\n" + tail(logPath)
	})
	waitExpected(t, utc, sighupExpectations(src, sink), logPath)

	expectReadside(t, cfgPath, "at the end", "verify", 0, "customer_order_stats: EQUAL", "orders_with_lines: EQUAL", "orders_by_status: EQUAL", "order_skus: EQUAL")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
