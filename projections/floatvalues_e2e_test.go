package projections_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/verify"
)

// TestFloatValuesExact: FLOAT columns in every role a read model gives a
// value — copied, a read key, a joined column, a group, a joined group, a
// distinct value, MIN and MAX — with values whose shortest float32 text
// is not their value as a double (0.1, 1.2345678), that the text protocol
// prints with six digits (16777215 as 16777200) and the float32 maximum
// (its shortest text, 3.4028235e+38, is above FLT_MAX as a double).
// Every value is compared as a DOUBLE (`+ 0e0`), so each bit counts.
//
// The failures this guards: a FLOAT bound as its event text matches no
// stored row (a moved key's old row stays, a distinct value's count is
// never seen to fall to 0) and FLT_MAX is refused as out of range,
// stopping the projection (projections' floatValue); a FLOAT read back
// from the sink as text comes back rounded, so a group's rows move to a
// group of another value (sinks' exactRead); verify, reading both sides
// as text, saw two floats that differ as one and reported EQUAL
// (verify's plan.floats).
func TestFloatValuesExact(t *testing.T) {
	bed := testbed.Get(t)
	s := newTablesShop(t, bed, "flt", []string{"items", "oline", "grades"},
		"CREATE TABLE `%s`.items (id INT PRIMARY KEY, price FLOAT NULL, name VARCHAR(20) NOT NULL)",
		"CREATE TABLE `%s`.oline (id INT PRIMARY KEY, item_id INT NOT NULL, qty FLOAT NOT NULL)",
		"CREATE TABLE `%s`.grades (g FLOAT PRIMARY KEY, label VARCHAR(20) NOT NULL)")
	s.cfg.Projections = map[string]config.Projection{
		"items_copy": {
			From: s.src + ".items", Sink: "reads", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "price": "price", "name": "name"},
		},
		"lines_priced": {
			From: s.src + ".oline", Sink: "reads", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "item_id": "item_id", "qty": "qty"},
			Join:    []config.Join{{From: s.src + ".items", On: map[string]string{"id": "item_id"}, Columns: map[string]string{"price": "price"}}},
		},
		"lines_by_qty": {
			From: s.src + ".oline", Sink: "reads", Key: []string{"qty", "id"},
			Columns: map[string]string{"qty": "qty", "id": "id"},
		},
		"count_by_qty": {
			From: s.src + ".oline", Sink: "reads", GroupBy: []string{"qty"},
			Aggregates: map[string]string{"n": "count(*)"},
		},
		"qty_by_item": {
			From: s.src + ".oline", Sink: "reads", GroupBy: []string{"item_id"},
			Aggregates: map[string]string{"n": "count(*)", "kinds": "count(distinct qty)", "least": "min(qty)", "most": "max(qty)"},
		},
		// Children linked by a FLOAT: a line whose quantity changes moves
		// from one grade's array to another's, found by its stored link.
		"grades_with_lines": {
			From: s.src + ".grades", Sink: "reads", Key: []string{"g"},
			Columns: map[string]string{"g": "g", "label": "label"},
			Children: map[string]config.Children{"members": {From: s.src + ".oline", On: map[string]string{"qty": "g"},
				Columns: map[string]string{"id": "id"}, OrderBy: []string{"id"}}},
		},
		"count_by_price": {
			From: s.src + ".oline", Sink: "reads", GroupBy: []string{"price"},
			Join:       []config.Join{{From: s.src + ".items", On: map[string]string{"id": "item_id"}, Columns: map[string]string{"price": "price"}}},
			Aggregates: map[string]string{"n": "count(*)"},
		},
	}
	s.openSink(t, "-")
	byName := map[string]*projections.Projection{}
	for _, p := range runShop(t, bed, s) {
		byName[p.Name] = p
	}

	src, sink := "`"+s.src+"`.", "`"+s.shards[0]+"`."
	var c convergences
	check := func(what, want, got string) { c.add(t, bed, what, want, got) }
	check("the source's items", "SELECT id, price + 0e0, name FROM "+src+"items ORDER BY 1",
		"SELECT id, price + 0e0, name FROM "+sink+"items_copy ORDER BY 1")
	check("the SQL join", "SELECT l.id, l.item_id, l.qty + 0e0, i.price + 0e0 FROM "+src+"oline l LEFT JOIN "+src+"items i ON i.id = l.item_id ORDER BY 1",
		"SELECT id, item_id, qty + 0e0, price + 0e0 FROM "+sink+"lines_priced ORDER BY 1")
	check("the lines by quantity", "SELECT qty + 0e0, id FROM "+src+"oline ORDER BY 2",
		"SELECT qty + 0e0, id FROM "+sink+"lines_by_qty ORDER BY 2")
	check("GROUP BY qty", "SELECT qty + 0e0, COUNT(*) FROM "+src+"oline GROUP BY qty ORDER BY 1",
		"SELECT qty + 0e0, n FROM "+sink+"count_by_qty ORDER BY 1")
	check("GROUP BY item_id", "SELECT item_id, COUNT(*), COUNT(DISTINCT qty), MIN(qty) + 0e0, MAX(qty) + 0e0 FROM "+src+"oline GROUP BY item_id ORDER BY 1",
		"SELECT item_id, n, kinds, least + 0e0, most + 0e0 FROM "+sink+"qty_by_item ORDER BY 1")
	check("GROUP BY the item's price", "SELECT i.price + 0e0, COUNT(*) FROM "+src+"oline l JOIN "+src+"items i ON i.id = l.item_id WHERE i.price IS NOT NULL GROUP BY i.price ORDER BY 1",
		"SELECT price + 0e0, n FROM "+sink+"count_by_price ORDER BY 1")
	check("the grades' lines", "SELECT g + 0e0, label, (SELECT JSON_ARRAYAGG(JSON_OBJECT('id', l.id) ORDER BY l.id) FROM "+src+"oline l WHERE l.qty = gr.g),"+
		" (SELECT COUNT(*) FROM "+src+"oline l WHERE l.qty = gr.g) FROM "+src+"grades gr ORDER BY 1",
		"SELECT g + 0e0, label, members, members_count FROM "+sink+"grades_with_lines ORDER BY 1")
	converge := func(step string) { c.all(t, step) }

	values := []string{"0.1", "1.2345678", "16777215", "3.4028234e38", "123456.789"}
	for i := range 6 {
		s.exec(t, "INSERT INTO $.items VALUES (?, ?, ?)", i, values[i%len(values)], "item")
	}
	for _, v := range values {
		s.exec(t, "INSERT INTO $.grades VALUES (?, ?)", v, "grade "+v)
	}
	for i := range 30 {
		s.exec(t, "INSERT INTO $.oline VALUES (?, ?, ?)", i, i%6, values[i%len(values)])
	}
	converge("inserted")
	// Every line takes the next value: each (item, value) reference count
	// falls to 0 somewhere and rises from 0 elsewhere, every key moves,
	// every group loses rows to another.
	for range 2 {
		s.exec(t, "UPDATE $.oline SET qty = CASE qty"+
			" WHEN CAST(0.1 AS FLOAT) THEN 1.2345678 WHEN CAST(1.2345678 AS FLOAT) THEN 16777215"+
			" WHEN 16777215 THEN 3.4028234e38 WHEN CAST(3.4028234e38 AS FLOAT) THEN 123456.789 ELSE 0.1 END")
		converge("every quantity changed")
	}
	// Prices move: every line leaves its price group for another.
	s.exec(t, "UPDATE $.items SET price = CASE WHEN price = CAST(0.1 AS FLOAT) THEN 16777215 WHEN price = 16777215 THEN 0.1 ELSE 1.2345678 END")
	converge("every price changed")
	s.exec(t, "DELETE FROM $.oline WHERE id % 3 = 0")
	s.exec(t, "DELETE FROM $.items WHERE id = 5")
	converge("deleted")
	got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT qty + 0e0 FROM "+src+"oline")
	if !strings.Contains(got, "1.6777215e+07") || !strings.Contains(got, "3.4028234663852886e+38") || !strings.Contains(got, "1.2345677614212036") {
		t.Fatalf("the source's quantities are not what the test means to check:\n%s", got)
	}

	vsrc, err := verify.OpenSource(s.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer vsrc.Close()
	drift := func(name string) int64 {
		t.Helper()
		rep, err := verify.New(byName[name], vsrc, s.sink, verify.Options{Settle: 5 * time.Second,
			Ends: projector.Ends(s.cfg.Kafka.Brokers), Log: slog.New(slog.DiscardHandler)}).Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return rep.Drift()
	}
	for name := range byName {
		if d := drift(name); d != 0 {
			t.Fatalf("verify %s after converging: drift %d", name, d)
		}
	}
	// One float32 step off, invisible in six digits: verify must see it.
	for _, damage := range []struct{ name, sql string }{
		{"lines_priced", "UPDATE lines_priced SET qty = 1.2345679 WHERE qty = CAST(1.2345678 AS FLOAT) LIMIT 1"},
		{"lines_by_qty", "UPDATE lines_by_qty SET qty = 16777214 WHERE qty = 16777215 LIMIT 1"},
		{"count_by_qty", "UPDATE count_by_qty SET qty = 16777214 WHERE qty = 16777215"},
	} {
		res, err := s.sink.Shards[0].DB().ExecContext(t.Context(), damage.sql)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s: %d rows damaged, want 1", damage.sql, n)
		}
		if d := drift(damage.name); d == 0 {
			t.Fatalf("verify %s after %s: no drift", damage.name, damage.sql)
		}
	}
}
