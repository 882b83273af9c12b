package sinks

import "github.com/readside/readside/projections"

// StateTables are the state tables that belong to p's read table when it
// is named table: an aggregate projection's contributions and each
// children entry's child state and link (lock) tables. They are named
// after the read table, not the projection, so a rebuild's shadow table
// gets its own, which the swap renames together with the shadow
// (Rebuilder.Swap): the live projector then applies new − old against
// the state the swapped-in table was built from. In declaration order,
// so the names for two tables pair up.
func StateTables(p *projections.Projection, table string) []string {
	c := *p
	c.Table = table
	var out []string
	if p.Aggregation != nil {
		out = append(out, c.ContributionsTable())
		for _, a := range p.Aggregation.Aggregates {
			if a.Distinct() {
				out = append(out, c.DistinctTable(a.Column))
			}
		}
	}
	for _, ch := range p.Children {
		out = append(out, ch.StateTable(&c), ch.LinkTable(&c))
		for _, j := range ch.Joins {
			out = append(out, ch.JoinStateTable(&c, j))
		}
	}
	return out
}
