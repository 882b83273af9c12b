package projections

import (
	"errors"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

func aggConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.orders", "shop.customers", "shop.regions"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"stats": {
		From: "shop.orders", Sink: "reads", GroupBy: []string{"customer_id", "DATE(created_at)"},
		Aggregates: map[string]string{"orders": "count(*)", "total": "sum(total_cents)", "paid": "sum_if(status = 'paid', total_cents)"},
	}}
	return cfg
}

// TestCompileAggregate: group_by entries become the read key (a source
// column under its own name, an expression under its derived name) and
// the aggregates parse into function and arguments.
func TestCompileAggregate(t *testing.T) {
	ps, err := Compile(aggConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if got := strings.Join(p.Key, ","); got != "customer_id,date_created_at" {
		t.Errorf("key %s", got)
	}
	if p.Columns[1].Source != "DATE(created_at)" || !p.Columns[1].Computed() {
		t.Errorf("group expression column: %+v", p.Columns[1])
	}
	ag := p.Aggregation
	if ag == nil || len(ag.Aggregates) != 3 {
		t.Fatalf("aggregation %+v", ag)
	}
	paid := ag.Aggregates[1]
	if paid.Column != "paid" || paid.Func != AggSumIf || paid.Cond.String() != "status = 'paid'" || paid.Arg.String() != "total_cents" {
		t.Errorf("sum_if parsed as %+v", paid)
	}
	if got := paid.SQL(func(n string) string { return n }); got != "SUM(CASE WHEN (status = 'paid') THEN total_cents END)" {
		t.Errorf("sum_if SQL %s", got)
	}
}

// TestCompileCountDistinct: count(distinct expr) and sum(distinct
// expr), any spelling of DISTINCT, parse to their own functions, keep
// the value as the contribution (not a 1/0 count) and are COUNT(DISTINCT
// …) and SUM(DISTINCT …) to the source.
func TestCompileCountDistinct(t *testing.T) {
	for _, c := range []struct{ why, text, arg, sql string }{
		{"a column", "count(distinct customer_id)", "customer_id", "COUNT(DISTINCT customer_id)"},
		{"upper case, extra spaces", "COUNT( DISTINCT  status )", "status", "COUNT(DISTINCT status)"},
		{"an expression", "count(distinct DATE(created_at))", "DATE(created_at)", "COUNT(DISTINCT DATE(created_at))"},
		{"a sum of the distinct values", "sum(Distinct total_cents)", "total_cents", "SUM(DISTINCT total_cents)"},
	} {
		cfg := aggConfig()
		d := cfg.Projections["stats"]
		d.Aggregates = map[string]string{"x": c.text}
		cfg.Projections["stats"] = d
		ps, err := Compile(cfg)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		a := ps[0].Aggregation.Aggregates[0]
		if !a.Distinct() || a.Counts() || !a.Stored() || a.Arg.String() != c.arg || a.Cond != nil {
			t.Errorf("%s: parsed as %+v (distinct %v, counts %v, stored %v)", c.why, a, a.Distinct(), a.Counts(), a.Stored())
		}
		if got := a.SQL(func(n string) string { return n }); got != c.sql {
			t.Errorf("%s: SQL %s, want %s", c.why, got, c.sql)
		}
	}
}

// TestGroupColumnName: the derived names of group_by expressions.
func TestGroupColumnName(t *testing.T) {
	for _, c := range []struct{ why, in, want string }{
		{"a call: parentheses become one _ each run, trimmed", "DATE(created_at)", "date_created_at"},
		{"nested calls and a literal", "DATE_FORMAT(created_at, '%Y-%m')", "date_format_created_at_y_m"},
		{"upper case folds", "YEAR(At)", "year_at"},
	} {
		if got := groupColumnName(c.in); got != c.want {
			t.Errorf("%s: %q → %q, want %q", c.why, c.in, got, c.want)
		}
	}
}

// TestCompileAggregateErrors: each broken aggregate declaration is
// refused with its key and its fix, all at once.
func TestCompileAggregateErrors(t *testing.T) {
	cases := []struct {
		why    string
		mutate func(*config.Projection)
		want   string
	}{
		{"the group is the key", func(p *config.Projection) { p.Key = []string{"id"}; p.Columns = map[string]string{"id": "id"} }, "projections.stats.key: an aggregate projection's key is its group_by columns: remove key"},
		{"aggregates need a group", func(p *config.Projection) { p.GroupBy = nil }, "projections.stats.aggregates without group_by: list the group columns"},
		{"a group needs aggregates", func(p *config.Projection) { p.Aggregates = nil }, "projections.stats.group_by without aggregates"},
		{"unknown function", func(p *config.Projection) { p.Aggregates["x"] = "median(total_cents)" }, `projections.stats.aggregates.x "median(total_cents)": unknown aggregate function "median"`},
		{"an unknown function names every supported form, count(distinct) included", func(p *config.Projection) { p.Aggregates["x"] = "median(total_cents)" }, "count(distinct expr), sum(expr)"},
		{"count(distinct) of two expressions", func(p *config.Projection) { p.Aggregates["x"] = "count(distinct customer_id, status)" }, `projections.stats.aggregates.x "count(distinct customer_id, status)": count(DISTINCT …) of 2 expressions is not supported: count(distinct expr) takes one expression`},
		{"avg(distinct) is not offered", func(p *config.Projection) { p.Aggregates["x"] = "avg(DISTINCT total_cents)" }, `avg(DISTINCT …) is not supported: of the DISTINCT forms only count(distinct expr) and sum(distinct expr) are; the supported aggregates are count(*)`},
		{"sum(distinct) of two expressions", func(p *config.Projection) { p.Aggregates["x"] = "sum(distinct a, b)" }, `sum(DISTINCT …) of 2 expressions is not supported: sum(distinct expr) takes one expression`},
		{"min(distinct) is min", func(p *config.Projection) { p.Aggregates["x"] = "min(distinct total_cents)" }, `min(DISTINCT …) is min(…) (distinct values have the same extremes): drop DISTINCT`},
		{"count(distinct *) is no aggregate", func(p *config.Projection) { p.Aggregates["x"] = "count(distinct *)" }, `count(DISTINCT *) is not an aggregate: count(*) counts the rows`},
		{"count(distinct) without its expression", func(p *config.Projection) { p.Aggregates["x"] = "count(distinct)" }, `count(DISTINCT) needs an expression, e.g. count(distinct customer_id)`},
		{"count(distinct) of an expression that does not parse", func(p *config.Projection) { p.Aggregates["x"] = "count(distinct a b)" }, `projections.stats.aggregates.x "count(distinct a b)": argument "a b": at offset 2: unexpected`},
		{"wrong arity", func(p *config.Projection) { p.Aggregates["x"] = "sum_if(total_cents)" }, `projections.stats.aggregates.x "sum_if(total_cents)": sum_if takes 2 argument(s), got 1`},
		{"not a call", func(p *config.Projection) { p.Aggregates["x"] = "total_cents" }, `projections.stats.aggregates.x "total_cents": want a function call`},
		{"argument does not parse", func(p *config.Projection) { p.Aggregates["x"] = "sum(total_cents +)" }, `projections.stats.aggregates.x "sum(total_cents +)": argument "total_cents +"`},
		{"shard_by outside the group", func(p *config.Projection) { p.ShardBy = "status" }, `projections.stats.shard_by "status" must be one of its group columns`},
		{"columns beyond the group", func(p *config.Projection) { p.Columns = map[string]string{"name": "name"} }, "projections.stats.columns.name: an aggregate projection's columns may hold only its group columns"},
		{"aggregate named like a group column", func(p *config.Projection) { p.Aggregates["customer_id"] = "count(*)" }, "projections.stats.aggregates.customer_id: customer_id is also a group column"},
		{"reserved prefix", func(p *config.Projection) { p.Aggregates["_rs_rows"] = "count(*)" }, "projections.stats.aggregates._rs_rows: the _rs_ prefix is readside's own"},
		{"a join finds the group's parent by group columns only", func(p *config.Projection) {
			p.Join = []config.Join{{From: "shop.customers", On: map[string]string{"id": "referrer_id"}, Columns: map[string]string{"name": "name"}}}
		}, `projections.stats.join[0].on.id: "referrer_id" is not a group_by column copying a source column`},
		{"no join through a join", func(p *config.Projection) {
			p.Join = []config.Join{{From: "shop.customers", As: "c", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"name": "name"}},
				{From: "shop.regions", Via: "c", On: map[string]string{"id": "region_id"}, Columns: map[string]string{"region": "name"}}}
		}, "projections.stats.join[1].via: a join through another join is not supported on an aggregate projection"},
		{"a join column named like an aggregate", func(p *config.Projection) {
			p.Join = []config.Join{{From: "shop.customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"orders": "name"}}}
		}, "projections.stats.join[0].columns.orders: orders is also an aggregate"},
		{"a join column named like a group column", func(p *config.Projection) {
			p.Join = []config.Join{{From: "shop.customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_id": "name"}}}
		}, "projections.stats.join[0].columns.customer_id: customer_id is already a column"},
		{"children refused", func(p *config.Projection) {
			p.Children = map[string]config.Children{"lines": {From: "shop.orders", On: map[string]string{"id": "id"}}}
		}, "projections.stats.children: an aggregate projection cannot nest children"},
		{"replicated refused", func(p *config.Projection) { p.Replicated = true }, "projections.stats: an aggregate projection cannot be replicated"},
		{"no background fan-out", func(p *config.Projection) {
			p.FanOut = "background"
			p.Join = []config.Join{{From: "shop.customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"name": "name"}}}
		}, "projections.stats.fan_out: background: an aggregate's group rows take their joined columns in the batch"},
	}
	for _, c := range cases {
		cfg := aggConfig()
		d := cfg.Projections["stats"]
		d.Aggregates = map[string]string{"orders": "count(*)"}
		c.mutate(&d)
		cfg.Projections["stats"] = d
		_, err := Compile(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error containing %q, got %v", c.why, c.want, err)
		}
	}
	// All at once: three problems in one declaration, three errors.
	cfg := aggConfig()
	d := cfg.Projections["stats"]
	d.Key = []string{"id"}
	d.Columns = map[string]string{"id": "id"}
	d.Aggregates = map[string]string{"a": "median(x)", "b": "sum()"}
	cfg.Projections["stats"] = d
	_, err := Compile(cfg)
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) < 3 {
		t.Errorf("want every problem at once, got %v", err)
	}
}
