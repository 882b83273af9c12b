package projections_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// aggOrders is the aggregate projection the tests below run: every
// aggregate function, over decimals with NULLs, integers, dates and a
// case-insensitive string, with a filter that rows move in and out of.
var aggOrders = map[string]string{
	"orders":     "count(*)",
	"priced":     "count(amount)",
	"total":      "sum(amount)",
	"qty":        "sum(qty)",
	"first_at":   "min(created_at)",
	"last_at":    "max(created_at)",
	"paid":       "count_if(status = 'paid')",
	"paid_total": "sum_if(status = 'paid', amount)",
	"avg_amount": "avg(amount)",
	"avg_qty":    "avg(qty)",
	"min_note":   "min(note)",
	"max_note":   "max(note)",
	"day_max":    "max(DATE(created_at))",
}

const aggWhere = "status <> 'draft'"

// aggShop is a source orders table, an aggregate projection of it per
// customer, and its sink.
type aggShop struct {
	bed         *testbed.Bed
	cfg         config.Config
	src, sinkDB string
	p           *projections.Projection
	sink        *sinks.MySQL
	types       projections.Types
}

func newAggShop(t *testing.T, bed *testbed.Bed, extra func(*config.Projection)) *aggShop {
	t.Helper()
	ctx := t.Context()
	s := &aggShop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "aggsrc"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+s.src+"`.orders (id INT PRIMARY KEY, customer_id INT NOT NULL, "+
		"status VARCHAR(10) CHARACTER SET utf8mb4 NOT NULL, amount DECIMAL(12,2), qty INT NOT NULL, created_at DATETIME(3) NOT NULL, "+
		"note VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+s.src+"`.customers (id INT PRIMARY KEY, name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	s.cfg = bed.Config("agg", s.src+".orders", s.src+".customers")
	d := config.Projection{From: s.src + ".orders", Sink: "reads", GroupBy: []string{"customer_id"}, Where: aggWhere, Aggregates: aggOrders}
	if extra != nil {
		extra(&d)
	}
	s.cfg.Projections = map[string]config.Projection{"customer_stats": d}
	s.openSink(t)
	return s
}

// openSink points the shop at a fresh sink database with the read and
// contributions tables.
func (s *aggShop) openSink(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	var err error
	if s.sinkDB, err = s.bed.MySQL.CreateDatabase(ctx, "aggreads"); err != nil {
		t.Fatal(err)
	}
	s.cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(s.bed.MySQL.AdminDSN() + s.sinkDB)}}
	if err := s.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.p = ps[0]
	if s.types, err = s.p.SourceColumns(ctx, s.bed.MySQL.DB()); err != nil {
		t.Fatal(err)
	}
	if s.sink, err = sinks.Open(ctx, s.bed.MySQL.AdminDSN()+s.sinkDB); err != nil {
		t.Fatal(err)
	}
	sink := s.sink
	t.Cleanup(func() { sink.Close() })
	if err := s.sink.Exec(ctx, sinks.DDL(s.p, s.types)); err != nil {
		t.Fatal(err)
	}
}

// columns are the read columns compared: the group, then the aggregates.
func (s *aggShop) columns() []string {
	cols := append([]string{}, s.p.Key...)
	for _, a := range s.p.Aggregation.Aggregates {
		cols = append(cols, a.Column)
	}
	return cols
}

// expected is the GROUP BY query on the source, as text.
func (s *aggShop) expected(t *testing.T) string {
	t.Helper()
	var sel []string
	for _, c := range s.p.Columns {
		sel = append(sel, c.SQL(func(n string) string { return "`" + n + "`" }))
	}
	for _, a := range s.p.Aggregation.Aggregates {
		sel = append(sel, a.SQL(func(n string) string { return "`" + n + "`" }))
	}
	var group []string
	for i := range s.p.Key {
		group = append(group, fmt.Sprint(i+1))
	}
	where := ""
	if s.p.Where != nil {
		where = " WHERE " + s.p.Where.String()
	}
	return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT "+strings.Join(sel, ", ")+" FROM `"+s.src+"`.orders"+where+
		" GROUP BY "+strings.Join(group, ", ")+" ORDER BY "+strings.Join(group, ", "))
}

// actual is the read table, as text.
func (s *aggShop) actual(t *testing.T, db string) string {
	t.Helper()
	var order []string
	for i := range s.p.Key {
		order = append(order, fmt.Sprint(i+1))
	}
	return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT "+strings.Join(s.columns(), ", ")+" FROM `"+db+"`.`"+s.p.Table+"` ORDER BY "+strings.Join(order, ", "))
}

func (s *aggShop) waitEqual(t *testing.T, what string) {
	t.Helper()
	var rows int
	testbed.Eventually(t, 120*time.Second, func() (bool, string) {
		w, g := s.expected(t), s.actual(t, s.sinkDB)
		rows = strings.Count(w, "\n")
		return w == g, fmt.Sprintf("%s: read table differs from the source's GROUP BY: %s", what, testbed.FirstDifference(g, w))
	})
	t.Logf("%s: read table equals the source's GROUP BY: %d groups", what, rows)
}

var aggNotes = []string{"apple", "Banana", "cherry", "APPLE2", "banana3", "Zed", "éclair", "", "delta"}

// write runs a seeded workload of ops changes: inserts, amount and
// quantity changes, group moves, status flips in and out of the filter,
// deletes, re-inserts of deleted ids and primary-key changes.
func (s *aggShop) write(t *testing.T, seed uint64, ops, customers int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	db := s.bed.MySQL.DB()
	tbl := "`" + s.src + "`.orders"
	var ids []int
	rows, err := db.QueryContext(t.Context(), "SELECT id FROM "+tbl)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	sort.Ints(ids)
	next := 1
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	statuses := []string{"paid", "open", "draft", "paid", "shipped"}
	amount := func() any {
		switch rng.IntN(6) {
		case 0:
			return nil
		case 1:
			return fmt.Sprintf("-%d.%02d", rng.IntN(100000), rng.IntN(100))
		case 2:
			return fmt.Sprintf("9999999%03d.99", rng.IntN(1000))
		}
		return fmt.Sprintf("%d.%02d", rng.IntN(1000), rng.IntN(100))
	}
	note := func() any {
		if rng.IntN(5) == 0 {
			return nil
		}
		return aggNotes[rng.IntN(len(aggNotes))]
	}
	at := func() string {
		return time.Date(2020+rng.IntN(5), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000)*1e6, time.UTC).Format("2006-01-02 15:04:05.000")
	}
	exec := func(q string, args ...any) {
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	deleted := []int{}
	for range ops {
		if len(ids) < 5 || rng.IntN(4) == 0 {
			id := next
			if len(deleted) > 0 && rng.IntN(3) == 0 {
				id, deleted = deleted[len(deleted)-1], deleted[:len(deleted)-1]
			} else {
				next++
			}
			exec("INSERT INTO "+tbl+" VALUES (?, ?, ?, ?, ?, ?, ?)", id, 1+rng.IntN(customers), statuses[rng.IntN(len(statuses))], amount(), rng.IntN(50)-10, at(), note())
			ids = append(ids, id)
			continue
		}
		i := rng.IntN(len(ids))
		id := ids[i]
		switch rng.IntN(8) {
		case 0:
			exec("DELETE FROM "+tbl+" WHERE id = ?", id)
			ids = append(ids[:i], ids[i+1:]...)
			deleted = append(deleted, id)
		case 1:
			exec("UPDATE "+tbl+" SET customer_id = ? WHERE id = ?", 1+rng.IntN(customers), id)
		case 2:
			exec("UPDATE "+tbl+" SET status = ? WHERE id = ?", statuses[rng.IntN(len(statuses))], id)
		case 3: // a primary-key change: the old key's delete, the new key's create
			exec("UPDATE "+tbl+" SET id = ? WHERE id = ?", next, id)
			ids[i] = next
			next++
		case 4:
			exec("UPDATE "+tbl+" SET note = ?, created_at = ? WHERE id = ?", note(), at(), id)
		default:
			exec("UPDATE "+tbl+" SET amount = ?, qty = ? WHERE id = ?", amount(), rng.IntN(50)-10, id)
		}
	}
}

// TestAggregateLive: an aggregate projection per customer with every
// aggregate function, while a seeded workload inserts, changes summed
// values, moves orders between customers and in and out of the filter,
// deletes, re-inserts and re-keys them, and truncates the table midway,
// with the projector restarted. The read table ends equal to the GROUP
// BY query on the source. Then the whole history, shuffled across
// batches with a fifth duplicated, applied to a fresh sink, gives the
// same table.
func TestAggregateLive(t *testing.T) {
	bed := testbed.Get(t)
	s := newAggShop(t, bed, nil)
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.write(t, seed, 600, 8)
	s.waitEqual(t, "after the first load")
	if err := bed.MySQL.Exec(t.Context(), "TRUNCATE TABLE `"+s.src+"`.orders"); err != nil {
		t.Fatal(err)
	}
	s.write(t, seed+1, 300, 8)
	stop()
	s.write(t, seed+2, 300, 8)
	stop = startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.waitEqual(t, "after a truncate, more load and a restart")
	stop()

	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topic)
	live := s.sinkDB
	s.openSink(t)
	applyShuffled(t, s.sink, []*projections.Projection{s.p}, records, rand.New(rand.NewPCG(seed, 9)))
	if want, got := s.expected(t), s.actual(t, s.sinkDB); want != got {
		t.Fatalf("shuffled history with duplicates differs from the GROUP BY: %s", testbed.FirstDifference(got, want))
	}
	if a, b := s.actual(t, live), s.actual(t, s.sinkDB); a != b {
		t.Fatalf("shuffled replay differs from the live table: %s", testbed.FirstDifference(b, a))
	}
	t.Logf("shuffled history (%d records) equals the GROUP BY", len(records))
}

// writeCustomers runs a seeded workload on the customers of the groups:
// inserts, renames, deletes and re-inserts.
func (s *aggShop) writeCustomers(t *testing.T, seed uint64, ops, customers int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	tbl := "`" + s.src + "`.customers"
	for range ops {
		id := 1 + rng.IntN(customers)
		var q string
		switch rng.IntN(4) {
		case 0:
			q = "DELETE FROM " + tbl + " WHERE id = ?"
		default:
			q = "INSERT INTO " + tbl + " VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)"
		}
		args := []any{id}
		if !strings.HasPrefix(q, "DELETE") {
			args = append(args, fmt.Sprintf("customer %d rev %d", id, rng.IntN(1000)))
		}
		if _, err := s.bed.MySQL.DB().ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestAggregateJoin: a per-customer aggregate with the customer's name
// joined (the group's descriptive column), while orders move between
// customers, groups empty and come back, and customers are renamed,
// deleted and re-inserted, with a truncate of the orders midway: the read
// table equals the GROUP BY of orders LEFT JOIN customers, live and after
// the whole history of both tables is applied shuffled with duplicates.
func TestAggregateJoin(t *testing.T) {
	bed := testbed.Get(t)
	s := newAggShop(t, bed, func(d *config.Projection) {
		d.Aggregates = map[string]string{"orders": "count(*)", "total": "sum(amount)", "last_at": "max(created_at)"}
		d.Join = []config.Join{{From: d.From[:strings.Index(d.From, ".")] + ".customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_name": "name"}}}
	})
	expected := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT o.customer_id, c.name, COUNT(*), SUM(o.amount), MAX(o.created_at) FROM `"+s.src+"`.orders o "+
			"LEFT JOIN `"+s.src+"`.customers c ON c.id = o.customer_id WHERE o.status <> 'draft' GROUP BY o.customer_id, c.name ORDER BY 1")
	}
	actual := func(db string) string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT customer_id, customer_name, orders, total, last_at FROM `"+db+"`.customer_stats ORDER BY 1")
	}
	wait := func(what string) {
		t.Helper()
		testbed.Eventually(t, 120*time.Second, func() (bool, string) {
			w, g := expected(), actual(s.sinkDB)
			return w == g, fmt.Sprintf("%s: read table differs from the GROUP BY of the join: %s", what, testbed.FirstDifference(g, w))
		})
		t.Logf("%s: read table equals the GROUP BY of orders LEFT JOIN customers", what)
	}
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.writeCustomers(t, seed, 10, 6)
	s.write(t, seed, 300, 6)
	s.writeCustomers(t, seed+1, 20, 6)
	s.write(t, seed+1, 200, 6)
	wait("after orders and customer changes")
	if err := bed.MySQL.Exec(t.Context(), "TRUNCATE TABLE `"+s.src+"`.orders"); err != nil {
		t.Fatal(err)
	}
	s.writeCustomers(t, seed+2, 20, 6)
	s.write(t, seed+2, 200, 6)
	wait("after a truncate of the orders")
	// A group that empties and comes back is a new read row: it must get
	// its customer's name with no change of the customer to bring it.
	if err := bed.MySQL.Exec(t.Context(), "INSERT INTO `"+s.src+"`.customers VALUES (7, 'seventh') ON DUPLICATE KEY UPDATE name = 'seventh'",
		"INSERT INTO `"+s.src+"`.orders VALUES (100001, 7, 'paid', 1.00, 1, '2024-01-01', NULL)"); err != nil {
		t.Fatal(err)
	}
	wait("a new group of an existing customer")
	if err := bed.MySQL.Exec(t.Context(), "DELETE FROM `"+s.src+"`.orders WHERE customer_id = 7"); err != nil {
		t.Fatal(err)
	}
	wait("the group emptied")
	if err := bed.MySQL.Exec(t.Context(), "INSERT INTO `"+s.src+"`.orders VALUES (100002, 7, 'open', 2.00, 1, '2024-01-02', NULL)"); err != nil {
		t.Fatal(err)
	}
	wait("the group back")
	stop()

	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topics()...)
	s.openSink(t)
	applyShuffled(t, s.sink, []*projections.Projection{s.p}, records, rand.New(rand.NewPCG(seed, 12)))
	if want, got := expected(), actual(s.sinkDB); want != got {
		t.Fatalf("shuffled history with duplicates differs from the GROUP BY of the join: %s", testbed.FirstDifference(got, want))
	}
}

// TestAggregateExpressionGroup: a group that is an expression
// (DATE(created_at)) beside a column: rows move between days as their
// created_at changes; live and shuffled with duplicates, the read table
// equals the GROUP BY of the same expression.
func TestAggregateExpressionGroup(t *testing.T) {
	bed := testbed.Get(t)
	s := newAggShop(t, bed, func(d *config.Projection) {
		d.GroupBy = []string{"customer_id", "DATE(created_at)"}
		d.Aggregates = map[string]string{"orders": "count(*)", "total": "sum(amount)", "first_at": "min(created_at)", "notes": "max(note)"}
	})
	if got := strings.Join(s.p.Key, ","); got != "customer_id,date_created_at" {
		t.Fatalf("group columns %s", got)
	}
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.write(t, seed, 500, 3)
	s.waitEqual(t, "live")
	stop()
	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topic)
	s.openSink(t)
	applyShuffled(t, s.sink, []*projections.Projection{s.p}, records, rand.New(rand.NewPCG(seed, 13)))
	if want, got := s.expected(t), s.actual(t, s.sinkDB); want != got {
		t.Fatalf("shuffled history differs from the GROUP BY: %s", testbed.FirstDifference(got, want))
	}
}
