package projections_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestKeyMatchesInOtherCharsets: an aggregate grouped by a latin1 and a
// utf16 column, with count(distinct …). Its batches match groups and
// reference counts by two-column keys, and MariaDB compares a column list
// against two or more rows of utf8mb4 literals without converting them
// to the columns' sets: without CONVERT in those lists (keycharsets.go)
// the distinct counts of groups with non-ASCII (latin1) or any (utf16)
// text stay 0 and emptied groups are never removed. The read table must
// equal the source's GROUP BY after inserts, moves between groups and
// deletes that empty groups.
func TestKeyMatchesInOtherCharsets(t *testing.T) {
	bed := testbed.Get(t)
	s := newTablesShop(t, bed, "kcs", []string{"sales"}, "CREATE TABLE `%s`.sales (id INT PRIMARY KEY, region VARCHAR(20) CHARACTER SET latin1 NOT NULL,"+
		" code VARCHAR(10) CHARACTER SET utf16 COLLATE utf16_bin NOT NULL, customer INT NULL, amount INT NOT NULL)")
	s.cfg.Projections = map[string]config.Projection{"sales_by_region_code": {
		From: s.src + ".sales", Sink: "reads", GroupBy: []string{"region", "code"},
		Aggregates: map[string]string{"sales": "count(*)", "total": "sum(amount)", "customers": "count(distinct customer)"},
	}}
	s.openSink(t, "-")
	runTailer(t, bed, s.cfg)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	defer stop()

	want := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT CONVERT(region USING utf8mb4), CONVERT(code USING utf8mb4), COUNT(*), SUM(amount), COUNT(DISTINCT customer)"+
			" FROM `"+s.src+"`.sales GROUP BY region, code ORDER BY 1, 2")
	}
	got := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT CONVERT(region USING utf8mb4), CONVERT(code USING utf8mb4), sales, total, customers"+
			" FROM `"+s.shards[0]+"`.sales_by_region_code ORDER BY 1, 2")
	}
	converge := func(step string) {
		t.Helper()
		testbed.Eventually(t, 60*time.Second, func() (bool, string) {
			w, g := want(), got()
			return w == g, fmt.Sprintf("%s: the read table differs from the source's GROUP BY:\nwant:\n%s\ngot:\n%s", step, w, g)
		})
	}

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
	if w := want(); !strings.Contains(w, "Genève|Ω1|") || strings.Contains(w, "Zürich") {
		t.Fatalf("the source's groups are not what the test means to check:\n%s", w)
	}
}
