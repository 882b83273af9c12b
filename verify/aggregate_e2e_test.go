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
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// rollup: the shop with order lines, and two projections over two sink
// shards: customer_stats (one row per customer: count, sum, min, max,
// count_if, avg and count(distinct) of their non-draft orders and the customer's name,
// sharded by customer) and
// orders_with_lines (each order with its 3 lines of least qty as a JSON
// array, ties by the line's key, and the count of all of them). The lines
// are loaded with qty against their key's order, so the array's order is
// the ORDER BY's, not the table's.
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

// newRollup sets up the rollup with the projections named (customer_stats,
// orders_with_lines).
func newRollup(t *testing.T, bed *testbed.Bed, names ...string) *rollup {
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
	all := map[string]config.Projection{
		"customer_stats": {From: r.src + ".orders", Sink: "reads", GroupBy: []string{"customer_id"}, ShardBy: "customer_id",
			Where: "status <> 'draft'",
			Join:  []config.Join{{From: r.src + ".customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_name": "name"}}},
			Aggregates: map[string]string{"orders": "count(*)", "total_cents": "sum(total_cents)", "first_at": "min(created_at)",
				"last_at": "max(created_at)", "paid": "count_if(status = 'paid')", "avg_cents": "avg(total_cents)",
				"statuses": "count(distinct status)", "days": "count(distinct DATE(created_at))"}},
		"orders_with_lines": {From: r.src + ".orders", Sink: "reads", Key: []string{"id"}, ShardBy: "id",
			Columns: map[string]string{"id": "id", "customer_id": "customer_id"},
			Children: map[string]config.Children{"lines": {From: r.src + ".order_lines", On: map[string]string{"order_id": "id"},
				Columns: map[string]string{"sku": "sku", "qty": "qty"}, OrderBy: []string{"qty"}, Limit: 3}}},
	}
	cfg.Projections = map[string]config.Projection{}
	for _, n := range names {
		cfg.Projections[n] = all[n]
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
	tl, err := cdc.New(cdc.Config{Source: r.cfg.Source, Kafka: r.cfg.Kafka, Cuts: r.cfg.TransactionalSinks()}, r.cfg.Kafka.Brokers, logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ps := r.projections()
	done := make(chan error, 1+len(ps))
	go func() { done <- tl.Run(ctx) }()
	for _, p := range ps {
		pr, err := projector.New(p, r.sink, projector.Options{Brokers: r.cfg.Kafka.Brokers, Log: logger()})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			err := pr.Run(ctx)
			if err != nil && ctx.Err() == nil {
				// Said at once: the test may be waiting for its rows.
				t.Errorf("projector %s stopped: %v", p.Name, err)
			}
			done <- err
		}()
	}
	t.Cleanup(func() {
		stop()
		for range 1 + len(ps) {
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Errorf("stopped: %v", err)
			}
		}
	})
	testbed.WaitForTailer(t, r.bed.MySQL, r.cfg.Kafka.Brokers, event.CheckpointTopic(r.cfg.Kafka.TopicPrefix))
}

// runOne is a rollup of cfg's one projection (an aggregate, as stats) on
// its one-shard sink "reads", its tables created and the tailer and the
// projector running.
func runOne(t *testing.T, bed *testbed.Bed, cfg config.Config, src string) *rollup {
	t.Helper()
	ctx := t.Context()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rollup{bed: bed, cfg: cfg, src: src, stats: ps[0]}
	if r.sink, err = sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.sink.Close() })
	types, err := r.stats.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.sink.Exec(ctx, sinks.DDL(r.stats, types)); err != nil {
		t.Fatal(err)
	}
	r.run(t)
	return r
}

func (r *rollup) projections() []*projections.Projection {
	var out []*projections.Projection
	for _, p := range []*projections.Projection{r.stats, r.lines} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
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
	var cs []string
	for i := 1; i <= customers; i += 2 { // every other customer exists: the rest join to NULL
		cs = append(cs, fmt.Sprintf("(%d, 'customer %d ✓', NULL)", i, i))
	}
	r.exec(t, "INSERT INTO `"+r.src+"`.customers VALUES "+strings.Join(cs, ","))
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
	return rowsText(t, "SELECT g.*, c.name FROM (SELECT customer_id, COUNT(*), SUM(total_cents), MIN(created_at), MAX(created_at), COUNT(CASE WHEN status = 'paid' THEN 1 END), AVG(total_cents), COUNT(DISTINCT status), COUNT(DISTINCT DATE(created_at)) FROM `"+
		r.src+"`.orders WHERE status <> 'draft' GROUP BY customer_id) g LEFT JOIN `"+r.src+"`.customers c ON c.id = g.customer_id ORDER BY 1")
}

func (r *rollup) actualStats(t *testing.T) string {
	var parts []string
	for _, db := range r.shards {
		parts = append(parts, "SELECT customer_id, orders, total_cents, first_at, last_at, paid, avg_cents, statuses, days, customer_name FROM `"+db+"`.customer_stats")
	}
	return rowsText(t, "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
}

func (r *rollup) expectedLines(t *testing.T) string {
	return rowsText(t, "SELECT o.id, o.customer_id, (SELECT JSON_ARRAYAGG(JSON_OBJECT('qty', l.qty, 'sku', l.sku) ORDER BY l.qty, l.order_id, l.line_no LIMIT 3) FROM `"+r.src+
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
		if r.stats != nil {
			if want, got := r.expectedStats(t), r.actualStats(t); want != got {
				return false, "customer_stats not converged:" + testbed.FirstDifference(got, want)
			}
		}
		if r.lines != nil {
			if want, got := r.expectedLines(t), r.actualLines(t); want != got {
				return false, "orders_with_lines not converged:" + testbed.FirstDifference(got, want)
			}
		}
		return true, ""
	})
}

func (r *rollup) verifier(t *testing.T, p *projections.Projection) *verify.Verifier {
	src, err := verify.OpenSource(r.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return verify.New(p, src, r.sink, verify.Options{ChunkRows: 40, Settle: 8 * time.Second, Ends: projector.Ends(r.cfg.Kafka.Brokers), Log: logger()})
}

// shardOf is the shard holding a read row whose shard_by value is v.
func (r *rollup) shardOf(v int) int {
	for i, sh := range r.sink.Shards {
		if sh.Range.Contains(keyspace.ID([]byte(fmt.Sprint(v)))) {
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

// column is the values of a one-column rowsText.
func column(text string) []string { return strings.Fields(strings.ReplaceAll(text, "|", " ")) }

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

// TestVerifyAggregates: after a live workload that moves orders between
// customers, changes amounts and deletes and re-inserts orders,
// customer_stats verifies EQUAL (chunked by group key over two shards).
// Group rows corrupted on the sink (a changed total, an average off in
// its last digit, a deleted group, a
// group the source does not have) and groups whose contributions are
// stale (orders deleted, inserted and moved on the source without the
// binlog: events the projector never got) are each named, and so are a
// group's joined column edited on the sink and a customer renamed on the
// source without the binlog. --repair rebuilds those groups from their
// contributions, withdraws the deleted order's, re-publishes the rest and
// the renamed customer; then verify is EQUAL and the next live changes
// are still exact.
func TestVerifyAggregates(t *testing.T) {
	bed := testbed.Get(t)
	r := newRollup(t, bed, "customer_stats")
	r.run(t)
	const customers, orders = 60, 600
	r.load(t, customers, orders)
	r.churn(t, customers, orders, 4*time.Second)
	r.waitConverged(t, 3*time.Minute)
	stats := r.verifier(t, r.stats)
	if rep := runVerify(t, stats); rep.Drift() != 0 || rep.Unsettled != 0 || rep.Chunks < 2 {
		t.Fatalf("converged projection: drift %d, unsettled %d in %d chunks (want none in several chunks)", rep.Drift(), rep.Unsettled, rep.Chunks)
	}
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, r.cfg.Source.DSN.Reveal(), r.cfg.Source.TLS, r.cfg.Source.Snapshot.SignalDB, r.cfg.Source.ServerID, table, where)
	}

	// Corrupt the aggregate. On the sink: a changed total, a deleted group
	// row, and customer 999, which the source does not have (a copy of
	// another group's row, so every hidden column is well formed). On the
	// source, without the binlog (events the projector never gets): an
	// order deleted, one inserted, one moved to another customer, one
	// moved to another customer as a draft — the contributions the sink
	// keeps for them are stale.
	groups := column(rowsText(t, "SELECT customer_id FROM `"+r.src+"`.orders WHERE status <> 'draft' GROUP BY customer_id HAVING COUNT(*) > 2 ORDER BY 1"))
	if len(groups) < 12 {
		t.Fatalf("only %d customers with 3 orders or more", len(groups))
	}
	atoi := func(s string) int {
		var n int
		fmt.Sscan(s, &n)
		return n
	}
	changed, gone, copied, lostDel, lostIns, moveFrom, moveTo, leftFilter, draftTo := groups[1], groups[2], groups[3], groups[4], groups[5], groups[6], groups[7], groups[8], groups[9]
	// Customers with odd ids exist (load): the renamed one must.
	rest := groups[10:]
	i := slices.IndexFunc(rest, func(g string) bool { return atoi(g)%2 == 1 })
	if i < 0 {
		t.Fatalf("no existing customer among %q", rest)
	}
	renamed, relabeled := rest[i], rest[(i+1)%len(rest)]
	r.shardExec(t, r.shardOf(atoi(changed)), "UPDATE customer_stats SET total_cents = total_cents + 1 WHERE customer_id = ?", changed)
	r.shardExec(t, r.shardOf(atoi(relabeled)), "UPDATE customer_stats SET customer_name = 'edited on the sink' WHERE customer_id = ?", relabeled)
	// The last digit of an average's scale: compared as exact text.
	lastDigit := groups[0]
	r.shardExec(t, r.shardOf(atoi(lastDigit)), "UPDATE customer_stats SET avg_cents = avg_cents + 0.0001 WHERE customer_id = ?", lastDigit)
	r.shardExec(t, r.shardOf(atoi(gone)), "DELETE FROM customer_stats WHERE customer_id = ?", gone)
	const ghost = 999
	conn, err := r.sink.Shards[r.shardOf(atoi(copied))].DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE TEMPORARY TABLE ghost AS SELECT * FROM `" + r.shards[r.shardOf(atoi(copied))] + "`.customer_stats WHERE customer_id = " + copied,
		fmt.Sprintf("UPDATE ghost SET customer_id = %d", ghost),
		"INSERT INTO `" + r.shards[r.shardOf(ghost)] + "`.customer_stats SELECT * FROM ghost",
	} {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	o := "`" + r.src + "`.orders"
	testbed.Unlogged(t, r.bed.MySQL.DB(),
		"DELETE FROM "+o+" WHERE status <> 'draft' AND customer_id = "+lostDel+" ORDER BY id LIMIT 1",
		"INSERT INTO "+o+" VALUES (100000, "+lostIns+", 'paid', 123456, '2020-01-01 00:00:00')",
		"UPDATE "+o+" SET customer_id = "+moveTo+" WHERE status <> 'draft' AND customer_id = "+moveFrom+" ORDER BY id LIMIT 1",
		// Out of the filter and into a group that does not change: only the
		// sink's contribution says where this order was.
		"UPDATE "+o+" SET customer_id = "+draftTo+", status = 'draft' WHERE status <> 'draft' AND customer_id = "+leftFilter+" ORDER BY id LIMIT 1",
		// A parent change the projector never gets: only re-publishing the
		// customer fixes the join's state.
		"UPDATE `"+r.src+"`.customers SET name = 'renamed unlogged' WHERE id = "+renamed,
	)
	rep := runVerify(t, stats)
	var got []string
	for _, d := range rep.Samples {
		got = append(got, d.Kind+" "+d.Key["customer_id"])
		for id, col := range map[string]string{changed: "total_cents", renamed: "customer_name", relabeled: "customer_name", lastDigit: "avg_cents"} {
			if d.Key["customer_id"] == id && (len(d.Columns) != 1 || d.Columns[0].Name != col) {
				t.Errorf("customer %s: differing columns %+v, want %s only", id, d.Columns, col)
			}
		}
	}
	slices.Sort(got)
	want := []string{"different " + changed, "different " + lostDel, "different " + lostIns, "different " + moveFrom, "different " + moveTo, "different " + leftFilter, "different " + renamed, "different " + relabeled, "different " + lastDigit, "extra 999", "missing " + gone}
	slices.Sort(want)
	if rep.Drift() != int64(len(want)) || strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("corrupted customer_stats: got %q, want %q", got, want)
	}
	res, err := stats.Repair(t.Context(), rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair of customer_stats: %+v", *res)
	if res.Remaining != 0 || res.Rebuilt != len(want) || res.Withdrawn != 1 || res.ParentKeys != 2 {
		t.Fatalf("repair of customer_stats: %d keys left differing, %d groups rebuilt (want %d), %d contributions withdrawn (want 1: the order deleted without the binlog), %d customers re-published (want 2: the renamed one, the edited one)",
			res.Remaining, res.Rebuilt, len(want), res.Withdrawn, res.ParentKeys)
	}
	if rep := runVerify(t, stats); rep.Drift() != 0 {
		t.Fatalf("customer_stats after repair: drift %d", rep.Drift())
	}
	// Live changes to the repaired groups are exact: the contributions
	// agree with the group rows again.
	r.exec(t, "UPDATE "+o+" SET total_cents = total_cents + 1000 WHERE customer_id IN ("+strings.Join([]string{changed, gone, lostDel, lostIns, moveFrom, moveTo}, ", ")+")")
	r.exec(t, "UPDATE "+o+" SET customer_id = "+moveFrom+" WHERE customer_id = "+moveTo+" AND status <> 'draft' ORDER BY id LIMIT 2")
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		want, got := r.expectedStats(t), r.actualStats(t)
		return want == got, "customer_stats after repair and live changes:" + testbed.FirstDifference(got, want)
	})
	// Every shard stores every contribution: the withdrawal of the order
	// deleted without the binlog reached the shards that do not hold its
	// group too, so the contributions tables are the same everywhere.
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		first := testbed.RowsText(t, r.bed.MySQL.DB(), "SELECT * FROM `"+r.shards[0]+"`.`_readside_agg_customer_stats` ORDER BY `key_text`")
		for _, db := range r.shards[1:] {
			if got := testbed.RowsText(t, r.bed.MySQL.DB(), "SELECT * FROM `"+db+"`.`_readside_agg_customer_stats` ORDER BY `key_text`"); got != first {
				return false, "the shards' contributions differ after the repair: " + testbed.FirstDifference(got, first)
			}
		}
		return true, ""
	})
}

// TestVerifyChildren: after a live workload that adds, changes, moves and
// deletes order lines, orders_with_lines verifies EQUAL (chunked by order
// id over two shards). An array and a count edited by hand on the sink,
// a row deleted there, and orders whose child state is stale (a line
// deleted and one added on the source without the binlog) are each
// named; --repair re-publishes
// those orders and their lines through the tailer and withdraws the
// deleted line's state; then verify is EQUAL and the next live changes
// are still exact.
func TestVerifyChildren(t *testing.T) {
	bed := testbed.Get(t)
	r := newRollup(t, bed, "orders_with_lines")
	r.run(t)
	const customers, orders = 60, 600
	r.load(t, customers, orders)
	r.churn(t, customers, orders, 4*time.Second)
	r.waitConverged(t, 3*time.Minute)
	lines := r.verifier(t, r.lines)
	if rep := runVerify(t, lines); rep.Drift() != 0 || rep.Unsettled != 0 || rep.Chunks < 2 {
		t.Fatalf("converged projection: drift %d, unsettled %d in %d chunks (want none in several chunks)", rep.Drift(), rep.Unsettled, rep.Chunks)
	}
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, r.cfg.Source.DSN.Reveal(), r.cfg.Source.TLS, r.cfg.Source.Snapshot.SignalDB, r.cfg.Source.ServerID, table, where)
	}

	// Corrupt the children. On the sink: the array of one order, the count
	// of another, the whole row of a fifth. On the source, without the binlog (events the projector
	// never gets): a line of a third order deleted, a line added to a
	// fourth — the sink's child state of those is stale.
	withLines := column(rowsText(t, "SELECT l.order_id FROM `"+r.src+"`.order_lines l JOIN `"+r.src+"`.orders o ON o.id = l.order_id GROUP BY l.order_id HAVING COUNT(*) > 1 ORDER BY 1"))
	if len(withLines) < 5 {
		t.Fatalf("only %d orders with 2 lines or more", len(withLines))
	}
	arrayOf, countOf, lostDel, lostIns := withLines[1], withLines[len(withLines)-1], withLines[2], withLines[3]
	var oid int
	fmt.Sscan(arrayOf, &oid)
	r.shardExec(t, r.shardOf(oid), "UPDATE orders_with_lines SET `lines` = JSON_ARRAY(JSON_OBJECT('qty', 1, 'sku', 'forged')) WHERE id = ?", oid)
	fmt.Sscan(countOf, &oid)
	r.shardExec(t, r.shardOf(oid), "UPDATE orders_with_lines SET lines_count = lines_count + 5 WHERE id = ?", oid)
	rowGone := withLines[4]
	fmt.Sscan(rowGone, &oid)
	r.shardExec(t, r.shardOf(oid), "DELETE FROM orders_with_lines WHERE id = ?", oid)
	l := "`" + r.src + "`.order_lines"
	testbed.Unlogged(t, r.bed.MySQL.DB(),
		"DELETE FROM "+l+" WHERE order_id = "+lostDel+" ORDER BY line_no LIMIT 1",
		"INSERT INTO "+l+" VALUES ("+lostIns+", -1, 'unlogged', 7)")
	rep := runVerify(t, lines)
	var got []string
	for _, d := range rep.Samples {
		line := d.Kind + " " + d.Key["id"]
		if id := d.Key["id"]; id == arrayOf || id == countOf {
			for _, c := range d.Columns {
				line += " " + c.Name
			}
		}
		got = append(got, line)
	}
	slices.Sort(got)
	want := []string{"different " + arrayOf + " lines", "different " + countOf + " lines_count", "different " + lostDel, "different " + lostIns, "missing " + rowGone}
	slices.Sort(want)
	if rep.Drift() != 5 || strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("corrupted orders_with_lines: got %q, want %q", got, want)
	}
	res, err := lines.Repair(t.Context(), rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair of orders_with_lines: %+v", *res)
	// Every shard keeps every child's state: the deleted line's is
	// withdrawn on each.
	if res.Remaining != 0 || res.ChildParents != 5 || res.Withdrawn != len(r.shards) {
		t.Fatalf("repair of orders_with_lines: %d keys left differing, lines of %d orders re-published (want 5), %d child states withdrawn (want %d: the unlogged delete's, per shard)",
			res.Remaining, res.ChildParents, res.Withdrawn, len(r.shards))
	}
	if rep := runVerify(t, lines); rep.Drift() != 0 {
		t.Fatalf("orders_with_lines after repair: drift %d", rep.Drift())
	}

	// The next live changes to the repaired order are exact.
	// The new lines go before the first and after the last line the
	// order has (the churn may have used any line number).
	fmt.Sscan(arrayOf, &oid)
	r.exec(t, "INSERT INTO "+l+" SELECT ?, COALESCE(MIN(line_no), 1) - 1, 'first', 9 FROM "+l+" WHERE order_id = ?", oid, oid)
	fmt.Sscan(countOf, &oid)
	r.exec(t, "DELETE FROM "+l+" WHERE order_id = ? LIMIT 1", oid)
	fmt.Sscan(lostDel, &oid)
	r.exec(t, "INSERT INTO "+l+" SELECT ?, COALESCE(MAX(line_no), 98) + 1, 'last', 1 FROM "+l+" WHERE order_id = ?", oid, oid)
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		want, got := r.expectedLines(t), r.actualLines(t)
		return want == got, "orders_with_lines after repair and a live change:" + testbed.FirstDifference(got, want)
	})
}
