package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// shopAggSchema is the shop of issue 27's acceptance: customers, orders
// (a nullable customer, amounts, dates) and order lines (a nullable
// order). %[1]s is the source database.
var shopAggSchema = []string{
	"CREATE TABLE `%[1]s`.customers (id INT PRIMARY KEY, name VARCHAR(60) CHARACTER SET utf8mb4 NOT NULL)",
	"CREATE TABLE `%[1]s`.orders (id BIGINT PRIMARY KEY, customer_id INT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL," +
		" created_at DATETIME(6) NOT NULL, KEY (customer_id))",
	"CREATE TABLE `%[1]s`.order_lines (id BIGINT PRIMARY KEY, order_id BIGINT NULL, line_no INT NOT NULL, sku VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL," +
		" qty INT NOT NULL, KEY (order_id))",
}

// shopAggProjections are a per-customer aggregate over the orders not in
// draft (distinct counts included) and the orders with their customer's name and their lines nested
// (ordered by line number, at most 5). The element members are declared
// in name order, the order JSON_OBJECT renders them in.
const shopAggProjections = `  customer_order_stats:
    from: %[1]s.orders
    sink: reads
    group_by: [customer_id]
    where: "customer_id IS NOT NULL AND status <> 'draft'"
    aggregates: {orders: "count(*)", total_cents: "sum(total_cents)", first_order_at: "min(created_at)",
                 last_order_at: "max(created_at)", paid_orders: "count_if(status = 'paid')", avg_cents: "avg(total_cents)",
                 statuses: "count(distinct status)", order_days: "count(distinct DATE(created_at))"}
  orders_with_lines:
    from: %[1]s.orders
    sink: reads
    key: [id]
    columns: {id: id, customer_id: customer_id, status: status, total_cents: total_cents}
    join:
      - from: %[1]s.customers
        on: {id: customer_id}
        columns: {customer_name: name}
    children:
      lines:
        from: %[1]s.order_lines
        on: {order_id: id}
        columns: {qty: qty, sku: sku}
        order_by: [line_no]
        limit: 5
`

// shopAggExpectations are the two read tables as GROUP BY and
// JSON_ARRAYAGG on the source compute them (ties of line_no broken by the
// line's primary key, as readside breaks them).
func shopAggExpectations(src, sink string) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	return []struct{ name, want, got string }{
		{"customer_order_stats",
			"SELECT customer_id, COUNT(*), SUM(total_cents), MIN(created_at), MAX(created_at), COUNT(CASE WHEN status = 'paid' THEN 1 END), AVG(total_cents)," +
				" COUNT(DISTINCT status), COUNT(DISTINCT DATE(created_at))" +
				" FROM " + q("orders") + " WHERE customer_id IS NOT NULL AND status <> 'draft' GROUP BY customer_id ORDER BY 1",
			"SELECT customer_id, orders, total_cents, first_order_at, last_order_at, paid_orders, avg_cents, statuses, order_days FROM `" + sink + "`.customer_order_stats ORDER BY 1"},
		{"orders_with_lines",
			"SELECT o.id, o.customer_id, o.status, o.total_cents, c.name," +
				" (SELECT JSON_ARRAYAGG(JSON_OBJECT('qty', l.qty, 'sku', l.sku) ORDER BY l.line_no, l.id LIMIT 5) FROM " + q("order_lines") + " l WHERE l.order_id = o.id)," +
				" (SELECT COUNT(*) FROM " + q("order_lines") + " l WHERE l.order_id = o.id)" +
				" FROM " + q("orders") + " o LEFT JOIN " + q("customers") + " c ON c.id = o.customer_id ORDER BY 1",
			"SELECT id, customer_id, status, total_cents, customer_name, `lines`, lines_count FROM `" + sink + "`.orders_with_lines ORDER BY 1"},
	}
}

// createShopAgg creates shopAggSchema in src and returns its tables.
func createShopAgg(t *testing.T, bed *testbed.Bed, src string) []string {
	t.Helper()
	var stmts []string
	for _, s := range shopAggSchema {
		stmts = append(stmts, fmt.Sprintf(s, src))
	}
	if err := bed.MySQL.Exec(t.Context(), stmts...); err != nil {
		t.Fatal(err)
	}
	return []string{src + ".customers", src + ".orders", src + ".order_lines"}
}

// TestAggregatesChildrenKill9Shuffled is issue 27's acceptance on the
// real binary, real MariaDB and real Kafka: a seeded random shop history
// — orders moved between customers (and to none), amounts, statuses and
// dates changed, orders deleted, re-inserted and re-keyed, lines added,
// moved between orders, re-numbered and deleted — while `readside run` is
// SIGKILLed at least three times converges to the SQL expectation
// (GROUP BY, JSON_ARRAYAGG), and `readside verify` says EQUAL. Then the
// same history, shuffled with a fifth of it duplicated, is consumed from
// topics of its own by a projector SIGKILLed three more times, into a
// second sink: it converges to the same expectation. Late, duplicated and
// reordered events may change a counter only through the version check.
func TestAggregatesChildrenKill9Shuffled(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sink := sourceAndSinkDBs(t, bed, "agg")
	tables := createShopAgg(t, bed, src)
	dir := t.TempDir()
	head := bedConfigHead(bed, tables, "agg", filepath.Join(dir, "data"), sink)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(head+fmt.Sprintf(shopAggProjections, src)), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	prefix := topicPrefixOf(t, head)
	waitForCheckpoint(t, bed, prefix)

	seed := seedFromEnv(t)
	target := envInt("E2E_AGG_CHANGES", 8_000)
	werr, changes := make(chan error, 1), make(chan int, 1)
	go func() {
		n, err := shopAggWorkload(ctx, bed.MySQL.DB(), src, rand.New(rand.NewPCG(seed, 41)), target)
		changes <- n
		werr <- err
	}()
	kills := d.killWhile(rand.New(rand.NewPCG(seed, 42)), werr, 3)
	t.Logf("%d row changes, %d SIGKILLs of readside run", <-changes, kills)

	utc := utcDB(t, bed)
	waitExpected(t, utc, shopAggExpectations(src, sink), logPath)
	expectReadside(t, cfgPath, "after the kills", "verify", 0, "customer_order_stats: EQUAL", "orders_with_lines: EQUAL")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}

	// The same history, shuffled with duplicates, through topics of its own.
	p, log2, sink2 := shuffledRun{seed: seed, dir: dir, prefix: prefix, src: src, sink: sink, sink2: "agg_r2", head: head,
		projections: shopAggProjections, tables: []string{"customers", "orders", "order_lines"}}.run(t, bed)
	waitExpected(t, utc, shopAggExpectations(src, sink2), log2)
	if code := p.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(log2))
	}
}

// shopAggWorkload runs transactions of 1–5 random statements until target
// row changes have committed. Few customers and orders, so groups and
// parents see many changes each.
func shopAggWorkload(ctx context.Context, db *sql.DB, src string, rng *rand.Rand, target int) (int, error) {
	c, o, l := "`"+src+"`.customers", "`"+src+"`.orders", "`"+src+"`.order_lines"
	statuses := []string{"draft", "new", "paid", "shipped"}
	skus := []string{"A-1", "b-2", "Ä-3", "x\"4", "y'5", "ß-6"}
	return randomTxns(ctx, db, rng, target, 5, func(i int) (string, []any) {
		cid, oid, lid := 1+rng.IntN(60), 1+rng.IntN(800), 1+rng.IntN(2500)
		var customer any = cid
		if rng.IntN(10) == 0 {
			customer = nil
		}
		var order any = oid
		if rng.IntN(20) == 0 {
			order = nil
		}
		// Any second of 2024, with microseconds: minimums and maximums
		// are rarely tied.
		created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(366*86400)) * time.Second).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
		switch x := rng.IntN(100); {
		case x < 4:
			return "INSERT INTO " + c + " VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)", []any{cid, fmt.Sprintf("Kunde %d-%d", cid, i)}
		case x < 26:
			return "INSERT INTO " + o + " VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE total_cents = VALUES(total_cents), status = VALUES(status)",
				[]any{oid, customer, statuses[rng.IntN(4)], rng.Int64N(100_000) - 500, created}
		case x < 33:
			return "UPDATE " + o + " SET status = ? WHERE id = ?", []any{statuses[rng.IntN(4)], oid}
		case x < 41:
			return "UPDATE " + o + " SET customer_id = ? WHERE id = ?", []any{customer, oid}
		case x < 47:
			return "UPDATE " + o + " SET total_cents = total_cents + ? WHERE customer_id = ?", []any{rng.IntN(2000) - 1000, cid}
		case x < 51:
			return "UPDATE " + o + " SET created_at = ? WHERE id = ?", []any{created, oid}
		case x < 53:
			// A source primary-key change: a retraction under the old key
			// and a contribution under the new one; the lines of the new
			// id are its children now.
			return "UPDATE IGNORE " + o + " SET id = ? WHERE id = ?", []any{1 + rng.IntN(800), oid}
		case x < 58:
			return "DELETE FROM " + o + " WHERE id = ?", []any{oid}
		case x < 76:
			return "INSERT INTO " + l + " VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE qty = VALUES(qty), line_no = VALUES(line_no)",
				[]any{lid, order, rng.IntN(8), skus[rng.IntN(len(skus))], 1 + rng.IntN(9)}
		case x < 85:
			return "UPDATE " + l + " SET order_id = ? WHERE id = ?", []any{order, lid}
		case x < 92:
			return "UPDATE " + l + " SET qty = qty + 1, line_no = ? WHERE id = ?", []any{rng.IntN(8), lid}
		default:
			return "DELETE FROM " + l + " WHERE id = ?", []any{lid}
		}
	})
}
