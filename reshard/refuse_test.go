package reshard

import (
	"strings"
	"testing"

	"github.com/readside/readside/projections"
)

// TestRefuse: the forms a reshard does not move (aggregates) are refused
// naming the projection's own form (so the operator sees which part is
// the obstacle), every form not supported, and the move with downtime
// onto the sink the reshard was asked for; the forms it moves are not
// refused.
func TestRefuse(t *testing.T) {
	agg := func(joined bool, aggs ...projections.Aggregate) *projections.Projection {
		p := &projections.Projection{Name: "stats", Sink: "reads", Aggregation: &projections.Aggregation{Aggregates: aggs}}
		if joined {
			p.Aggregation.Joined = []projections.JoinedGroup{{Column: "store_id"}}
		}
		return p
	}
	children := func(joins ...*projections.Join) *projections.Projection {
		return &projections.Projection{Name: "films", Sink: "reads",
			Children: []*projections.Children{{Name: "actors", Joins: joins}, {Name: "tags"}}}
	}
	count := projections.Aggregate{Column: "payments", Func: projections.AggCount}
	const every = "it moves projections with key columns, joins, computed columns and children (with or without children joins), not aggregate projections (group_by: plain groups, groups from joined parents, count(distinct) and sum(distinct))"
	for _, tc := range []struct {
		why  string
		p    *projections.Projection
		want []string // "" for no refusal
	}{
		{"a projection with key columns and joins moves", &projections.Projection{Name: "orders", Sink: "reads", Joins: []*projections.Join{{N: 1}}}, nil},
		{"a plain aggregate names its form and the move onto the asked sink",
			agg(false, count),
			[]string{"projection stats is an aggregate projection (group_by), which readside reshard does not move yet", every,
				"set projections.stats.sink: reads3 in the config and restart readside run", "its tables on reads stay until you drop them"}},
		{"groups from joined parents and distinct aggregates are each named",
			agg(true, count, projections.Aggregate{Column: "items", Func: projections.AggCountDistinct}, projections.Aggregate{Column: "amounts", Func: projections.AggSumDistinct}),
			[]string{"an aggregate projection (group_by, with groups from joined parents, count(distinct) in items, sum(distinct) in amounts)", every}},
		{"children, with and without joins, move: their state is the same on every shard and copies whole",
			children(&projections.Join{N: 1}), nil},
		{"a name too long for the fill identity is refused first",
			&projections.Projection{Name: strings.Repeat("n", 190), Sink: "reads"}, []string{"too long for its fill identity"}},
	} {
		err := Refuse(tc.p, "reads3")
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.why, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: not refused", tc.why)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", tc.why, err, w)
			}
		}
	}
}
