package sinks

// A reshard of a projection with children (docs/design/resharding.md,
// "Aggregates and children"): the child state every shard holds alike is
// copied whole, and the arrays of the rows a copy wrote are rebuilt from
// the state of the server they landed on.

import (
	"context"
	"strings"

	"github.com/readside/readside/projections"
)

// StateCopy is a state table a reshard copies whole, and the column that
// guards its rows (a copied row replaces a stored one only when newer).
type StateCopy struct {
	Scan    TableScan
	Version string
}

// ChildStateCopies are the tables of p's children that a server new to
// p needs whole: each entry's child state, the state of its element joins
// and their truncation floors. The link tables are not among them: their
// rows are only what a transaction locks, created when first locked.
func ChildStateCopies(p *projections.Projection) []StateCopy {
	if len(p.Children) == 0 {
		return nil
	}
	var out []StateCopy
	var floors []any
	for _, c := range p.Children {
		out = append(out, StateCopy{TableScan{Table: c.StateTable(p), Key: []string{"_rs_key"}}, "_rs_version"})
		floors = append(floors, c.TruncationName(p))
		for _, j := range c.Joins {
			var key []string
			for _, on := range j.On {
				key = append(key, stateKey(on.Parent))
			}
			out = append(out, StateCopy{TableScan{Table: c.JoinStateTable(p, j), Key: key}, "_rs_version"})
			floors = append(floors, c.JoinTruncationName(p, j))
		}
	}
	in := "projection IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(floors)), ", ") + ")"
	return append(out, StateCopy{TableScan{Table: "_readside_truncations", Key: []string{"projection"}, Where: in, Args: floors}, "version"})
}

// RefreshChildLinks rebuilds the array and count of children entry i in
// every read row of the given links (each the row's values of the
// entry's on columns), as a batch does: the link rows locked in sorted
// order first, so a batch writing the state of one of them meanwhile
// either commits before the refresh reads it or refreshes after it.
func (s *MySQL) RefreshChildLinks(ctx context.Context, p *projections.Projection, i int, links [][]any) error {
	if len(links) == 0 {
		return nil
	}
	return s.RepairChildren(ctx, p, i, nil, links)
}
