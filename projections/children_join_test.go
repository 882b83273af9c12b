package projections

import (
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// castConfig is films with their cast nested, each element carrying its
// actor's names and (via the actor) the actor's country.
func castConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"sakila.film", "sakila.film_actor", "sakila.actor", "sakila.country"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"film_with_actors": {
		From: "sakila.film", Sink: "reads", Key: []string{"film_id"},
		Columns: map[string]string{"film_id": "film_id", "title": "title"},
		Children: map[string]config.Children{"actors": {From: "sakila.film_actor", On: map[string]string{"film_id": "film_id"},
			Columns: map[string]string{"actor_id": "actor_id"},
			Join: []config.Join{
				{From: "sakila.actor", As: "a", On: map[string]string{"actor_id": "actor_id"}, Columns: map[string]string{"last_name": "last_name", "first_name": "first_name"}},
				{From: "sakila.country", Via: "a", On: map[string]string{"country_id": "country_id"}, Columns: map[string]string{"country": "country"}},
			},
			OrderBy: []string{"last_name"}}},
	}}
	return cfg
}

func TestCompileChildrenJoin(t *testing.T) {
	ps, err := Compile(castConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	c := p.Children[0]
	c.SetSourceKey([]string{"film_id", "actor_id"})
	if len(c.Joins) != 2 || c.Joins[0].Topic != "readside.sakila.actor" || c.Joins[1].Via != c.Joins[0] {
		t.Fatalf("joins %+v: actor, then country via the actor", c.Joins)
	}
	if got := strings.Join(p.Topics(), ","); got != "readside.sakila.film,readside.sakila.film_actor,readside.sakila.actor,readside.sakila.country" {
		t.Errorf("topics %s: the projector must consume the children's parents' tables", got)
	}
	var members []string
	for _, m := range c.Members() {
		members = append(members, m.Name)
	}
	if got := strings.Join(members, ","); got != "actor_id,first_name,last_name,country" {
		t.Errorf("members %s: the child's, then each join's (by name), not the carried via key", got)
	}
	if got := strings.Join(c.StateColumns(), ","); got != "film_id,actor_id" {
		t.Errorf("state columns %s: a joined order_by column is not the child's; the join's on column is kept once", got)
	}
	if c.OrderJoin("last_name") != c.Joins[0] || c.OrderJoin("actor_id") != nil {
		t.Errorf("order_by last_name names the actor join's member; actor_id the child's column")
	}
	if got := c.Joins[1].On[0]; got.Child != "country_id" || got.Read != carriedName(1, "country_id") {
		t.Errorf("the via join's on %+v: the actor's country_id, carried by the actor join", got)
	}
	if got := c.JoinStateTable(p, c.Joins[0]); got != "_readside_childjoin_film_with_actors_actors_1" {
		t.Errorf("join state table %s", got)
	}
	plan := strings.Join(p.ChildrenPlan(1), "\n")
	for _, want := range []string{"join[0] sakila.actor (LEFT JOIN on actor.actor_id = film_actor.actor_id) gives each element first_name, last_name, its parent rows in _readside_childjoin_film_with_actors_actors_1",
		"join[1] sakila.country (LEFT JOIN on country.country_id = actor.country_id) gives each element country"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan %q lacks %q", plan, want)
		}
	}
}

// TestCompileChildrenJoinErrors: each broken children join names its key
// and the fix.
func TestCompileChildrenJoinErrors(t *testing.T) {
	const key = "projections.film_with_actors.children.actors.join"
	cases := []struct {
		why    string
		mutate func(*config.Children, *config.Config)
		want   string
	}{
		{"parent table not captured", func(c *config.Children, cfg *config.Config) { cfg.Source.Tables = cfg.Source.Tables[:3] },
			key + "[1].from sakila.country is not in source.tables: add it there"},
		{"parent table malformed", func(c *config.Children, _ *config.Config) { c.Join[0].From = "actor" }, key + `[0].from "actor": want db.table`},
		{"self-join", func(c *config.Children, _ *config.Config) { c.Join[0].From = "sakila.film_actor" }, key + "[0].from sakila.film_actor joins the child table itself"},
		{"on empty", func(c *config.Children, _ *config.Config) { c.Join[0].On = nil }, key + "[0].on is empty: map each parent key column to the child column holding it"},
		{"on an expression", func(c *config.Children, _ *config.Config) {
			c.Join[0].On = map[string]string{"actor_id": "actor_id + 1"}
		},
			key + `[0].on.actor_id "actor_id + 1": on maps a parent column to a column by name`},
		{"no columns", func(c *config.Children, _ *config.Config) { c.Join[0].Columns = nil }, key + "[0].columns is empty: map element members to parent columns"},
		{"member an expression", func(c *config.Children, _ *config.Config) {
			c.Join[0].Columns = map[string]string{"name": "CONCAT(first_name, last_name)"}
		}, key + `[0].columns.name "CONCAT(first_name, last_name)": an element member copies one parent column by name`},
		{"member clashes with a child column", func(c *config.Children, _ *config.Config) {
			c.Join[0].Columns = map[string]string{"actor_id": "actor_id"}
		}, key + "[0].columns.actor_id: actor_id is already an element member (projections.film_with_actors.children.actors.columns): rename one of them"},
		{"member clashes with another join's", func(c *config.Children, _ *config.Config) {
			c.Join[1].Columns = map[string]string{"last_name": "country"}
		}, key + "[1].columns.last_name: last_name is already an element member (" + key + "[0].columns)"},
		{"readside's prefix", func(c *config.Children, _ *config.Config) { c.Join[0].Columns = map[string]string{"_rs_j1_x": "x"} },
			key + "[0].columns._rs_j1_x: names starting with _rs_j are readside's own"},
		{"via unknown", func(c *config.Children, _ *config.Config) { c.Join[1].Via = "b" },
			key + `[1].via "b": no join of this children entry has as: b`},
		{"via a later join", func(c *config.Children, _ *config.Config) {
			c.Join[0].Via, c.Join[1].As = "k", "k"
		}, key + `[0].via "k" names join[1], not an earlier join`},
		{"as twice", func(c *config.Children, _ *config.Config) { c.Join[1].As = "a" }, key + `[1].as "a": join[0] has the same as`},
	}
	for _, tc := range cases {
		cfg := castConfig()
		p := cfg.Projections["film_with_actors"]
		c := p.Children["actors"]
		c.Join = []config.Join{
			{From: "sakila.actor", As: "a", On: map[string]string{"actor_id": "actor_id"}, Columns: map[string]string{"last_name": "last_name"}},
			{From: "sakila.country", Via: "a", On: map[string]string{"country_id": "country_id"}, Columns: map[string]string{"country": "country"}},
		}
		tc.mutate(&c, &cfg)
		p.Children = map[string]config.Children{"actors": c}
		cfg.Projections["film_with_actors"] = p
		_, err := Compile(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.why, err, tc.want)
		}
	}
}

// TestCollectChildJoin: an event of a children join's parent table is
// that parent's state under its key (nil values when deleted), and the
// newest per key is kept; a truncation is kept whole.
func TestCollectChildJoin(t *testing.T) {
	ps, err := Compile(castConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	rec := func(value string) Record {
		return Record{Topic: "readside.sakila.actor", Key: []byte(`{"actor_id":5}`), Value: []byte(value)}
	}
	ev := func(op string, v int, before, after string) string {
		return `{"op":"` + op + `","version":` + strconv.Itoa(v) + `,"before":` + before + `,"after":` + after + `,"source":{"ts_sec":1}}`
	}
	const a5 = `{"actor_id":5,"first_name":"Ian","last_name":"Holm","country_id":2}`
	cases := []struct {
		why  string
		recs []Record
		want string // per write: join key version link values
	}{
		{"an insert is the parent's state", []Record{rec(ev("c", 5, "null", a5))}, `1 5 5 ["5"] ["Ian" "Holm" "2"]`},
		{"a delete leaves only the version", []Record{rec(ev("d", 6, a5, "null"))}, `1 5 6 ["5"] []`},
		{"the newest per key wins", []Record{rec(ev("u", 9, a5, `{"actor_id":5,"first_name":"I.","last_name":"Holm","country_id":null}`)), rec(ev("c", 5, "null", a5))},
			`1 5 9 ["5"] ["I." "Holm" NULL]`},
	}
	for _, tc := range cases {
		b, bad := p.Build(tc.recs)
		if len(bad) > 0 {
			t.Fatalf("%s: %v", tc.why, bad[0].Reason)
		}
		var got []string
		for _, w := range b.ChildWrites {
			got = append(got, strconv.Itoa(w.Join)+" "+w.SourceKey+" "+strconv.Itoa(int(w.Version))+" "+valuesString(w.Link)+" "+valuesString(w.Values))
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.why, strings.Join(got, "\n"), tc.want)
		}
	}
	b, _ := p.Build([]Record{rec(`{"op":"t","version":7,"source":{"ts_sec":1}}`)})
	if len(b.ChildWrites) != 1 || !b.ChildWrites[0].Truncate || b.ChildWrites[0].Join != 1 {
		t.Errorf("a truncation of the actor table: %+v", b.ChildWrites)
	}
}

// TestChildJoinColumnDropped: an actor event without a column a children
// join copies stops the projection naming the config key that maps it.
func TestChildJoinColumnDropped(t *testing.T) {
	ps, err := Compile(castConfig())
	if err != nil {
		t.Fatal(err)
	}
	err = ps[0].DroppedColumn("readside.sakila.actor", &missingColumn{"last_name"})
	if err == nil || !strings.Contains(err.Error(), "source column sakila.actor.last_name, which projections.film_with_actors.children.actors.join[0].columns.last_name maps, is missing") {
		t.Errorf("got %v", err)
	}
}
