package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
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
func (m *orderReadModels) projections() string {
	return fmt.Sprintf(`sinks:
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
`, m.bed.MySQL.AdminDSN()+m.sink, m.db)
}

// tables reads both read tables and what SQL on the source says they
// should hold, one line per row.
func (m *orderReadModels) tables(t *testing.T) (gotCopy, wantCopy, gotAgg, wantAgg string) {
	t.Helper()
	q := func(s string) string { return queryText(t, m.bed.MySQL.DB(), s) }
	r := "`" + m.sink + "`"
	wantCopy = q("SELECT o.id, o.customer_id, o.amount, o.placed, o.paid, o.flag+0, HEX(o.code), o.note, c.name FROM " + m.o + " o LEFT JOIN " + m.c + " c ON c.id = o.customer_id ORDER BY o.id")
	gotCopy = q("SELECT id, customer_id, amount, placed, paid, flag+0, HEX(code), note, customer_name FROM " + r + ".orders_copy ORDER BY id")
	wantAgg = q("SELECT customer_id, COUNT(*), SUM(amount), MAX(placed) FROM " + m.o + " GROUP BY customer_id ORDER BY customer_id")
	gotAgg = q("SELECT customer_id, orders, total, last_placed FROM " + r + ".customer_totals ORDER BY customer_id")
	return gotCopy, wantCopy, gotAgg, wantAgg
}

// equal is a condition for testbed.Eventually: both read tables equal
// SQL on the source, else the differences and logPath's tail.
func (m *orderReadModels) equal(t *testing.T, logPath string) func() (bool, string) {
	return func() (bool, string) {
		gotCopy, wantCopy, gotAgg, wantAgg := m.tables(t)
		if gotCopy == wantCopy && gotAgg == wantAgg {
			return true, ""
		}
		return false, fmt.Sprintf("read tables differ from the source\ncopy: %s\naggregate: %s\nlog tail:\n%s",
			rowDiff(gotCopy, wantCopy, 10), rowDiff(gotAgg, wantAgg, 10), tail(logPath))
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
