package reshard

import (
	"strings"
	"testing"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// TestRefuse: every form moves (aggregates of every form too: their
// contributions copy whole, RefuseServers says where to); only a name
// too long for the fill identity is refused without I/O.
func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		why    string
		p      *projections.Projection
		shards int    // of the sink it moves to; 0: one
		want   string // "" for no refusal
	}{
		{"a projection with key columns and joins moves", &projections.Projection{Name: "orders", Sink: "reads", Joins: []*projections.Join{{N: 1}}}, 0, ""},
		{"an aggregate moves (onto databases new to it, RefuseServers)",
			&projections.Projection{Name: "stats", Sink: "reads", Aggregation: &projections.Aggregation{Aggregates: []projections.Aggregate{{Column: "n", Func: projections.AggCountDistinct}}}}, 0, ""},
		{"children, with and without joins, move: their state is the same on every shard and copies whole",
			&projections.Projection{Name: "films", Sink: "reads", Children: []*projections.Children{{Name: "actors", Joins: []*projections.Join{{N: 1}}}, {Name: "tags"}}}, 0, ""},
		{"a name too long for the fill identity is refused",
			&projections.Projection{Name: strings.Repeat("n", 190), Sink: "reads"}, 0, "too long for its fill identity"},
		{"no shard_by onto several shards: every row would stay on the first",
			&projections.Projection{Name: "lines", Sink: "reads"}, 2,
			"projection lines has no shard_by, and sink reads3 has 2 shards: its rows would all stay on the first shard, and projections.lines.sink: reads3 would not load. Set projections.lines.shard_by (one of its key columns)"},
		{"an aggregate without shard_by names its own group columns",
			&projections.Projection{Name: "stats", Sink: "reads", SourceDB: "shop", SourceTbl: "orders", Aggregation: &projections.Aggregation{}}, 3,
			"shard_by (one of its group columns of shop.orders itself, not a joined parent's)"},
		{"shard_by onto several shards moves", &projections.Projection{Name: "orders", Sink: "reads", ShardBy: "customer_id"}, 2, ""},
		{"replicated onto several shards moves", &projections.Projection{Name: "regions", Sink: "reads", Replicated: true}, 2, ""},
	} {
		err := Refuse(tc.p, "reads3", max(tc.shards, 1))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.why, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v\nwant it to say %q", tc.why, err, tc.want)
		}
	}
}

// TestRefuseServers: an aggregate whose pieces would land on a database
// that keeps an OLD shard is refused, naming its form, each such NEW
// shard with its piece and database, and both fixes (databases new to
// it, or the move with downtime onto the asked sink); pieces only on new
// databases, a NEW shard on an OLD database without pieces (its range
// held there already) and other forms are not refused.
func TestRefuseServers(t *testing.T) {
	rng := func(s string) keyspace.Range {
		r, err := keyspace.ParseRange(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	shards := func(spec ...string) []Shard {
		var out []Shard
		for i := 0; i < len(spec); i += 2 {
			out = append(out, Shard{Range: rng(spec[i]), Server: spec[i+1]})
		}
		return out
	}
	agg := func(joined bool, aggs ...projections.Aggregate) *projections.Projection {
		p := &projections.Projection{Name: "stats", Sink: "reads", Aggregation: &projections.Aggregation{Aggregates: aggs}}
		if joined {
			p.Aggregation.Joined = []projections.JoinedGroup{{Column: "store_id"}}
		}
		return p
	}
	count := projections.Aggregate{Column: "payments", Func: projections.AggCount}
	old := shards("-80", "tcp(h:1)/a0", "80-", "tcp(h:1)/a1")
	for _, tc := range []struct {
		why  string
		p    *projections.Projection
		new  []Shard
		want []string // nil for no refusal
	}{
		{"an aggregate onto databases new to it moves", agg(false, count), shards("-40", "tcp(h:1)/b0", "40-c0", "tcp(h:1)/b1", "c0-", "tcp(h:1)/b2"), nil},
		{"a NEW shard on an OLD database with its range held there has no pieces: it moves", agg(false, count), shards("-40", "tcp(h:1)/a0", "40-", "tcp(h:1)/b1"), nil},
		{"a projection with key columns fills pieces anywhere", &projections.Projection{Name: "orders", Sink: "reads"}, shards("-c0", "tcp(h:1)/a0", "c0-", "tcp(h:1)/b2"), nil},
		{"pieces on a database that keeps an OLD shard: the shard, piece and database named, and both fixes",
			agg(true, count, projections.Aggregate{Column: "items", Func: projections.AggCountDistinct}), shards("-c0", "tcp(h:1)/a0", "c0-", "tcp(h:1)/b2"),
			[]string{"projection stats is an aggregate projection (group_by, with groups from joined parents, count(distinct) in items), which readside reshard moves only onto databases new to it",
				"shard -c0 of sink reads3 would fill 80-c0 on database tcp(h:1)/a0, which keeps shard -80 of sink reads",
				"Put those shards of sink reads3 on databases (address and database name) that sink reads does not use",
				"set projections.stats.sink: reads3 in the config and restart readside run"}},
	} {
		err := RefuseServers(tc.p, "reads", "reads3", old, tc.new, Pieces(old, tc.new, false, false))
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
