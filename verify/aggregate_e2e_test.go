package verify_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// rollup: the shop with order lines, and two projections over two sink
// shards: customer_stats (one row per customer: count, sum, min, max,
// count_if and avg of their non-draft orders, sharded by customer) and
// orders_with_lines (each order with its first 3 lines as a JSON array
// and the count of all of them).
type rollup struct {
	bed    *testbed.Bed
	cfg    config.Config
	src    string
	shards []string
	stats  *projections.Projection
	lines  *projections.Projection
	sink   *sinks.Sharded
}

const orderLines = "CREATE TABLE `%s`.order_lines (order_id INT NOT NULL, line_no INT NOT NULL, sku VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL, qty INT NULL, PRIMARY KEY (order_id, line_no))"

func newRollup(t *testing.T, bed *testbed.Bed) *rollup {
	t.Helper()
	ctx := t.Context()
	r := &rollup{bed: bed}
	var err error
	if r.src, err = bed.MySQL.CreateDatabase(ctx, "vagg"); err != nil {
		t.Fatal(err)
	}
	tables, err := testbed.CreateShop(ctx, bed.MySQL, r.src)
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf(orderLines, r.src)); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("va", append(tables, r.src+".order_lines")...)
	sink := config.Sink{}
	for _, kr := range []string{"-80", "80-"} {
		db, err := bed.MySQL.CreateDatabase(ctx, "vaggreads")
		if err != nil {
			t.Fatal(err)
		}
		r.shards = append(r.shards, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(bed.MySQL.AdminDSN() + db)})
	}
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{
		"customer_stats": {From: r.src + ".orders", Sink: "reads", GroupBy: []string{"customer_id"}, ShardBy: "customer_id",
			Where: "status <> 'draft'",
			Aggregates: map[string]string{"orders": "count(*)", "total_cents": "sum(total_cents)", "first_at": "min(created_at)",
				"last_at": "max(created_at)", "paid": "count_if(status = 'paid')", "avg_cents": "avg(total_cents)"}},
		"orders_with_lines": {From: r.src + ".orders", Sink: "reads", Key: []string{"id"}, ShardBy: "id",
			Columns: map[string]string{"id": "id", "customer_id": "customer_id"},
			Children: map[string]config.Children{"lines": {From: r.src + ".order_lines", On: map[string]string{"order_id": "id"},
				Columns: map[string]string{"sku": "sku", "qty": "qty"}, OrderBy: []string{"line_no"}, Limit: 3}}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r.cfg = cfg
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == "customer_stats" {
			r.stats = p
		} else {
			r.lines = p
		}
	}
	if r.sink, err = sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.sink.Close() })
	for _, p := range ps {
		types, err := p.SourceColumns(ctx, bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		if err := r.sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// run starts the tailer and a projector per projection for the test's
// lifetime.
func (r *rollup) run(t *testing.T) {
	t.Helper()
	tl, err := cdc.New(r.cfg, r.cfg.Kafka.Brokers, logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 3)
	go func() { done <- tl.Run(ctx) }()
	for _, p := range []*projections.Projection{r.stats, r.lines} {
		pr, err := projections.NewProjector(p, r.sink, projections.Options{Brokers: r.cfg.Kafka.Brokers, Log: logger()})
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- pr.Run(ctx) }()
	}
	t.Cleanup(func() {
		stop()
		for range 3 {
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Errorf("stopped: %v", err)
			}
		}
	})
	testbed.WaitForTailer(t, r.bed.MySQL, r.cfg.Kafka.Brokers, event.CheckpointTopic(r.cfg.Kafka.TopicPrefix))
}

func (r *rollup) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := r.bed.MySQL.DB().ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// load inserts customers' orders (a quarter drafts) and 0 to 5 lines per
// order.
func (r *rollup) load(t *testing.T, customers, orders int) {
	t.Helper()
	statuses := []string{"draft", "new", "paid", "shipped"}
	var os, ls []string
	for i := 1; i <= orders; i++ {
		os = append(os, fmt.Sprintf("(%d, %d, '%s', %d, '2026-03-%02d 10:00:00.%06d')", i, 1+i%customers, statuses[i%4], i*7, 1+i%28, i))
		for l := range i % 6 {
			ls = append(ls, fmt.Sprintf("(%d, %d, 'sku-%d-%d', %d)", i, 10-l, i, l, l))
		}
	}
	r.exec(t, "INSERT INTO `"+r.src+"`.orders VALUES "+strings.Join(os, ","))
	r.exec(t, "INSERT INTO `"+r.src+"`.order_lines VALUES "+strings.Join(ls, ","))
}

// churn runs random changes for d: orders moved between customers,
// amounts and statuses changed, orders deleted and re-inserted, lines
// added, changed, moved to another order and deleted.
func (r *rollup) churn(t *testing.T, customers, orders int, d time.Duration) {
	t.Helper()
	rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
	o, l := "`"+r.src+"`.orders", "`"+r.src+"`.order_lines"
	statuses := []string{"draft", "new", "paid", "shipped"}
	for end := time.Now().Add(d); time.Now().Before(end); {
		id := 1 + rng.IntN(orders)
		switch rng.IntN(8) {
		case 0:
			r.exec(t, "UPDATE "+o+" SET customer_id = ? WHERE id BETWEEN ? AND ?", 1+rng.IntN(customers), id, id+3)
		case 1:
			r.exec(t, "UPDATE "+o+" SET total_cents = total_cents + ?, status = ? WHERE id = ?", rng.IntN(100)-50, statuses[rng.IntN(4)], id)
		case 2:
			r.exec(t, "DELETE FROM "+o+" WHERE id = ?", id)
		case 3:
			r.exec(t, "INSERT INTO "+o+" VALUES (?, ?, 'new', ?, '2026-04-01 00:00:00') ON DUPLICATE KEY UPDATE created_at = created_at - INTERVAL 1 DAY", id, 1+rng.IntN(customers), rng.IntN(1000))
		case 4:
			r.exec(t, "INSERT INTO "+l+" VALUES (?, ?, 'new', ?) ON DUPLICATE KEY UPDATE qty = qty + 1", id, rng.IntN(8), rng.IntN(5))
		case 5:
			r.exec(t, "UPDATE "+l+" SET sku = CONCAT(sku, 'x'), qty = NULL WHERE order_id = ? LIMIT 1", id)
		case 6:
			r.exec(t, "UPDATE IGNORE "+l+" SET order_id = ? WHERE order_id = ? LIMIT 1", 1+rng.IntN(orders), id)
		default:
			r.exec(t, "DELETE FROM "+l+" WHERE order_id = ? LIMIT 1", id)
		}
	}
}

// The independent statements of the contract (not verify's code): the
// GROUP BY and the JSON_ARRAYAGG over the source, and the union of the
// shards.
func (r *rollup) expectedStats(t *testing.T) string {
	return rowsText(t, "SELECT customer_id, COUNT(*), SUM(total_cents), MIN(created_at), MAX(created_at), COUNT(CASE WHEN status = 'paid' THEN 1 END), AVG(total_cents) FROM `"+
		r.src+"`.orders WHERE status <> 'draft' GROUP BY customer_id ORDER BY 1")
}

func (r *rollup) actualStats(t *testing.T) string {
	var parts []string
	for _, db := range r.shards {
		parts = append(parts, "SELECT customer_id, orders, total_cents, first_at, last_at, paid, avg_cents FROM `"+db+"`.customer_stats")
	}
	return rowsText(t, "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
}

func (r *rollup) expectedLines(t *testing.T) string {
	return rowsText(t, "SELECT o.id, o.customer_id, (SELECT JSON_ARRAYAGG(JSON_OBJECT('qty', l.qty, 'sku', l.sku) ORDER BY l.line_no, l.order_id LIMIT 3) FROM `"+r.src+
		"`.order_lines l WHERE l.order_id = o.id), (SELECT COUNT(*) FROM `"+r.src+"`.order_lines l WHERE l.order_id = o.id) FROM `"+r.src+"`.orders o ORDER BY 1")
}

func (r *rollup) actualLines(t *testing.T) string {
	var parts []string
	for _, db := range r.shards {
		parts = append(parts, "SELECT id, customer_id, `lines`, lines_count FROM `"+db+"`.orders_with_lines")
	}
	return rowsText(t, "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
}

func (r *rollup) waitConverged(t *testing.T, within time.Duration) {
	t.Helper()
	testbed.Eventually(t, within, func() (bool, string) {
		if want, got := r.expectedStats(t), r.actualStats(t); want != got {
			return false, "customer_stats not converged:" + testbed.FirstDifference(got, want)
		}
		if want, got := r.expectedLines(t), r.actualLines(t); want != got {
			return false, "orders_with_lines not converged:" + testbed.FirstDifference(got, want)
		}
		return true, ""
	})
}

func (r *rollup) verifier(t *testing.T, p *projections.Projection) *verify.Verifier {
	src, err := verify.OpenSource(r.cfg.Source.DSN.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return verify.New(p, src, r.sink, verify.Options{ChunkRows: 40, Settle: 8 * time.Second, Brokers: r.cfg.Kafka.Brokers, Log: logger()})
}

// shardOf is the shard holding a read row whose shard_by value is v.
func (r *rollup) shardOf(v int) int {
	for i, sh := range r.sink.Shards {
		if sh.Range.Contains(projections.KeyspaceID([]byte(fmt.Sprint(v)))) {
			return i
		}
	}
	return -1
}

func (r *rollup) shardExec(t *testing.T, shard int, query string, args ...any) {
	t.Helper()
	if _, err := r.sink.Shards[shard].DB().ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// diffLines are a report's samples as "kind key=value columns…".
func diffLines(rep *verify.Report) []string {
	var out []string
	for _, d := range rep.Samples {
		var keys []string
		for k, v := range d.Key {
			keys = append(keys, k+"="+v)
		}
		line := d.Kind + " " + strings.Join(keys, ",")
		for _, c := range d.Columns {
			line += " " + c.Name
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

func runVerify(t *testing.T, v *verify.Verifier) *verify.Report {
	t.Helper()
	rep, err := v.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("%s", text.String())
	return rep
}

// TestVerifyAggregatesAndChildren: after a live workload that moves orders
// between customers, changes amounts, deletes and re-inserts orders and
// adds, changes, moves and deletes lines, verify reports both projections
// EQUAL (chunked by group key and by order id over two shards). Group rows
// and arrays corrupted by hand on the sink — a changed total, a deleted
// group, a group the source does not have, an array and a count edited —
// are each named with the differing columns. --repair refuses the
// aggregate (naming the rebuild) and fixes the children through the
// tailer; after it both verify EQUAL and the next live change is still
// exact.
func TestVerifyAggregatesAndChildren(t *testing.T) {
	bed := testbed.Get(t)
	r := newRollup(t, bed)
	r.run(t)
	const customers, orders = 60, 600
	r.load(t, customers, orders)
	r.churn(t, customers, orders, 4*time.Second)
	r.waitConverged(t, 3*time.Minute)

	stats, lines := r.verifier(t, r.stats), r.verifier(t, r.lines)
	for _, v := range []*verify.Verifier{stats, lines} {
		if rep := runVerify(t, v); rep.Drift() != 0 || rep.Unsettled != 0 || rep.Chunks < 2 {
			t.Fatalf("converged projection %s: drift %d, unsettled %d in %d chunks (want none in several chunks)", rep.Projection, rep.Drift(), rep.Unsettled, rep.Chunks)
		}
	}

	// Corrupt the aggregate: customers are picked among the groups the
	// source has; a group the source lacks is customer 999 (a copy of
	// another group's row, so every hidden column is well formed).
	groups := strings.Fields(rowsText(t, "SELECT customer_id FROM `"+r.src+"`.orders WHERE status <> 'draft' GROUP BY customer_id ORDER BY 1"))
	changed, gone, copied := groups[3], groups[len(groups)/2], groups[len(groups)-2]
	var cid int
	fmt.Sscan(changed, &cid)
	r.shardExec(t, r.shardOf(cid), "UPDATE customer_stats SET total_cents = total_cents + 1 WHERE customer_id = ?", cid)
	fmt.Sscan(gone, &cid)
	r.shardExec(t, r.shardOf(cid), "DELETE FROM customer_stats WHERE customer_id = ?", cid)
	fmt.Sscan(copied, &cid)
	const ghost = 999
	conn, err := r.sink.Shards[r.shardOf(cid)].DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE TEMPORARY TABLE ghost AS SELECT * FROM `" + r.shards[r.shardOf(cid)] + fmt.Sprintf("`.customer_stats WHERE customer_id = %d", cid),
		fmt.Sprintf("UPDATE ghost SET customer_id = %d", ghost),
		"INSERT INTO `" + r.shards[r.shardOf(ghost)] + "`.customer_stats SELECT * FROM ghost",
	} {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep := runVerify(t, stats)
	want := []string{"different customer_id=" + changed + " total_cents", "extra customer_id=999", "missing customer_id=" + gone}
	slices.Sort(want)
	if got := diffLines(rep); rep.Different != 1 || rep.Missing != 1 || rep.Extra != 1 || strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("corrupted customer_stats: got %q, want %q", got, want)
	}
	if _, err := stats.Repair(t.Context(), rep, func(context.Context, string, string) error { return nil }, time.Second); err == nil ||
		!strings.Contains(err.Error(), "readside replay --projection customer_stats --rebuild") {
		t.Fatalf("repair of an aggregate: %v; want a refusal naming the rebuild", err)
	}

	// Corrupt the children: an array of one order, the count of another.
	withLines := strings.Fields(rowsText(t, "SELECT order_id FROM `"+r.src+"`.order_lines GROUP BY order_id HAVING COUNT(*) > 1 ORDER BY 1"))
	arrayOf, countOf := withLines[1], withLines[len(withLines)-1]
	var oid int
	fmt.Sscan(arrayOf, &oid)
	r.shardExec(t, r.shardOf(oid), "UPDATE orders_with_lines SET `lines` = JSON_ARRAY(JSON_OBJECT('qty', 1, 'sku', 'forged')) WHERE id = ?", oid)
	fmt.Sscan(countOf, &oid)
	r.shardExec(t, r.shardOf(oid), "UPDATE orders_with_lines SET lines_count = lines_count + 5 WHERE id = ?", oid)
	rep = runVerify(t, lines)
	want = []string{"different id=" + arrayOf + " lines", "different id=" + countOf + " lines_count"}
	slices.Sort(want)
	if got := diffLines(rep); rep.Drift() != 2 || strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("corrupted orders_with_lines: got %q, want %q", got, want)
	}
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, r.cfg.Source.DSN.Reveal(), r.cfg.Source.TLS, r.cfg.Source.Snapshot.SignalDB, r.cfg.Source.ServerID, table, where)
	}
	res, err := lines.Repair(t.Context(), rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Remaining != 0 {
		t.Fatalf("repair of orders_with_lines left %d keys differing: %+v", res.Remaining, *res)
	}
	if rep := runVerify(t, lines); rep.Drift() != 0 {
		t.Fatalf("orders_with_lines after repair: drift %d", rep.Drift())
	}

	// The next live changes to the repaired order are exact.
	fmt.Sscan(arrayOf, &oid)
	r.exec(t, "INSERT INTO `"+r.src+"`.order_lines VALUES (?, 0, 'first', 9)", oid)
	fmt.Sscan(countOf, &oid)
	r.exec(t, "DELETE FROM `"+r.src+"`.order_lines WHERE order_id = ? LIMIT 1", oid)
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		want, got := r.expectedLines(t), r.actualLines(t)
		return want == got, "orders_with_lines after repair and a live change:" + testbed.FirstDifference(got, want)
	})
}
