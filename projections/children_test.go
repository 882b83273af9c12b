package projections

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// childrenConfig is orders with their lines nested.
func childrenConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.orders", "shop.order_lines"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"orders_with_lines": {
		From: "shop.orders", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "customer_id": "customer_id"},
		Children: map[string]config.Children{"lines": {From: "shop.order_lines", On: map[string]string{"order_id": "id"},
			Columns: map[string]string{"sku": "sku", "qty": "qty"}, OrderBy: []string{"line_no"}, Limit: 100}},
	}}
	return cfg
}

func TestCompileChildren(t *testing.T) {
	ps, err := Compile(childrenConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := ps[0].Children[0]
	if c.Name != "lines" || c.CountColumn != "lines_count" || c.Topic != "readside.shop.order_lines" || c.Limit != 100 {
		t.Errorf("compiled %+v", c)
	}
	if len(c.On) != 1 || c.On[0] != (ChildOn{Child: "order_id", Parent: "id", Read: "id"}) {
		t.Errorf("on %+v: the link is order_lines.order_id = the read column id", c.On)
	}
	if got := strings.Join(ps[0].Topics(), ","); got != "readside.shop.orders,readside.shop.order_lines" {
		t.Errorf("topics %s: the projector must consume the child table's", got)
	}
	if got := strings.Join(c.StateColumns(), ","); got != "order_id,line_no,qty,sku" {
		t.Errorf("state columns before the key is known: %s", got)
	}
	c.SetSourceKey([]string{"order_id", "id"})
	c.SetSourceKey([]string{"other"})
	if got := strings.Join(c.StateColumns(), ","); got != "order_id,line_no,id,qty,sku" {
		t.Errorf("state columns %s: link, order_by, then the key (each once), then the members, and the first key recorded stays", got)
	}
	if c.StateTable(ps[0]) != "_readside_child_orders_with_lines_lines" || c.LinkTable(ps[0]) != "_readside_childlink_orders_with_lines_lines" {
		t.Errorf("tables %s %s", c.StateTable(ps[0]), c.LinkTable(ps[0]))
	}
	long := *ps[0]
	long.Table = strings.Repeat("t", 64)
	if n := len(c.StateTable(&long)); n > 64 {
		t.Errorf("a state table name of %d characters: MySQL allows 64", n)
	}
}

// TestChildrenColumnNames: a children value names a child (or joined
// parent) column whatever MySQL allows in its name — spaces, quotes, a
// reserved word, one in backticks that would read as an expression — as a
// projection's columns do; expressions and a sort direction stay refused.
func TestChildrenColumnNames(t *testing.T) {
	cfg := childrenConfig()
	cfg.Source.Tables = append(cfg.Source.Tables, "shop.customers")
	p := cfg.Projections["orders_with_lines"]
	p.Children = map[string]config.Children{"lines": {From: "shop.order_lines", On: map[string]string{"order_id": "id"},
		Columns: map[string]string{"line": "line id", "d": "desc'r", "q": `na"me`, "ij": "`i-j`", "o": "order"},
		OrderBy: []string{"`i-j`", "line id"},
		Join:    []config.Join{{From: "shop.customers", On: map[string]string{"customer id": "`cust-id`"}, Columns: map[string]string{"who": "full name"}}}}}
	cfg.Projections["orders_with_lines"] = p
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := ps[0].Children[0]
	got := map[string]string{}
	for _, col := range c.Columns {
		got[col.Name] = col.Source
	}
	want := map[string]string{"line": "line id", "d": "desc'r", "q": `na"me`, "ij": "i-j", "o": "order"}
	for m, src := range want {
		if got[m] != src {
			t.Errorf("member %s copies %q, want %q", m, got[m], src)
		}
	}
	if strings.Join(c.OrderBy, "|") != "i-j|line id" {
		t.Errorf("order_by %q, want i-j, line id", c.OrderBy)
	}
	j := c.Joins[0]
	if len(j.On) != 1 || j.On[0].Parent != "customer id" || j.On[0].Child != "cust-id" || j.Columns[0].Source != "full name" {
		t.Errorf("join on %+v columns %+v", j.On, j.Columns)
	}
	for _, tc := range []struct{ value, want string }{
		{"qty * price", "an element member copies one child column by name"},
		{"lower(sku)", "an element member copies one child column by name"},
	} {
		cfg := childrenConfig()
		p := cfg.Projections["orders_with_lines"]
		p.Children = map[string]config.Children{"lines": {From: "shop.order_lines", On: map[string]string{"order_id": "id"},
			Columns: map[string]string{"x": tc.value}, OrderBy: []string{"line_no desc"}}}
		cfg.Projections["orders_with_lines"] = p
		_, err := Compile(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `order_by[0] "line_no desc": order_by lists child columns by name (ascending)`) {
			t.Errorf("%q: got %v, want %q and the order_by refused", tc.value, err, tc.want)
		}
	}
}

// TestCompileChildrenErrors: each broken children entry names its key and
// the fix, and all problems come at once.
func TestCompileChildrenErrors(t *testing.T) {
	cases := []struct {
		why    string
		mutate func(*config.Projection, *config.Children, *config.Config)
		want   string
	}{
		{"child table not captured", func(_ *config.Projection, c *config.Children, _ *config.Config) { c.From = "shop.other" },
			"projections.orders_with_lines.children.lines.from shop.other is not in source.tables: add it there"},
		{"child table malformed", func(_ *config.Projection, c *config.Children, _ *config.Config) { c.From = "lines" },
			`projections.orders_with_lines.children.lines.from "lines": want db.table`},
		{"on empty", func(_ *config.Projection, c *config.Children, _ *config.Config) { c.On = nil },
			"projections.orders_with_lines.children.lines.on is empty: map each child column to the parent column it references"},
		{"parent column not copied", func(_ *config.Projection, c *config.Children, _ *config.Config) {
			c.On = map[string]string{"order_id": "number"}
		},
			`projections.orders_with_lines.children.lines.on.order_id: parent column "number" is not copied into a read column of projections.orders_with_lines.columns: add number: number there`},
		{"parent column only computed", func(p *config.Projection, c *config.Children, _ *config.Config) {
			p.Columns["twice"] = "id * 2"
			c.On = map[string]string{"order_id": "id * 2"}
		}, `parent column "id * 2" is not copied into a read column`},
		{"no members", func(_ *config.Projection, c *config.Children, _ *config.Config) { c.Columns = nil },
			"projections.orders_with_lines.children.lines.columns is empty: map each element member to a child column"},
		{"member is an expression", func(_ *config.Projection, c *config.Children, _ *config.Config) {
			c.Columns = map[string]string{"total": "qty * price"}
		},
			`projections.orders_with_lines.children.lines.columns.total "qty * price": an element member copies one child column by name`},
		{"order_by an expression", func(_ *config.Projection, c *config.Children, _ *config.Config) { c.OrderBy = []string{"line_no DESC"} },
			`projections.orders_with_lines.children.lines.order_by[0] "line_no DESC": order_by lists child columns by name (ascending)`},
		{"negative limit", func(_ *config.Projection, c *config.Children, _ *config.Config) { c.Limit = -1 },
			"projections.orders_with_lines.children.lines.limit -1: want the most elements an array holds, or 0"},
		{"array column clashes with a column", func(p *config.Projection, _ *config.Children, _ *config.Config) { p.Columns["lines"] = "customer_id" },
			"projections.orders_with_lines.children.lines: its read column lines is already a column of projections.orders_with_lines.columns: rename one of them"},
		{"count column clashes with a column", func(p *config.Projection, _ *config.Children, _ *config.Config) {
			p.Columns["lines_count"] = "customer_id"
		},
			"projections.orders_with_lines.children.lines: its read column lines_count is already a column of projections.orders_with_lines.columns"},
		{"count column clashes with a join column", func(p *config.Projection, _ *config.Children, c *config.Config) {
			c.Source.Tables = append(c.Source.Tables, "shop.customers")
			p.Join = []config.Join{{From: "shop.customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"lines_count": "n"}}}
		}, "its read column lines_count is already a column of projections.orders_with_lines.join[0].columns"},
		{"readside's prefix", func(p *config.Projection, c *config.Children, _ *config.Config) {
			p.Children = map[string]config.Children{"_rs_lines": *c}
		}, `projections.orders_with_lines.children._rs_lines: read column "_rs_lines": the _rs_ prefix is readside's own: rename the children entry`},
		{"replicated projection", func(p *config.Projection, _ *config.Children, _ *config.Config) { p.Replicated = true },
			"projections.orders_with_lines.children: a replicated (reference) projection cannot nest children"},
	}
	for _, tc := range cases {
		cfg := childrenConfig()
		p := cfg.Projections["orders_with_lines"]
		c := p.Children["lines"]
		// Maps are shared with cfg: fresh ones per case.
		c.On = map[string]string{"order_id": "id"}
		p.Columns = map[string]string{"id": "id", "customer_id": "customer_id"}
		tc.mutate(&p, &c, &cfg)
		if _, ok := p.Children["lines"]; ok {
			p.Children = map[string]config.Children{"lines": c}
		}
		cfg.Projections["orders_with_lines"] = p
		_, err := Compile(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.why, err, tc.want)
		}
	}
	// All at once.
	cfg := childrenConfig()
	p := cfg.Projections["orders_with_lines"]
	p.Children = map[string]config.Children{"lines": {From: "shop.other", Limit: -1}}
	cfg.Projections["orders_with_lines"] = p
	_, err := Compile(cfg)
	for _, want := range []string{"not in source.tables", "on is empty", "columns is empty", "limit -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("every problem at once: %q missing from %v", want, err)
		}
	}
}

// TestCollectChild: a child event's state under its record key — the
// link and the state columns, none of either when it has no parent — and
// the newest per key kept by Build.
func TestCollectChild(t *testing.T) {
	ps, err := Compile(childrenConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	p.Children[0].SetSourceKey([]string{"id"})
	rec := func(key, value string) Record {
		return Record{Topic: "readside.shop.order_lines", Key: []byte(key), Value: []byte(value)}
	}
	line := func(op string, v int, before, after string) string {
		return `{"op":"` + op + `","version":` + strconv.Itoa(v) + `,"before":` + before + `,"after":` + after + `,"source":{"ts_sec":1}}`
	}
	const l7 = `{"id":7,"order_id":3,"line_no":2,"sku":"it's","qty":1}`
	cases := []struct {
		why  string
		recs []Record
		want string // per write: key version link values
	}{
		{"an insert links to its order", []Record{rec(`{"id":7}`, line("c", 5, "null", l7))},
			`{"id":7} 5 ["3"] ["3" "2" "7" "1" "it's"]`},
		{"a delete is a tombstone", []Record{rec(`{"id":7}`, line("d", 6, l7, "null"))}, `{"id":7} 6 [] []`},
		{"a NULL link has no parent", []Record{rec(`{"id":7}`, line("u", 6, l7, `{"id":7,"order_id":null,"line_no":2,"sku":"x","qty":1}`))}, `{"id":7} 6 [] []`},
		{"the newest per key wins, in any order", []Record{
			rec(`{"id":7}`, line("c", 5, "null", l7)),
			rec(`{"id":7}`, line("u", 9, l7, `{"id":7,"order_id":4,"line_no":2,"sku":"x","qty":1}`)),
			rec(`{"id":7}`, line("d", 6, l7, "null")),
		}, `{"id":7} 9 ["4"] ["4" "2" "7" "1" "x"]`},
	}
	for _, tc := range cases {
		b, bad := p.Build(tc.recs)
		if len(bad) > 0 {
			t.Fatalf("%s: %v", tc.why, bad[0].Reason)
		}
		var got []string
		for _, w := range b.ChildWrites {
			got = append(got, w.SourceKey+" "+strconv.Itoa(int(w.Version))+" "+valuesString(w.Link)+" "+valuesString(w.Values))
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.why, strings.Join(got, "\n"), tc.want)
		}
	}
	_, bad := p.Build([]Record{rec("", line("c", 5, "null", l7))})
	if len(bad) != 1 || !strings.Contains(bad[0].Reason.Error(), "without a record key") {
		t.Errorf("a child event without a record key: %v", bad)
	}
	var mc *missingColumn
	_, bad = p.Build([]Record{rec(`{"id":7}`, line("c", 5, "null", `{"id":7,"line_no":2,"sku":"x","qty":1}`))})
	if len(bad) != 1 || !errors.As(bad[0].Reason, &mc) {
		t.Errorf("a child event without its link column must say the column is missing (schemafollow stops on it): %v", bad)
	}
}

func valuesString(vs []Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestChildColumnDropped: a child event without a column the children
// entry reads stops the projection naming the config keys that map it.
func TestChildColumnDropped(t *testing.T) {
	ps, err := Compile(childrenConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	err = p.DroppedColumn("readside.shop.order_lines", &missingColumn{"sku"})
	if err == nil || !strings.Contains(err.Error(), "source column shop.order_lines.sku, which projections.orders_with_lines.children.lines.columns.sku maps, is missing") {
		t.Errorf("got %v", err)
	}
}

// TestChildrenPlan: plan says where an array comes from, its order (ties
// broken by the child's key) and cap, its tables, and the sharding.
func TestChildrenPlan(t *testing.T) {
	ps, err := Compile(childrenConfig())
	if err != nil {
		t.Fatal(err)
	}
	ps[0].Children[0].SetSourceKey([]string{"id"})
	got := strings.Join(ps[0].ChildrenPlan(2), "\n")
	want := "children lines: the shop.order_lines rows with order_lines.order_id = orders.id as a JSON array in lines (ordered by line_no, id; at most 100) and their count in lines_count; " +
		"state in _readside_child_orders_with_lines_lines, link locks in _readside_childlink_orders_with_lines_lines; needs a MariaDB sink; each of the 2 shards keeps every child row's state and refreshes the parents it holds"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestOddColumnNames: names that do not parse as expressions ("Cust Id",
// "a.b") can only be source columns: a children entry's on finds the read
// column copying one, and group_by copies one under its own name, as
// docs/config.md says (not under an expression's made-up name).
func TestOddColumnNames(t *testing.T) {
	cfg := childrenConfig()
	cfg.Projections = map[string]config.Projection{
		"customers": {
			From: "shop.orders", Sink: "reads", Key: []string{"Cust Id"},
			Columns: map[string]string{"Cust Id": "Cust Id"},
			Children: map[string]config.Children{"lines": {From: "shop.order_lines", On: map[string]string{"Cust Id": "Cust Id"},
				Columns: map[string]string{"a.b": "a.b"}, OrderBy: []string{"a.b"}}},
		},
		"per_group": {
			From: "shop.order_lines", Sink: "reads", GroupBy: []string{"a.b", "Cust Id"},
			Aggregates: map[string]string{"n": "count(*)"},
		},
	}
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		switch p.Name {
		case "customers":
			if on := p.Children[0].On; len(on) != 1 || on[0] != (ChildOn{Child: "Cust Id", Parent: "Cust Id", Read: "Cust Id"}) {
				t.Errorf("children on %+v", on)
			}
		case "per_group":
			var names []string
			for _, c := range p.Columns {
				names = append(names, c.Name)
			}
			if got := strings.Join(names, ","); got != "a.b,Cust Id" {
				t.Errorf("group columns %s: want the source columns' own names", got)
			}
		}
	}
}
