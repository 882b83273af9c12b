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

// TestKeyMatchesInOtherCharsets: an aggregate grouped by a latin1 and a
// utf16 column, with count(distinct …). Its batches match groups and
// reference counts by two-column keys, and MariaDB compares a column list
// against two or more rows of utf8mb4 literals without converting them
// to the columns' sets: without CONVERT in those lists (keycharsets.go)
// the distinct counts of groups with non-ASCII (latin1) or any (utf16)
// text stay 0 and emptied groups are never removed. The latin1 column is
// under latin1_german2_ci, not its set's default collation, which a bare
// CONVERT yields: without the column's COLLATE the server refuses the
// match ("Illegal mix of collations") and the projection stops. The read table must
// equal the source's GROUP BY after inserts, moves between groups and
// deletes that empty groups.
func TestKeyMatchesInOtherCharsets(t *testing.T) {
	bed := testbed.Get(t)
	s := newTablesShop(t, bed, "kcs", []string{"sales"}, "CREATE TABLE `%s`.sales (id INT PRIMARY KEY, region VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_german2_ci NOT NULL,"+
		" code VARCHAR(10) CHARACTER SET utf16 COLLATE utf16_bin NOT NULL, customer INT NULL, amount INT NOT NULL)")
	s.cfg.Projections = map[string]config.Projection{"sales_by_region_code": {
		From: s.src + ".sales", Sink: "reads", GroupBy: []string{"region", "code"},
		Aggregates: map[string]string{"sales": "count(*)", "total": "sum(amount)", "customers": "count(distinct customer)"},
	}}
	s.openSink(t, "-")
	runTailer(t, bed, s.cfg)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	defer stop()

	want, converge := queriesConverge(t, bed, "the source's GROUP BY",
		"SELECT CONVERT(region USING utf8mb4), CONVERT(code USING utf8mb4), COUNT(*), SUM(amount), COUNT(DISTINCT customer)"+
			" FROM `"+s.src+"`.sales GROUP BY region, code ORDER BY 1, 2",
		"SELECT CONVERT(region USING utf8mb4), CONVERT(code USING utf8mb4), sales, total, customers"+
			" FROM `"+s.shards[0]+"`.sales_by_region_code ORDER BY 1, 2")

	regions := []string{"Zürich", "Genève", "Åre", "Oslo"}
	codes := []string{"Ω1", "ß", "a😀", "plain"}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	// Several rows a statement, so a batch matches many keys at once.
	for id := 1; id <= 400; id += 8 {
		q := "INSERT INTO $.sales VALUES "
		var args []any
		for k := range 8 {
			if k > 0 {
				q += ", "
			}
			q += "(?, ?, ?, ?, ?)"
			args = append(args, id+k, regions[rng.IntN(len(regions))], codes[rng.IntN(len(codes))], rng.IntN(30), 1+rng.IntN(100))
		}
		s.exec(t, q, args...)
	}
	converge("inserted")
	s.exec(t, "UPDATE $.sales SET region = 'Genève', customer = customer + 100 WHERE id % 3 = 0")
	s.exec(t, "UPDATE $.sales SET code = 'Ω1' WHERE id % 5 = 0")
	converge("rows moved between groups, new values")
	s.exec(t, "DELETE FROM $.sales WHERE region = 'Zürich' OR code = 'ß'")
	converge("groups emptied")
	// One row's change alone: a match of a single key, which MariaDB
	// compares as an equality, where a bare CONVERT's collation clashes
	// with latin1_german2_ci.
	s.exec(t, "UPDATE $.sales SET customer = 1000 WHERE id = (SELECT MIN(id) FROM (SELECT id FROM $.sales WHERE region = 'Genève') AS g)")
	converge("one row's distinct value changed")
	s.exec(t, "DELETE FROM $.sales WHERE id = (SELECT MAX(id) FROM (SELECT id FROM $.sales WHERE region = 'Åre') AS g)")
	converge("one row deleted")
	if w := want(); !strings.Contains(w, "Genève|Ω1|") || strings.Contains(w, "Zürich") {
		t.Fatalf("the source's groups are not what the test means to check:\n%s", w)
	}
}

// TestJoinKeyMatchesInOtherCharsets: a join whose read key and parent key
// are latin1 text (the parent keyed by source.keys, no primary key). A
// batch fills its new rows' parent columns by matching their read keys,
// and a parent's rename reaches its rows by the parent key: both two- or
// one-column matches of many keys at once, which must find rows holding
// non-ASCII text (keycharsets.go). The keys are under latin1_german2_ci,
// not latin1's default collation (TestKeyMatchesInOtherCharsets is the
// one that fails without the COLLATE its conversions carry).
func TestJoinKeyMatchesInOtherCharsets(t *testing.T) {
	bed := testbed.Get(t)
	s := newTablesShop(t, bed, "kcj", []string{"customers", "orders"},
		"CREATE TABLE `%s`.customers (code CHAR(8) CHARACTER SET latin1 COLLATE latin1_german2_ci NOT NULL, name VARCHAR(30) CHARACTER SET utf16 NOT NULL, UNIQUE KEY (code))",
		"CREATE TABLE `%s`.orders (id INT PRIMARY KEY, code CHAR(8) CHARACTER SET latin1 COLLATE latin1_german2_ci NOT NULL, amount INT NOT NULL)")
	s.cfg.Source.Keys = map[string][]string{s.src + ".customers": {"code"}}
	s.cfg.Projections = map[string]config.Projection{"orders_by_code": {
		From: s.src + ".orders", Sink: "reads", Key: []string{"code", "id"},
		Columns: map[string]string{"code": "code", "id": "id", "amount": "amount"},
		Join:    []config.Join{{From: s.src + ".customers", On: map[string]string{"code": "code"}, Columns: map[string]string{"customer": "name"}}},
	}}
	s.openSink(t, "-")
	runTailer(t, bed, s.cfg)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	defer stop()

	want, converge := queriesConverge(t, bed, "the SQL join",
		"SELECT CONVERT(o.code USING utf8mb4), o.id, o.amount, CONVERT(c.name USING utf8mb4)"+
			" FROM `"+s.src+"`.orders o LEFT JOIN `"+s.src+"`.customers c ON c.code = o.code ORDER BY 1, 2",
		"SELECT CONVERT(code USING utf8mb4), id, amount, CONVERT(customer USING utf8mb4)"+
			" FROM `"+s.shards[0]+"`.orders_by_code ORDER BY 1, 2")
	codes := []string{"ÄÖÜ-1", "café", "Ørsted", "plain"}
	s.exec(t, "INSERT INTO $.customers VALUES (?, 'Zoë 😀'), (?, 'Ωmega'), (?, '李'), (?, 'Plain')", codes[0], codes[1], codes[2], codes[3])
	// The customers applied first, in a batch of their own: the orders'
	// batch then finds them only by filling its rows by read key.
	state := "`" + s.shards[0] + "`.`" + s.p.Joins[0].StateTable(s.p) + "`"
	testbed.Eventually(t, 60*time.Second, func() (bool, string) {
		n := testbed.RowsText(t, bed.MySQL.DB(), "SELECT COUNT(*) FROM "+state+" WHERE `_rs_version` > 0")
		return n == "4|\n", "the customers' state rows: " + n
	})
	// Orders a statement for many codes at once, after their customers.
	q, args := "INSERT INTO $.orders VALUES ", []any{}
	for id := 1; id <= 120; id++ {
		if id > 1 {
			q += ", "
		}
		q += "(?, ?, ?)"
		args = append(args, id, codes[id%len(codes)], id)
	}
	s.exec(t, q, args...)
	converge("orders after their customers")
	s.exec(t, "UPDATE $.customers SET name = CONCAT(name, ' ✓') WHERE code <> 'plain'")
	converge("customers renamed")
	if w := want(); !strings.Contains(w, "Zoë 😀 ✓") || !strings.Contains(w, "ÄÖÜ-1|") {
		t.Fatalf("the join is not what the test means to check:\n%.500s", w)
	}
}

// queriesConverge are the expected rows (the want query on the source)
// and a wait until the read table's rows (the got query) equal them;
// what names the expectation in the failure.
func queriesConverge(t *testing.T, bed *testbed.Bed, what, want, got string) (wantRows func() string, converge func(step string)) {
	wantRows = func() string { return testbed.RowsText(t, bed.MySQL.DB(), want) }
	converge = func(step string) {
		t.Helper()
		testbed.Eventually(t, 60*time.Second, func() (bool, string) {
			w, g := wantRows(), testbed.RowsText(t, bed.MySQL.DB(), got)
			return w == g, fmt.Sprintf("%s: the read table differs from %s:\nwant:\n%s\ngot:\n%s", step, what, w, g)
		})
	}
	return wantRows, converge
}

// runShop compiles s's projections, creates their read tables on s's
// sink, and runs the tailer and a projector for each until the test ends.
func runShop(t *testing.T, bed *testbed.Bed, s *lineShop) []*projections.Projection {
	t.Helper()
	ps, err := projections.Compile(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	runTailer(t, bed, s.cfg)
	for _, p := range ps {
		types, err := p.SourceColumns(t.Context(), bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Exec(t.Context(), sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(startProjector(t, p, s.sink, s.cfg.Kafka.Brokers))
	}
	return ps
}

// convergences are queriesConverge checks made together.
type convergences []func(step string)

// add checks that got's rows become want's (what names want's side).
func (c *convergences) add(t *testing.T, bed *testbed.Bed, what, want, got string) {
	_, converge := queriesConverge(t, bed, what, want, got)
	*c = append(*c, converge)
}

// all waits until every check holds after step.
func (c convergences) all(t *testing.T, step string) {
	t.Helper()
	for _, converge := range c {
		converge(step)
	}
}
