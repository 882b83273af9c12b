package sinks

// A reshard of an aggregate projection (docs/design/resharding.md,
// "Aggregates and children"): the contributions every shard stores whole
// are copied whole onto a server new to the projection, and the group
// rows and distinct values of the shard's range are rebuilt from them
// rather than copied.

import (
	"context"
	"fmt"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// ContributionsCopy is p's contributions table as a reshard copies it:
// every row, newer versions only.
func ContributionsCopy(p *projections.Projection) StateCopy {
	return StateCopy{TableScan{Table: p.ContributionsTable(), Key: []string{"key_text"}}, "_rs_version"}
}

// RebuildAggregate makes p's group rows and distinct values on s afresh
// from the contributions stored there, keeping only the groups whose
// shard_by value lies in shard (nil: every group), in one transaction:
// for groups from joined parents every contribution first takes the group
// the join state gives its links (the contributions and the state were
// copied at different moments), then the truncation's rebuild (the group
// rows by GROUP BY over the contributions, the distinct values likewise,
// the other shards' groups dropped, each join's state copied into the
// rows). Running it again gives the same rows.
func (s *MySQL) RebuildAggregate(ctx context.Context, p *projections.Projection, shard *keyspace.Range) (err error) {
	if p.Aggregation == nil {
		return nil
	}
	a, err := s.beginApplier(ctx, p)
	if err != nil {
		return err
	}
	defer a.rollbackOnError(&err)
	a.shard = shard
	st := a.st.agg
	var stmts []string
	if joinedAgg(p) {
		stmts = append(stmts, st.joined.moveAll)
	}
	stmts = append(stmts, st.clearGroups, st.rebuildGroups)
	for _, q := range stmts {
		if err := a.exec(q); err != nil {
			return fmt.Errorf("rebuilding the groups of %s from its contributions: %w", p.Table, err)
		}
	}
	if err := a.rebuildDistinct(); err != nil {
		return err
	}
	if err := a.dropForeignGroups(); err != nil {
		return fmt.Errorf("rebuilding the groups of %s from its contributions: %w", p.Table, err)
	}
	for _, fill := range st.fillJoins {
		if err := a.exec(fill); err != nil {
			return fmt.Errorf("rebuilding the groups of %s from its contributions: %w", p.Table, err)
		}
	}
	if err := a.run.commit(ctx); err != nil {
		return fmt.Errorf("rebuilding the groups of %s from its contributions: %w", p.Table, err)
	}
	return nil
}

// DistinctGroupTables are p's distinct values tables and, per table, the
// columns that name a group there (in p.Key's order): a group that leaves
// a server leaves its distinct values too.
func DistinctGroupTables(p *projections.Projection) (tables []string, groupCols []string) {
	if p.Aggregation == nil {
		return nil, nil
	}
	for _, a := range p.Aggregation.Aggregates {
		if a.Distinct() {
			tables = append(tables, p.DistinctTable(a.Column))
		}
	}
	for _, k := range p.Key {
		groupCols = append(groupCols, projections.GroupColumn(k))
	}
	return tables, groupCols
}
