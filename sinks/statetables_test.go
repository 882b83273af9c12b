package sinks

import (
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/projections"
)

// TestStateTables: the state tables a rebuild moves with a read table,
// named after the table, so the shadow's, the live and the old ones are
// three sets that pair up one to one.
func TestStateTables(t *testing.T) {
	long := strings.Repeat("x", 60)
	for _, c := range []struct {
		why  string
		p    *projections.Projection
		want []string
	}{
		{"a plain projection has none: its join state is the projection's, not the table's",
			&projections.Projection{Name: "p", Table: "t"}, nil},
		{"an aggregate projection: its contributions",
			&projections.Projection{Name: "p", Table: "t", Aggregation: &projections.Aggregation{}}, []string{"_readside_agg_T"}},
		{"each children entry: its child state and its link table",
			&projections.Projection{Name: "p", Table: "t", Children: []*projections.Children{{Name: "a"}, {Name: "b"}}},
			[]string{"_readside_child_T_a", "_readside_childlink_T_a", "_readside_child_T_b", "_readside_childlink_T_b"}},
	} {
		t.Run(c.why, func(t *testing.T) {
			for _, table := range []string{"t", "t__rebuild", "t__old"} {
				var want []string
				for _, w := range c.want {
					want = append(want, strings.Replace(w, "T", table, 1))
				}
				if got := StateTables(c.p, table); !slices.Equal(got, want) {
					t.Errorf("for table %s: %q, want %q", table, got, want)
				}
			}
			if c.p.Table != "t" {
				t.Errorf("StateTables changed the projection's table to %s", c.p.Table)
			}
		})
	}
	// Hashed names (over 64 characters) still differ per table.
	p := &projections.Projection{Name: "p", Aggregation: &projections.Aggregation{}, Children: []*projections.Children{{Name: "items"}}}
	live, shadow := StateTables(p, long), StateTables(p, long+"__rebuild")
	for i := range live {
		if live[i] == shadow[i] || len(live[i]) > 64 || len(shadow[i]) > 64 {
			t.Errorf("long table: live %s, shadow %s: want distinct names of at most 64 characters", live[i], shadow[i])
		}
	}
}

// TestChildStateCopies: what a reshard copies whole onto a server new to
// a projection with children — each entry's child state by its key, each
// element join's state by the parent's key, all guarded by their
// version, and their truncation floors (and nothing of the link tables,
// whose rows are only locks).
func TestChildStateCopies(t *testing.T) {
	render := func(cs []StateCopy) []string {
		var out []string
		for _, c := range cs {
			s := c.Scan.Table + "(" + strings.Join(c.Scan.Key, ",") + ")/" + c.Version
			if c.Scan.Where != "" {
				s += " " + c.Scan.Where
				for _, a := range c.Scan.Args {
					s += " " + a.(string)
				}
			}
			out = append(out, s)
		}
		return out
	}
	actor := &projections.Join{N: 1, On: []projections.JoinOn{{Child: "actor_id", Parent: "actor_id"}}}
	for _, c := range []struct {
		why  string
		p    *projections.Projection
		want []string
	}{
		{"no children, nothing to copy",
			&projections.Projection{Name: "p", Table: "t"}, nil},
		{"children without a join: the state and its floor",
			&projections.Projection{Name: "p", Table: "t", Children: []*projections.Children{{Name: "tags"}}},
			[]string{"_readside_child_t_tags(_rs_key)/_rs_version", "_readside_truncations(projection)/version projection IN (?) p#child_tags"}},
		{"children with a join: the join's state by the parent's key, and its floor too",
			&projections.Projection{Name: "p", Table: "t", Children: []*projections.Children{{Name: "crew", Joins: []*projections.Join{actor}}, {Name: "tags"}}},
			[]string{"_readside_child_t_crew(_rs_key)/_rs_version", "_readside_childjoin_t_crew_1(k_actor_id)/_rs_version", "_readside_child_t_tags(_rs_key)/_rs_version",
				"_readside_truncations(projection)/version projection IN (?, ?, ?) p#child_crew p#child_crew_join1 p#child_tags"}},
	} {
		if got := render(ChildStateCopies(c.p)); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.why, got, c.want)
		}
	}
}
