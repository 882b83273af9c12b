package projections

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// rentalConfig is revenue per store (payment → staff.store_id) and sales
// per category (payment → rental → inventory → film.category_id).
func rentalConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"rent.payment", "rent.staff", "rent.rental", "rent.inventory", "rent.film"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{
		"by_store": {From: "rent.payment", Sink: "reads",
			Join:       []config.Join{{From: "rent.staff", On: map[string]string{"staff_id": "staff_id"}, Columns: map[string]string{"store_id": "store_id"}}},
			GroupBy:    []string{"store_id", "DATE_FORMAT(payment_date, '%Y-%m')"},
			Aggregates: map[string]string{"revenue": "sum(amount)"}},
		"by_category": {From: "rent.payment", Sink: "reads",
			Join: []config.Join{
				{From: "rent.rental", As: "r", On: map[string]string{"rental_id": "rental_id"}},
				{From: "rent.inventory", As: "i", Via: "r", On: map[string]string{"inventory_id": "inventory_id"}},
				{From: "rent.film", Via: "i", On: map[string]string{"film_id": "film_id"}, Columns: map[string]string{"category_id": "category_id"}},
			},
			GroupBy:    []string{"category_id"},
			Aggregates: map[string]string{"payments": "count(*)"}},
	}
	family := cfg.Projections["by_category"]
	family.GroupBy = []string{"category_id DIV 2"}
	cfg.Projections["by_family"] = family
	return cfg
}

// TestCompileJoinedGroups: a group_by entry naming a join's column is a
// joined group column, at any depth; the root joins' on columns become
// the contributions' links; joins that only lead to another need no
// columns.
func TestCompileJoinedGroups(t *testing.T) {
	ps, err := Compile(rentalConfig())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Projection{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	for _, c := range []struct {
		why, name, key string
		joined         []string // group column@join N
		links          []string // root joins' on reads
	}{
		{"one join: store_id from staff, beside a source expression", "by_store", "store_id,date_format_payment_date_y_m", []string{"store_id@1"}, []string{"_rs_l1_staff_id"}},
		{"three joins through via: category_id from film", "by_category", "category_id", []string{"category_id@3"}, []string{"_rs_l1_rental_id"}},
		{"an expression over a joined column", "by_family", "category_id_div_2", []string{"category_id_div_2@3"}, []string{"_rs_l1_rental_id"}},
	} {
		p := byName[c.name]
		if got := strings.Join(p.Key, ","); got != c.key {
			t.Errorf("%s: key %s, want %s", c.why, got, c.key)
		}
		var joined []string
		for _, g := range p.Aggregation.Joined {
			joined = append(joined, g.Column+"@"+string(rune('0'+g.Join.N)))
			if p.Key[g.Index] != g.Column {
				t.Errorf("%s: %s at key index %d", c.why, g.Column, g.Index)
			}
		}
		if strings.Join(joined, ",") != strings.Join(c.joined, ",") {
			t.Errorf("%s: joined %v, want %v", c.why, joined, c.joined)
		}
		var links []string
		for _, j := range p.Joins {
			if j.Via == nil {
				for _, o := range j.On {
					links = append(links, o.Read)
				}
			}
		}
		if strings.Join(links, ",") != strings.Join(c.links, ",") {
			t.Errorf("%s: links %v, want %v", c.why, links, c.links)
		}
	}
	// plan names each joined column's chain and its state tables.
	plan := strings.Join(byName["by_category"].JoinedGroupsPlan(), "\n")
	for _, want := range []string{"group column category_id from rent.film (via rent.rental -> rent.inventory -> rent.film)",
		"_readside_join_by_category_1, _readside_join_by_category_2, _readside_join_by_category_3", "applies alone per shard"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
}

// TestCompileJoinedGroupsErrors: each broken declaration names its key
// and its fix.
func TestCompileJoinedGroupsErrors(t *testing.T) {
	for _, c := range []struct {
		why    string
		name   string
		mutate func(*config.Projection)
		want   string
	}{
		{"a join column outside group_by has no place in the read table", "by_store", func(p *config.Projection) {
			p.Join[0].Columns = map[string]string{"store_id": "store_id", "staff_name": "name"}
		}, "projections.by_store.join[0].columns.staff_name: in an aggregate projection whose groups come from joined parents, a join's columns are group columns: add staff_name to group_by, or remove it"},
		{"a group's shard cannot move with its parent", "by_store", func(p *config.Projection) { p.ShardBy = "store_id" },
			`projections.by_store.shard_by "store_id" is a joined parent's column`},
		{"an expression reads the source row or one join's columns, not both", "by_store", func(p *config.Projection) { p.GroupBy = []string{"store_id + customer_id"} },
			`projections.by_store.group_by[0] "store_id + customer_id": it reads customer_id, which no join declares, beside a joined parent's column`},
		{"a join with no columns must lead somewhere", "by_category", func(p *config.Projection) { p.Join[1].As = "" },
			"projections.by_category.join[1].columns is empty"},
		{"a joined group column named like an aggregate", "by_store", func(p *config.Projection) { p.Aggregates = map[string]string{"store_id": "count(*)"} },
			"projections.by_store.aggregates.store_id: store_id is also a group column"},
		{"group_by naming a root join's on column is the source column: a join column of that name clashes", "by_store", func(p *config.Projection) {
			p.GroupBy = []string{"staff_id"}
			p.Join[0].Columns = map[string]string{"staff_id": "store_id"}
		}, "projections.by_store.join[0].columns.staff_id: staff_id is already a column"},
	} {
		cfg := rentalConfig()
		d := cfg.Projections[c.name]
		d.Join = append([]config.Join(nil), d.Join...)
		c.mutate(&d)
		cfg.Projections[c.name] = d
		_, err := Compile(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error containing %q, got %v", c.why, c.want, err)
		}
	}
}

// TestUnshardedAggregateOnShardedSink: an aggregate without shard_by on a
// sharded sink is told which group columns it may be sharded by (the
// source row's, never a joined parent's), or, when all its groups come
// from joined parents, that it needs a sink with one shard; never to
// replicate it, which an aggregate cannot be.
func TestUnshardedAggregateOnShardedSink(t *testing.T) {
	cfg := rentalConfig()
	cfg.Sinks["reads"] = config.Sink{Shards: []config.Shard{{KeyRange: "-80", DSN: "a"}, {KeyRange: "80-", DSN: "b"}}}
	_, err := Compile(cfg)
	if err == nil {
		t.Fatal("want errors for the aggregates without shard_by on a sharded sink")
	}
	for _, want := range []string{
		"projections.by_store: sink reads has 2 shards: set shard_by to one of its group columns of the source row [date_format_payment_date_y_m] (an aggregate cannot be replicated)",
		"projections.by_category: sink reads has 2 shards, but every group column of this aggregate (category_id) is a joined parent's",
		"put the projection on a sink with one shard, or add a group column of rent.payment to group_by and shard_by it",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "replicated: true") {
		t.Errorf("an aggregate cannot be replicated, yet the error suggests it: %v", err)
	}
}

// TestJoinedGroupsEmptyJoinOnce: a join of an aggregate whose groups come
// from joined parents, with no columns and nothing hanging off it, is
// refused once, with the fix that form needs, not also with the plain
// join's "map read columns" advice.
func TestJoinedGroupsEmptyJoinOnce(t *testing.T) {
	cfg := rentalConfig()
	d := cfg.Projections["by_category"]
	d.Join = append([]config.Join(nil), d.Join...)
	d.Join[1].As = ""
	cfg.Projections["by_category"] = d
	_, err := Compile(cfg)
	if err == nil {
		t.Fatal("want an error for join[1] without columns")
	}
	if n := strings.Count(err.Error(), "projections.by_category.join[1].columns is empty"); n != 1 {
		t.Errorf("join[1]'s empty columns reported %d times, want once:\n%v", n, err)
	}
	if strings.Contains(err.Error(), "map read columns to parent columns") {
		t.Errorf("the plain join's advice is given to a joined-groups aggregate:\n%v", err)
	}
}

// TestMixedGroupExpressionRefusedAlone: a group expression mixing the
// source row's and a join's columns is refused with its own fix, without
// the descriptive join's "join finds a group's parent by its group
// columns" advice its join would otherwise draw.
func TestMixedGroupExpressionRefusedAlone(t *testing.T) {
	cfg := rentalConfig()
	d := cfg.Projections["by_store"]
	d.GroupBy = []string{"store_id + customer_id"}
	cfg.Projections["by_store"] = d
	_, err := Compile(cfg)
	if err == nil || !strings.Contains(err.Error(), "beside a joined parent's column") {
		t.Fatalf("want the mixed expression refused, got %v", err)
	}
	if strings.Contains(err.Error(), "is not a group_by column copying a source column") {
		t.Errorf("the join draws the descriptive join's advice too:\n%v", err)
	}
}
