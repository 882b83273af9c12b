package projections

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// aggProjection is aggConfig's projection per customer and day, filtered
// on status, typed against a source orders table.
func aggProjection(t *testing.T) *Projection {
	t.Helper()
	cfg := aggConfig()
	d := cfg.Projections["stats"]
	d.Where = "status <> 'draft'"
	d.Aggregates = map[string]string{"orders": "count(*)", "total": "sum(total_cents)", "paid": "count_if(status = 'paid')",
		"paid_total": "sum_if(status = 'paid', total_cents)", "priced": "count(total_cents)", "last_at": "max(created_at)"}
	cfg.Projections["stats"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	src := cookbookTable([][3]string{{"id", "bigint(20)"}, {"customer_id", "int(11)"}, {"total_cents", "decimal(12,2)", "null"},
		{"status", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, {"created_at", "datetime(3)"}})
	typeAll(t, p, src)
	if errs := p.typeAggregates(src, &Types{Read: map[string]string{}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

// TestTypeCountDistinct: count(distinct) reads as COUNT(DISTINCT)'s
// column and keeps the value, in its column's collation, as the
// contribution; values that cannot key the reference counts (TEXT,
// strings over 256 characters) are refused with a bounded expression to
// count instead.
func TestTypeCountDistinct(t *testing.T) {
	src := cookbookTable([][3]string{{"id", "bigint(20)"}, {"customer_id", "int(11)"}, {"total_cents", "decimal(12,2)", "null"},
		{"status", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, {"created_at", "datetime(3)"},
		{"body", "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "null"},
		{"long_name", "varchar(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "null"}})
	for _, c := range []struct{ why, text, read, contrib, err string }{
		{"a string keeps its collation", "count(distinct status)", "bigint(21) NOT NULL", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL", ""},
		{"a decimal", "count(distinct total_cents)", "bigint(21) NOT NULL", "decimal(12,2) NULL", ""},
		{"sum(distinct) reads as SUM does", "sum(distinct total_cents)", "decimal(34,2) NULL", "decimal(12,2) NULL", ""},
		{"sum(distinct) of a string is refused as sum is", "sum(distinct status)", "", "", "sum over varchar(10)"},
		{"an expression's type", "count(distinct DATE(created_at))", "bigint(21) NOT NULL", "date NULL", ""},
		{"a TEXT cannot key the counts", "count(distinct body)", "", "", "count a bounded expression instead, e.g. count(distinct CAST(x AS CHAR(255)))"},
		{"a long string cannot either", "count(distinct long_name)", "", "", "a value of up to 300 characters is too long to key the reference counts"},
		{"a bounded prefix of it can", "count(distinct CAST(long_name AS CHAR(100)))", "bigint(21) NOT NULL", "", ""},
	} {
		cfg := aggConfig()
		d := cfg.Projections["stats"]
		d.Aggregates = map[string]string{"x": c.text}
		cfg.Projections["stats"] = d
		ps, err := Compile(cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		p := ps[0]
		typeAll(t, p, src)
		types := Types{Read: map[string]string{}}
		errs := p.typeAggregates(src, &types)
		if c.err != "" {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.err) {
				t.Errorf("%s: want an error containing %q, got %v", c.why, c.err, errs)
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%s: %v", c.why, errs)
			continue
		}
		if types.Read["x"] != c.read || (c.contrib != "" && types.Contribution["x"] != c.contrib) {
			t.Errorf("%s: read %q, contribution %q; want %q, %q", c.why, types.Read["x"], types.Contribution["x"], c.read, c.contrib)
		}
	}
}

// TestCollectContribution: each event is the row's new contribution under
// its record key, from the after image alone: a row in the filter gives
// its group and values, anything else (a delete, a row out of the filter)
// none; a truncate is a truncation.
func TestCollectContribution(t *testing.T) {
	p := aggProjection(t)
	row := func(cust int, total, status, at string) string {
		return fmt.Sprintf(`{"id":5,"customer_id":%d,"total_cents":%s,"status":%q,"created_at":%q}`, cust, total, status, at)
	}
	a := row(1, `"12.50"`, "paid", "2026-01-02 03:04:05.000")
	b := row(2, "null", "open", "2026-01-03 00:00:00.000")
	draft := row(1, `"7.00"`, "draft", "2026-01-02 03:04:05.000")
	// Aggregates in read table order: last_at, orders, paid, paid_total, priced, total.
	cases := []struct {
		why           string
		op            string
		before, after string
		group, values string // "" : no contribution
		// first: only an insert is guessed new to the sink (a snapshot
		// may read rows the sink holds: a snapshot again).
		first bool
	}{
		{"an insert contributes its group and values", "c", "null", a, `"1","2026-01-02"`, `"2026-01-02 03:04:05.000","1","1","12.50","1","12.50"`, true},
		{"a snapshot read is the same", "r", "null", a, `"1","2026-01-02"`, `"2026-01-02 03:04:05.000","1","1","12.50","1","12.50"`, false},
		{"an update contributes its after image only: a move to another group", "u", a, b, `"2","2026-01-03"`, `"2026-01-03 00:00:00.000","1","0",NULL,"0",NULL`, false},
		{"a row leaving the filter contributes nothing", "u", a, draft, "", "", false},
		{"an insert outside the filter contributes nothing", "c", "null", draft, "", "", true},
		{"a snapshot row outside the filter withdraws what it may have added", "r", "null", draft, "", "", false},
		{"a delete contributes nothing", "d", a, "null", "", "", false},
	}
	for _, c := range cases {
		v := fmt.Sprintf(`{"op":%q,"version":77,"key":{"id":5},"before":%s,"after":%s,"schema":{"version":"s","columns":{"id":"bigint","customer_id":"int","total_cents":"decimal","status":"varchar","created_at":"datetime"}}}`,
			c.op, c.before, c.after)
		b, bad := p.Build([]Record{{Topic: p.Topic, Key: []byte(`{"id":5}`), Value: []byte(v)}})
		if len(bad) > 0 {
			t.Errorf("%s: %v", c.why, bad[0].Reason)
			continue
		}
		if len(b.Contributions) != 1 || len(b.Writes) != 0 {
			t.Errorf("%s: %d contributions, %d writes", c.why, len(b.Contributions), len(b.Writes))
			continue
		}
		got := b.Contributions[0]
		if got.SourceKey != `{"id":5}` || got.Version != 77 {
			t.Errorf("%s: key %s version %d", c.why, got.SourceKey, got.Version)
		}
		if g, v := valuesList(got.Group), valuesList(got.Values); g != c.group || v != c.values {
			t.Errorf("%s: group %s values %s, want %s and %s", c.why, g, v, c.group, c.values)
		}
		if got.First != c.first {
			t.Errorf("%s: first %v, want %v", c.why, got.First, c.first)
		}
	}
	trunc := `{"op":"t","version":99,"key":null,"before":null,"after":null}`
	tb, bad := p.Build([]Record{{Topic: p.Topic, Value: []byte(trunc)}})
	if len(bad) > 0 || len(tb.Contributions) != 1 || !tb.Contributions[0].Truncate || tb.Contributions[0].Version != 99 {
		t.Errorf("a truncate: %+v %v", tb.Contributions, bad)
	}
}

// TestCoalesceContributions: a batch keeps each source key's newest
// contribution and every truncation; the one kept is First when any of
// its key's was (an insert before, after or between its updates: events
// may come out of order).
func TestCoalesceContributions(t *testing.T) {
	cs := []Contribution{{SourceKey: "a", Version: 3}, {SourceKey: "b", Version: 1, First: true}, {SourceKey: "a", Version: 5},
		{Truncate: true, Version: 4}, {SourceKey: "a", Version: 4, First: true}, {SourceKey: "b", Version: 2},
		{SourceKey: "c", Version: 7}, {SourceKey: "c", Version: 6}}
	got := CoalesceContributions(cs)
	var s []string
	for _, c := range got {
		s = append(s, fmt.Sprintf("%s%d%v%v", c.SourceKey, c.Version, c.Truncate, c.First))
	}
	if want := "a5falsetrue b2falsetrue 4truefalse c7falsefalse"; strings.Join(s, " ") != want {
		t.Errorf("coalesced to %s, want %s", strings.Join(s, " "), want)
	}
}

func valuesList(vs []Value) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.String())
	}
	return strings.Join(s, ",")
}

// TestAggregateOfJoinedColumn: an aggregate's argument naming a column a
// join declares (not the source row's) is refused saying so, and that a
// joined column can be a group column.
func TestAggregateOfJoinedColumn(t *testing.T) {
	cfg := aggConfig()
	cfg.Projections = map[string]config.Projection{"by_region": {
		From: "shop.orders", Sink: "reads", GroupBy: []string{"region_id"},
		Join:       []config.Join{{From: "shop.customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"region_id": "region_id", "cname": "name"}}},
		Aggregates: map[string]string{"names": "count(distinct cname)"},
	}}
	// The join's cname is refused as no group column, and check lists
	// the aggregates' problems beside it (CompileEach keeps p).
	p := CompileEach(cfg)[0].P
	src := cookbookTable([][3]string{{"id", "bigint(20)"}, {"customer_id", "int(11)"}, {"total_cents", "decimal(12,2)", "null"}})
	errs := p.typeAggregates(src, &Types{Read: map[string]string{}})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "cname is a column of the joined shop.customers: an aggregate's argument reads the shop.orders row only, and a joined column can be a group column") {
		t.Errorf("got %v", errs)
	}
}
