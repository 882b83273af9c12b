package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// orderReadModels is what the tests of projections over Debezium topics
// share: customers and orders on the source (every column type
// orderWorkload writes), a seeded workload over them whose first 40 steps
// run before readside starts (the snapshot's rows), and two projections
// on sink "reads": a copy with the customer's name joined, and an
// aggregate per customer. Each test brings the topics' format and faults.
type orderReadModels struct {
	bed      *testbed.Bed
	db, sink string
	o, c     string // the source tables, quoted
	w        *orderWorkload
	seed     uint64
	done     atomic.Int64 // workload steps run by writeInBackground
}

// newOrderReadModels creates the source and sink databases (named after
// name), the tables and the snapshot's rows; stream tells the tests'
// random streams apart under one E2E_SEED.
func newOrderReadModels(t *testing.T, bed *testbed.Bed, name string, stream uint64) *orderReadModels {
	t.Helper()
	ctx := t.Context()
	m := &orderReadModels{bed: bed}
	var err error
	if m.db, err = bed.MySQL.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	if m.sink, err = bed.MySQL.CreateDatabase(ctx, name+"_r"); err != nil {
		t.Fatal(err)
	}
	m.o, m.c = "`"+m.db+"`.orders", "`"+m.db+"`.customers"
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+m.c+" (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
		"CREATE TABLE "+m.o+" (id INT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL,"+
			" placed DATETIME(6) NOT NULL, paid TIMESTAMP(3) NULL, flag BIT(1) NOT NULL, code VARBINARY(8), note VARCHAR(40))",
	); err != nil {
		t.Fatal(err)
	}
	m.seed = seedFromEnv(t)
	m.w = &orderWorkload{db: bed.MySQL.DB(), o: m.o, c: m.c, rng: rand.New(rand.NewPCG(m.seed, stream)), live: map[int]bool{}}
	for i := 0; i < 40; i++ {
		if err := m.w.step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// projections is the projections: block of the config, sink "reads".
func (m *orderReadModels) projections() string { return m.projectionsIn(m.sink, false, false) }

// projectionsIn is the projections: block with the read tables in
// database sink. With more, customer_orders too: each customer with its
// orders as a nested array (children). With added (after orderWorkload's
// ADD COLUMN: the projection maps the column, which must exist), also
// new_orders: a copy of the orders written after the ADD (ids above
// newOrderIDs) with the added column discount. Its where keeps every
// record written before the ADD out of it: those records lack the
// column, and a projection stops on a record without a column it maps
// (docs/debezium.md, "A column added while the connector streams").
func (m *orderReadModels) projectionsIn(sink string, more, added bool) string {
	out := fmt.Sprintf(`sinks:
  reads:
    dsn: "%s"
projections:
  orders_copy:
    from: %[2]s.orders
    sink: reads
    key: [id]
    columns: {id: id, customer_id: customer_id, amount: amount, placed: placed, paid: paid, flag: flag, code: code, note: note}
    join:
      - from: %[2]s.customers
        on: {id: customer_id}
        columns: {customer_name: name}
  customer_totals:
    from: %[2]s.orders
    sink: reads
    group_by: [customer_id]
    aggregates:
      orders: "count(*)"
      total: "sum(amount)"
      last_placed: "max(placed)"
`, m.bed.MySQL.AdminDSN()+sink, m.db)
	if more {
		out += fmt.Sprintf(`  customer_orders:
    from: %[1]s.customers
    sink: reads
    key: [id]
    columns: {id: id, name: name}
    children:
      orders:
        from: %[1]s.orders
        on: {customer_id: id}
        columns: {id: id, amount: amount, placed: placed, paid: paid, note: note}
        order_by: [placed]
`, m.db)
	}
	if added {
		out += fmt.Sprintf(`  new_orders:
    from: %[1]s.orders
    sink: reads
    key: [id]
    where: "id > %[2]d"
    columns: {id: id, customer_id: customer_id, amount: amount, discount: discount}
`, m.db, newOrderIDs)
	}
	return out
}

// readTable is one read table's rows and what SQL on the source says it
// should hold, one line per row.
type readTable struct{ name, got, want string }

// tables reads the read tables in database sink (with more, those of
// projectionsIn's more too) and their expected rows.
func (m *orderReadModels) tables(t *testing.T, sink string, more bool) []readTable {
	t.Helper()
	q := func(s string) string { return queryText(t, m.bed.MySQL.DB(), s) }
	r := "`" + sink + "`"
	out := []readTable{
		{"orders_copy",
			q("SELECT id, customer_id, amount, placed, paid, flag+0, HEX(code), note, customer_name FROM " + r + ".orders_copy ORDER BY id"),
			q("SELECT o.id, o.customer_id, o.amount, o.placed, o.paid, o.flag+0, HEX(o.code), o.note, c.name FROM " + m.o + " o LEFT JOIN " + m.c + " c ON c.id = o.customer_id ORDER BY o.id")},
		{"customer_totals",
			q("SELECT customer_id, orders, total, last_placed FROM " + r + ".customer_totals ORDER BY customer_id"),
			q("SELECT customer_id, COUNT(*), SUM(amount), MAX(placed) FROM " + m.o + " GROUP BY customer_id ORDER BY customer_id")},
	}
	if !more {
		return out
	}
	var hasDiscount int
	if err := m.bed.MySQL.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'orders' AND COLUMN_NAME = 'discount'", m.db).Scan(&hasDiscount); err != nil {
		t.Fatal(err)
	}
	wantNew := ""
	if hasDiscount > 0 {
		wantNew = q(fmt.Sprintf("SELECT id, customer_id, amount, discount FROM %s WHERE id > %d ORDER BY id", m.o, newOrderIDs))
	}
	var hasNew int
	if err := m.bed.MySQL.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'new_orders'", sink).Scan(&hasNew); err != nil {
		t.Fatal(err)
	}
	gotNew := "(no read table new_orders)\n"
	if hasNew > 0 {
		gotNew = q("SELECT id, customer_id, amount, discount FROM " + r + ".new_orders ORDER BY id")
	}
	return append(out,
		readTable{"customer_orders",
			q("SELECT id, name, orders, orders_count FROM " + r + ".customer_orders ORDER BY id"),
			queryTextUTC(t, m.bed.MySQL.DB(), "SELECT c.id, c.name, (SELECT JSON_ARRAYAGG(JSON_OBJECT('amount', o.amount, 'id', o.id, 'note', o.note, 'paid', o.paid, 'placed', o.placed) ORDER BY o.placed, o.id) FROM "+m.o+" o WHERE o.customer_id = c.id),"+
				" (SELECT COUNT(*) FROM "+m.o+" o WHERE o.customer_id = c.id) FROM "+m.c+" c ORDER BY c.id")},
		readTable{"new_orders",
			gotNew, wantNew})
}

// equal is a condition for testbed.Eventually: the read tables equal
// SQL on the source, else the differences and logPath's tail.
func (m *orderReadModels) equal(t *testing.T, logPath string) func() (bool, string) {
	return m.equalIn(t, m.sink, false, logPath)
}

// equalIn is equal for the read tables in database sink (with more, as
// tables).
func (m *orderReadModels) equalIn(t *testing.T, sink string, more bool, logPath string) func() (bool, string) {
	return func() (bool, string) {
		// A daemon killed before it created its read tables creates them
		// on its next start: not there yet is not a difference.
		names := "'orders_copy', 'customer_totals'"
		want := 2
		if more {
			names, want = names+", 'customer_orders', 'new_orders'", 4
		}
		var n int
		if err := m.bed.MySQL.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ("+names+")", sink).Scan(&n); err != nil || n < want {
			return false, fmt.Sprintf("the read tables in %s are not all created yet (%v); log tail:\n%s", sink, err, tail(logPath))
		}
		var diffs []string
		for _, rt := range m.tables(t, sink, more) {
			if rt.got != rt.want {
				diffs = append(diffs, rt.name+": "+rowDiff(rt.got, rt.want, 10))
			}
		}
		if len(diffs) == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("read tables in %s differ from the source\n%s\nlog tail:\n%s", sink, strings.Join(diffs, "\n"), tail(logPath))
	}
}

// writeInBackground runs ops workload steps in a goroutine, counting them
// in m.done; the channel gets the first error or nil at the end.
func (m *orderReadModels) writeInBackground(ctx context.Context, ops int) <-chan error {
	werr := make(chan error, 1)
	go func() {
		for i := 0; i < ops; i++ {
			if err := m.w.step(ctx); err != nil {
				werr <- err
				return
			}
			m.done.Add(1)
		}
		werr <- nil
	}()
	return werr
}

// waitForSteps waits until the background workload has run n steps.
func (m *orderReadModels) waitForSteps(n int) {
	for m.done.Load() < int64(n) {
		time.Sleep(10 * time.Millisecond)
	}
}

// queryTextUTC is queryText in a session with time_zone '+00:00', the
// sink sessions' and readside verify's: a TIMESTAMP inside a JSON value
// (a children array) is text, written in that zone (the test bed's source
// runs in another).
func queryTextUTC(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "SET time_zone = DEFAULT")
	rows, err := conn.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	return rowsText(t, rows)
}
