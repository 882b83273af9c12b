package projections

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// viaConfig is the SPEC's orders_with_region, with a warehouse join
// beside it: two direct joins and one through a parent's parent.
func viaConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.orders", "shop.customers", "shop.regions", "shop.warehouses", "shop.countries"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"orders_with_region": {
		From: "shop.orders", Sink: "reads", Key: []string{"customer_id", "id"},
		Columns: map[string]string{"customer_id": "customer_id", "id": "id", "warehouse_id": "warehouse_id"},
		Join: []config.Join{
			{From: "shop.customers", As: "c", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_name": "name"}},
			{From: "shop.regions", Via: "c", On: map[string]string{"id": "region_id"}, Columns: map[string]string{"region_name": "name"}},
			{From: "shop.warehouses", On: map[string]string{"id": "warehouse_id"}, Columns: map[string]string{"warehouse_city": "city"}},
		},
	}}
	return cfg
}

// TestCompileVia: a join via another reads its key from a column the via
// join carries into the read row, hidden, and into its state.
func TestCompileVia(t *testing.T) {
	ps, err := Compile(viaConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	c, r, w := p.Joins[0], p.Joins[1], p.Joins[2]
	if r.Via != c || c.Via != nil || w.Via != nil || c.As != "c" {
		t.Fatalf("via: regions via %v, customers via %v, warehouses via %v", r.Via, c.Via, w.Via)
	}
	carried := Column{Name: "_rs_j1_region_id", Source: "region_id"}
	if got := c.Columns; len(got) != 2 || got[0] != (Column{Name: "customer_name", Source: "name"}) || got[1] != carried || !got[1].Carried() || got[0].Carried() {
		t.Errorf("customers join columns %v, want customer_name then the carried region_id", got)
	}
	if got := r.On; len(got) != 1 || got[0] != (JoinOn{Parent: "id", Child: "region_id", Read: "_rs_j1_region_id"}) {
		t.Errorf("regions join on %+v", got)
	}
	if d := p.Dependents(c); len(d) != 1 || d[0] != r || len(p.Dependents(r)) != 0 || len(p.Dependents(w)) != 0 {
		t.Errorf("dependents of customers %v", d)
	}
	if r.Root() != c || c.Root() != c {
		t.Error("the root of regions' via chain is not the customers join")
	}
	if topics := p.Topics(); len(topics) != 4 {
		t.Errorf("topics %v, want orders and three parents", topics)
	}
}

// TestCompileViaChain: three levels (orders → customers → regions →
// countries), and two joins via one alias on one column share its
// carried column.
func TestCompileViaChain(t *testing.T) {
	cfg := viaConfig()
	d := cfg.Projections["orders_with_region"]
	d.Join[1].As = "r"
	d.Join = append(d.Join,
		config.Join{From: "shop.countries", Via: "r", On: map[string]string{"code": "country"}, Columns: map[string]string{"country_name": "name"}},
		config.Join{From: "shop.countries", Via: "c", On: map[string]string{"code": "region_id"}, Columns: map[string]string{"odd": "name"}})
	cfg.Projections["orders_with_region"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	countries := p.Joins[3]
	if countries.Via != p.Joins[1] || countries.Root() != p.Joins[0] || countries.On[0].Read != "_rs_j2_country" {
		t.Errorf("countries join: via %v, on %+v", countries.Via, countries.On)
	}
	if n := len(p.Joins[0].Columns); n != 2 {
		t.Errorf("customers carries %v: two joins via c on region_id need one carried column", p.Joins[0].Columns)
	}
	if d := p.Dependents(p.Joins[0]); len(d) != 3 {
		t.Errorf("customers has %d dependents, want regions, countries (through regions) and the second countries", len(d))
	}
	if long := carriedName(1, strings.Repeat("x", 64)); len(long) > 62 || !strings.HasPrefix(long, "_rs_j1_") {
		t.Errorf("carried name of a 64-character column: %q", long)
	}
}

// TestCompileViaErrors: bad as/via name the key and the fix, every
// problem at once.
func TestCompileViaErrors(t *testing.T) {
	cases := []struct {
		why    string
		mutate func(j []config.Join) []config.Join
		want   []string
	}{
		{"unknown alias", func(j []config.Join) []config.Join { j[1].Via = "cust"; return j },
			[]string{`projections.orders_with_region.join[1].via "cust": no join of projections.orders_with_region has as: cust: set as: cust on the join this one hangs off, or correct via`}},
		{"via declared after its use", func(j []config.Join) []config.Join { return []config.Join{j[1], j[0], j[2]} },
			[]string{`projections.orders_with_region.join[0].via "c" names join[1], declared after it: move join[1] before join[0]`}},
		{"a join via itself", func(j []config.Join) []config.Join { j[0].Via = "c"; return j },
			[]string{`projections.orders_with_region.join[0].via "c": the via chain of join[0] comes back to itself`}},
		{"two joins via each other", func(j []config.Join) []config.Join { j[0].Via, j[1].As = "r", "r"; return j },
			[]string{`projections.orders_with_region.join[0].via "r": the via chain of join[0] comes back to itself`}},
		{"one alias twice", func(j []config.Join) []config.Join { j[2].As = "c"; return j },
			[]string{`projections.orders_with_region.join[2].as "c": join[0] has the same as: give each join its own alias`}},
		{"an alias that is no name", func(j []config.Join) []config.Join { j[2].As = "x "; return j },
			[]string{`projections.orders_with_region.join[2].as "x ": MySQL names cannot end with a space: name the join with a plain identifier`}},
		{"everything at once", func(j []config.Join) []config.Join {
			j[1].Via, j[2].As = "nope", "c"
			return append(j, config.Join{From: "shop.countries", Via: "later", On: map[string]string{"code": "country"}, Columns: map[string]string{"country_name": "name"}},
				config.Join{From: "shop.countries", As: "later", On: map[string]string{"code": "ghost"}, Columns: map[string]string{"other": "name"}})
		}, []string{`join[1].via "nope": no join`, `join[2].as "c": join[0] has the same as`, `join[3].via "later" names join[4], declared after it`,
			`join[4].on.code: source column "ghost" is not mapped`}},
	}
	for _, c := range cases {
		cfg := viaConfig()
		d := cfg.Projections["orders_with_region"]
		d.Join = c.mutate(d.Join)
		cfg.Projections["orders_with_region"] = d
		_, err := Compile(cfg)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to contain %q", c.why, err, w)
			}
		}
		// A via join's on names its via parent's columns, which the
		// projection's columns need not map.
		if err != nil && strings.Contains(err.Error(), `on.id: source column "region_id" is not mapped`) {
			t.Errorf("%s: the via join's on was checked against the source row: %v", c.why, err)
		}
	}
}

// TestCheckVia: a via join's on naming a column its via parent lacks is
// reported against the source schema, naming the key and the fix.
func TestCheckVia(t *testing.T) {
	ps, err := Compile(viaConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	customers := &sourceTable{types: map[string]string{"id": "int", "name": "varchar(10)"}, columns: []string{"id", "name"}}
	errs := checkVia(p, p.Joins[1], customers)
	want := `projections.orders_with_region.join[1].on.id: column "region_id" does not exist in shop.customers, the parent of join[0] (as: c) this join hangs off (its columns: id, name): name one of its columns`
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
		t.Errorf("got %v, want %q", errs, want)
	}
	customers.types["region_id"] = "int"
	if errs := checkVia(p, p.Joins[1], customers); len(errs) != 0 {
		t.Errorf("a via parent with the column: %v", errs)
	}
	if errs := checkVia(p, p.Joins[0], customers); len(errs) != 0 {
		t.Errorf("a direct join: %v", errs)
	}
}

// TestWritesVia: a child row has no reference of its own to a parent's
// parent — not even when it has a column of the same name as the via
// join's (the sink finds the key in the via join's state).
func TestWritesVia(t *testing.T) {
	cfg := viaConfig()
	d := cfg.Projections["orders_with_region"]
	d.Columns["region_id"] = "region_id"
	cfg.Projections["orders_with_region"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := event.DecodeEvent([]byte(`{"op":"c","version":7,"after":{"id":1,"customer_id":5,"warehouse_id":2,"region_id":9},
		"schema":{"version":"x","columns":{"id":"int","customer_id":"int","warehouse_id":"int","region_id":"int"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := ps[0].Writes(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || len(ws[0].Parents) != 3 || ws[0].Parents[0].Key != "5" || ws[0].Parents[1].Key != "" || ws[0].Parents[2].Key != "2" {
		t.Fatalf("parents %+v, want customer 5, no region, warehouse 2", ws[0].Parents)
	}
}

// TestFanOutScope: plan says which parent changes scatter to every shard:
// every level whose key is not the shard key, a join through a parent's
// parent always (its rows are found by a carried key).
func TestFanOutScope(t *testing.T) {
	cfg := viaConfig()
	d := cfg.Projections["orders_with_region"]
	d.ShardBy = "customer_id"
	cfg.Projections["orders_with_region"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"join[0] shop.customers (as c): a change writes its state on all 2 shards; its fan-out stays on the shard of customer_id, the shard key",
		"join[1] shop.regions via c: a change scatters to all 2 shards: its fan-out finds the read rows by _rs_j1_region_id (shop.customers.region_id, carried), not by the shard key customer_id",
		"join[2] shop.warehouses: a change scatters to all 2 shards: its fan-out finds the read rows by warehouse_id, not by the shard key customer_id",
	}
	got := ps[0].FanOutScope(2)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := ps[0].FanOutScope(1); got != nil {
		t.Errorf("one database: %v", got)
	}
}

// TestJoinColumnKey: a carried key is declared by the on of the join
// that hangs off it, which is what a message about it names.
func TestJoinColumnKey(t *testing.T) {
	ps, err := Compile(viaConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	c := p.Joins[0]
	if got := p.joinColumnKey(c, c.Columns[1]); got != "projections.orders_with_region.join[1].on.id" {
		t.Errorf("carried region_id: %s", got)
	}
	if got := p.joinColumnKey(c, c.Columns[0]); got != "projections.orders_with_region.join[0].columns.customer_name" {
		t.Errorf("customer_name: %s", got)
	}
}
