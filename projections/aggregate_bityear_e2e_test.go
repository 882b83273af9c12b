package projections_test

import (
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestAggregateBitAndYear: BIT and YEAR values as groups, distinct values
// and extremes, moved between groups and deleted. Both need binding by
// their type: a BIT bound as text is the bits of its digits' characters
// (512 does not fit BIT(10), 1 is stored as 49), a BIT read back as bytes
// compares as a DECIMAL (refused in strict mode), and a YEAR bound as
// '0' — as the server prints the year 0 — is 2000, so the year 0's
// rows and distinct values land in 2000's.
func TestAggregateBitAndYear(t *testing.T) {
	bed := testbed.Get(t)
	s := newTablesShop(t, bed, "bity", []string{"v"},
		"CREATE TABLE `%s`.v (id INT PRIMARY KEY, b BIT(10) NOT NULL, y YEAR NOT NULL, g INT NOT NULL)")
	s.cfg.Projections = map[string]config.Projection{
		"by_year": {From: s.src + ".v", Sink: "reads", GroupBy: []string{"y"},
			Aggregates: map[string]string{"n": "count(*)", "bits": "count(distinct b)", "top": "max(b)"}},
		"by_bits": {From: s.src + ".v", Sink: "reads", GroupBy: []string{"b"},
			Aggregates: map[string]string{"n": "count(*)", "years": "count(distinct y)", "latest": "max(y)"}},
		"by_g": {From: s.src + ".v", Sink: "reads", GroupBy: []string{"g"},
			Aggregates: map[string]string{"years": "count(distinct y)", "bits": "count(distinct b)", "least": "min(y)"}},
	}
	s.openSink(t, "-")
	runShop(t, bed, s)
	src, sink := "`"+s.src+"`.v", "`"+s.shards[0]+"`."
	var c convergences
	check := func(what, want, got string) { c.add(t, bed, what, want, got) }
	check("GROUP BY y", "SELECT CAST(y AS CHAR), COUNT(*), COUNT(DISTINCT b), MAX(b) + 0 FROM "+src+" GROUP BY y ORDER BY y",
		"SELECT CAST(y AS CHAR), n, bits, top + 0 FROM "+sink+"by_year ORDER BY y")
	check("GROUP BY b", "SELECT b + 0, COUNT(*), COUNT(DISTINCT y), MAX(y) + 0 FROM "+src+" GROUP BY b ORDER BY b",
		"SELECT b + 0, n, years, latest + 0 FROM "+sink+"by_bits ORDER BY b")
	check("GROUP BY g", "SELECT g, COUNT(DISTINCT y), COUNT(DISTINCT b), MIN(y) + 0 FROM "+src+" GROUP BY g ORDER BY g",
		"SELECT g, years, bits, least + 0 FROM "+sink+"by_g ORDER BY g")
	converge := func(step string) { c.all(t, step) }
	bits, years := []int{0, 1, 512, 1023, 5}, []int{0, 2000, 1901, 2155, 1999}
	for i := range 40 {
		s.exec(t, "INSERT INTO $.v VALUES (?, ?, ?, ?)", i, bits[i%5], years[(i/5)%5], i%3)
	}
	converge("inserted")
	// Every row takes the next year and bit pattern: groups and distinct
	// values cross 0 both ways, the year 0 among them.
	for range 3 {
		s.exec(t, "UPDATE $.v SET y = CASE y WHEN 0 THEN 2000 WHEN 2000 THEN 1901 WHEN 1901 THEN 2155 WHEN 2155 THEN 1999 ELSE 0 END,"+
			" b = CASE b WHEN 0 THEN 1 WHEN 1 THEN 512 WHEN 512 THEN 1023 WHEN 1023 THEN 5 ELSE 0 END")
		converge("every row moved")
	}
	s.exec(t, "DELETE FROM $.v WHERE id % 4 = 0")
	converge("deleted")
	if got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT COUNT(*) FROM "+src+" WHERE y = 0"); got == "0|\n" {
		t.Fatalf("no row holds the year 0: the test checks nothing")
	}
}
