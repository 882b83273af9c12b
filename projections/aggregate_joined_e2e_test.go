package projections_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// rentalShop is a sakila-like source (payment → staff → store; payment →
// rental → inventory → film → category) and two aggregates whose groups
// come from joined parents: revenue per store and month (one join), and
// sales per film category (three joins through via).
type rentalShop struct {
	bed    *testbed.Bed
	cfg    config.Config
	src    string
	sinkDB string
	ps     []*projections.Projection
	sink   *sinks.MySQL
}

const (
	rentalStaff     = 6
	rentalStores    = 3
	rentalFilms     = 8
	rentalInventory = 16
	rentalRentals   = 30
	rentalCats      = 4
)

func newRentalShop(t *testing.T, bed *testbed.Bed) *rentalShop {
	t.Helper()
	ctx := t.Context()
	s := &rentalShop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "rentsrc"); err != nil {
		t.Fatal(err)
	}
	tbl := func(n string) string { return "`" + s.src + "`." + n }
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+tbl("staff")+" (staff_id INT PRIMARY KEY, store_id INT NULL)",
		"CREATE TABLE "+tbl("film")+" (film_id INT PRIMARY KEY, category_id INT NULL)",
		"CREATE TABLE "+tbl("inventory")+" (inventory_id INT PRIMARY KEY, film_id INT NOT NULL)",
		"CREATE TABLE "+tbl("rental")+" (rental_id INT PRIMARY KEY, inventory_id INT NOT NULL)",
		"CREATE TABLE "+tbl("payment")+" (payment_id INT PRIMARY KEY, customer_id INT NOT NULL, staff_id INT NULL, rental_id INT NULL, "+
			"amount DECIMAL(7,2) NULL, payment_date DATETIME NOT NULL)",
	); err != nil {
		t.Fatal(err)
	}
	s.cfg = bed.Config("rent", s.src+".payment", s.src+".staff", s.src+".film", s.src+".inventory", s.src+".rental")
	s.cfg.Projections = map[string]config.Projection{
		"revenue_by_store_month": {From: s.src + ".payment", Sink: "reads",
			Join:    []config.Join{{From: s.src + ".staff", As: "st", On: map[string]string{"staff_id": "staff_id"}, Columns: map[string]string{"store_id": "store_id"}}},
			GroupBy: []string{"store_id", "DATE_FORMAT(payment_date, '%Y-%m')"},
			// A distinct count moves with its rows too: a staff member's
			// move takes each customer's reference out of the old group.
			Aggregates: map[string]string{"revenue": "sum(amount)", "payments": "count(*)", "last_at": "max(payment_date)",
				"customers": "count(distinct customer_id)"}},
		"sales_by_category": {From: s.src + ".payment", Sink: "reads",
			Join: []config.Join{
				{From: s.src + ".rental", As: "r", On: map[string]string{"rental_id": "rental_id"}},
				{From: s.src + ".inventory", As: "i", Via: "r", On: map[string]string{"inventory_id": "inventory_id"}},
				{From: s.src + ".film", Via: "i", On: map[string]string{"film_id": "film_id"}, Columns: map[string]string{"category_id": "category_id"}},
			},
			GroupBy:    []string{"category_id"},
			Where:      "amount IS NOT NULL",
			Aggregates: map[string]string{"revenue": "sum(amount)", "payments": "count(*)", "smallest": "min(amount)"}},
	}
	// A group that is an expression over a joined column: category families.
	family := s.cfg.Projections["sales_by_category"]
	family.GroupBy, family.Where = []string{"category_id DIV 2"}, ""
	s.cfg.Projections["sales_by_family"] = family
	s.openSink(t)
	return s
}

// openSink points the shop at a fresh sink database with its tables.
func (s *rentalShop) openSink(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	var err error
	if s.sinkDB, err = s.bed.MySQL.CreateDatabase(ctx, "rentreads"); err != nil {
		t.Fatal(err)
	}
	s.cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(s.bed.MySQL.AdminDSN() + s.sinkDB)}}
	if err := s.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.ps, err = projections.Compile(s.cfg); err != nil {
		t.Fatal(err)
	}
	if s.sink, err = sinks.Open(ctx, s.bed.MySQL.AdminDSN()+s.sinkDB); err != nil {
		t.Fatal(err)
	}
	sink := s.sink
	t.Cleanup(func() { sink.Close() })
	for _, p := range s.ps {
		types, err := p.SourceColumns(ctx, s.bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
	}
}

// expected is each projection's GROUP BY over the inner joins on the
// source, a row with a missing parent or a NULL group column in no group.
func (s *rentalShop) expected(t *testing.T) string {
	t.Helper()
	db := s.bed.MySQL.DB()
	tbl := func(n string) string { return "`" + s.src + "`." + n }
	return testbed.RowsText(t, db, "SELECT st.store_id, DATE_FORMAT(p.payment_date, '%Y-%m'), SUM(p.amount), COUNT(*), MAX(p.payment_date), COUNT(DISTINCT p.customer_id) FROM "+tbl("payment")+" p "+
		"JOIN "+tbl("staff")+" st ON st.staff_id = p.staff_id WHERE st.store_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2") + "--\n" +
		testbed.RowsText(t, db, "SELECT f.category_id, SUM(p.amount), COUNT(*), MIN(p.amount) FROM "+tbl("payment")+" p "+
			"JOIN "+tbl("rental")+" r ON r.rental_id = p.rental_id JOIN "+tbl("inventory")+" i ON i.inventory_id = r.inventory_id "+
			"JOIN "+tbl("film")+" f ON f.film_id = i.film_id WHERE p.amount IS NOT NULL AND f.category_id IS NOT NULL GROUP BY 1 ORDER BY 1") + "--\n" +
		testbed.RowsText(t, db, "SELECT f.category_id DIV 2, SUM(p.amount), COUNT(*), MIN(p.amount) FROM "+tbl("payment")+" p "+
			"JOIN "+tbl("rental")+" r ON r.rental_id = p.rental_id JOIN "+tbl("inventory")+" i ON i.inventory_id = r.inventory_id "+
			"JOIN "+tbl("film")+" f ON f.film_id = i.film_id WHERE f.category_id DIV 2 IS NOT NULL GROUP BY 1 ORDER BY 1")
}

// actual is the two read tables in expected's shape.
func (s *rentalShop) actual(t *testing.T, db string) string {
	t.Helper()
	return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT store_id, date_format_payment_date_y_m, revenue, payments, last_at, customers FROM `"+db+"`.revenue_by_store_month ORDER BY 1, 2") + "--\n" +
		testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT category_id, revenue, payments, smallest FROM `"+db+"`.sales_by_category ORDER BY 1") + "--\n" +
		testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT category_id_div_2, revenue, payments, smallest FROM `"+db+"`.sales_by_family ORDER BY 1")
}

func (s *rentalShop) waitEqual(t *testing.T, what string) {
	t.Helper()
	testbed.Eventually(t, 120*time.Second, func() (bool, string) {
		w, g := s.expected(t), s.actual(t, s.sinkDB)
		return w == g, fmt.Sprintf("%s: read tables differ from the source's GROUP BY over the joins: %s", what, testbed.FirstDifference(g, w))
	})
	t.Logf("%s: read tables equal the source's GROUP BY over the joins: %d groups", what, strings.Count(s.expected(t), "\n")-1)
}

// write runs a seeded workload of ops changes over every table: payments
// inserted, changed, moved to other staff and rentals, deleted; staff
// moving store (or to none), deleted and re-inserted; films changing
// category (or to none); inventory moving film; rentals moving
// inventory; parents deleted and re-inserted.
func (s *rentalShop) write(t *testing.T, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 21))
	db := s.bed.MySQL.DB()
	tbl := func(n string) string { return "`" + s.src + "`." + n }
	exec := func(q string, args ...any) {
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	orNull := func(n, max int) any {
		if rng.IntN(n) == 0 {
			return nil
		}
		return 1 + rng.IntN(max)
	}
	amount := func() any {
		if rng.IntN(8) == 0 {
			return nil
		}
		return fmt.Sprintf("%d.%02d", rng.IntN(20), rng.IntN(100))
	}
	at := func() string {
		return time.Date(2024, time.Month(1+rng.IntN(4)), 1+rng.IntN(28), rng.IntN(24), 0, 0, 0, time.UTC).Format("2006-01-02 15:04:05")
	}
	for range ops {
		switch k := rng.IntN(20); {
		case k < 8: // a payment upserted
			exec("INSERT INTO "+tbl("payment")+" VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE staff_id = VALUES(staff_id), rental_id = VALUES(rental_id), amount = VALUES(amount), payment_date = VALUES(payment_date)",
				1+rng.IntN(120), 1+rng.IntN(9), orNull(10, rentalStaff+1), orNull(10, rentalRentals+1), amount(), at())
		case k < 10:
			exec("UPDATE "+tbl("payment")+" SET amount = ? WHERE payment_id = ?", amount(), 1+rng.IntN(120))
		case k < 11:
			exec("DELETE FROM "+tbl("payment")+" WHERE payment_id = ?", 1+rng.IntN(120))
		case k < 13: // a staff member moves store (or to none)
			exec("INSERT INTO "+tbl("staff")+" VALUES (?, ?) ON DUPLICATE KEY UPDATE store_id = VALUES(store_id)", 1+rng.IntN(rentalStaff), orNull(6, rentalStores))
		case k < 14:
			exec("DELETE FROM "+tbl("staff")+" WHERE staff_id = ?", 1+rng.IntN(rentalStaff))
		case k < 16: // a film changes category
			exec("INSERT INTO "+tbl("film")+" VALUES (?, ?) ON DUPLICATE KEY UPDATE category_id = VALUES(category_id)", 1+rng.IntN(rentalFilms), orNull(6, rentalCats))
		case k < 17:
			if rng.IntN(2) == 0 {
				exec("DELETE FROM "+tbl("film")+" WHERE film_id = ?", 1+rng.IntN(rentalFilms))
			} else {
				exec("DELETE FROM "+tbl("inventory")+" WHERE inventory_id = ?", 1+rng.IntN(rentalInventory))
			}
		case k < 18: // an inventory item moves to another film
			exec("INSERT INTO "+tbl("inventory")+" VALUES (?, ?) ON DUPLICATE KEY UPDATE film_id = VALUES(film_id)", 1+rng.IntN(rentalInventory), 1+rng.IntN(rentalFilms))
		default: // a rental moves to another inventory item
			exec("INSERT INTO "+tbl("rental")+" VALUES (?, ?) ON DUPLICATE KEY UPDATE inventory_id = VALUES(inventory_id)", 1+rng.IntN(rentalRentals), 1+rng.IntN(rentalInventory))
		}
	}
}

// seed fills every parent table.
func (s *rentalShop) seed(t *testing.T) {
	t.Helper()
	tbl := func(n string) string { return "`" + s.src + "`." + n }
	var stmts []string
	for i := 1; i <= rentalStaff; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", tbl("staff"), i, 1+i%rentalStores))
	}
	for i := 1; i <= rentalFilms; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", tbl("film"), i, 1+i%rentalCats))
	}
	for i := 1; i <= rentalInventory; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", tbl("inventory"), i, 1+i%rentalFilms))
	}
	for i := 1; i <= rentalRentals; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", tbl("rental"), i, 1+i%rentalInventory))
	}
	if err := s.bed.MySQL.Exec(t.Context(), stmts...); err != nil {
		t.Fatal(err)
	}
}

// TestAggregateJoinedGroups: revenue per store and month (payment →
// staff.store_id) and sales per film category (payment → rental →
// inventory → film.category_id, through via), while a seeded workload
// changes payments and moves every kind of parent — staff between stores,
// films between categories, inventory between films, rentals between
// inventory — deletes and re-inserts parents, and truncates the
// payments midway, with the projectors restarted. Both read tables equal
// the source's GROUP BY over the inner joins; then the whole history of
// every table, shuffled across batches with a fifth duplicated, applied
// to a fresh sink, gives the same tables.
func TestAggregateJoinedGroups(t *testing.T) {
	bed := testbed.Get(t)
	s := newRentalShop(t, bed)
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.seed(t)
	start := func() func() { return startProjectors(t, s.ps, s.sink, s.cfg.Kafka.Brokers) }
	stop := start()
	s.write(t, seed, 600)
	s.waitEqual(t, "after the first load")
	if err := bed.MySQL.Exec(t.Context(), "TRUNCATE TABLE `"+s.src+"`.payment"); err != nil {
		t.Fatal(err)
	}
	s.write(t, seed+1, 300)
	stop()
	s.write(t, seed+2, 300)
	stop = start()
	s.waitEqual(t, "after a truncate, more load and a restart")
	stop()

	waitPublished(t, bed, tl)
	var topics []string
	for _, p := range s.ps {
		topics = append(topics, p.Topics()...)
	}
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, dedupe(topics)...)
	live := s.sinkDB
	s.openSink(t)
	applyShuffled(t, s.sink, s.ps, records, rand.New(rand.NewPCG(seed, 22)))
	if want, got := s.expected(t), s.actual(t, s.sinkDB); want != got {
		t.Fatalf("shuffled history with duplicates differs from the GROUP BY over the joins: %s", testbed.FirstDifference(got, want))
	}
	if a, b := s.actual(t, live), s.actual(t, s.sinkDB); a != b {
		t.Fatalf("shuffled replay differs from the live tables: %s", testbed.FirstDifference(b, a))
	}
	t.Logf("shuffled history (%d records) equals the GROUP BY over the joins", len(records))
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !strings.Contains(strings.Join(out, "\x00")+"\x00", x+"\x00") {
			out = append(out, x)
		}
	}
	return out
}
