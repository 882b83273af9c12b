package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/readside/readside/projections"
)

// A read table that is gone while its shard still holds what the
// projection applied to it (its offsets; on a transaction-consistent
// sink, a frontier that covers the projection) was filled once and then
// dropped, renamed, or projections.P.table changed. Creating it again
// and applying on from those offsets would leave out every row applied
// before, with nothing to say so: the projection (or the consistent
// sink's applier) refuses to start instead, naming the table and the fix.

// DroppedReadTable is such a table.
type DroppedReadTable struct {
	Sink, Shard, Table, Projection string
	// Consistent: the sink is transaction-consistent (its frontier covers
	// the projection); else the shard holds the projection's offsets.
	Consistent bool
}

func (e *DroppedReadTable) Error() string {
	what := fmt.Sprintf("holds the offsets projection %s applied to it", e.Projection)
	if e.Consistent {
		what = fmt.Sprintf("holds a frontier that covers projection %s", e.Projection)
	}
	return fmt.Sprintf("the read table %s of projection %s does not exist on sink %s (shard %s), but the shard %s: the table was dropped or renamed, "+
		"or projections.%s.table changed, after readside filled it; creating it again would leave out every row applied before",
		e.Table, e.Projection, e.Sink, e.Shard, what, e.Projection)
}

// Fix is what brings the table back whole.
func (e *DroppedReadTable) Fix() string {
	if e.Consistent {
		return fmt.Sprintf("restore the table under its name (RENAME TABLE), or fill the sink again: stop readside, drop every table of sink %s's database on every shard, "+
			"start readside (docs/operations.md, \"Transaction-consistent sinks\")", e.Sink)
	}
	return fmt.Sprintf("restore the table under its name (RENAME TABLE ... TO %s), or fill it anew from the topics: readside replay --projection %s --rebuild; then send SIGHUP",
		q(e.Table), e.Projection)
}

// DroppedReadTable finds p's read table gone from a shard that holds
// what p applied to it: nil when every shard has the table or has
// applied nothing of p (a new projection, a sink emptied for a rebuild).
// consistent says the sink is transaction-consistent.
func (s *Sharded) DroppedReadTable(ctx context.Context, p *projections.Projection, consistent bool) (*DroppedReadTable, error) {
	for _, sh := range s.Shards {
		exists, err := sh.tableExists(ctx, p.Table)
		if err != nil || exists {
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
			}
			continue
		}
		applied, err := sh.appliedTo(ctx, s.Name, p.Name, consistent)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		if applied {
			return &DroppedReadTable{Sink: s.Name, Shard: sh.Range.Text, Table: p.Table, Projection: p.Name, Consistent: consistent}, nil
		}
	}
	return nil, nil
}

// tableExists asks the server itself, so that its own rule for the
// letter case of table names (lower_case_table_names) decides.
func (m *MySQL) tableExists(ctx context.Context, table string) (bool, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT 1 FROM "+q(table)+" LIMIT 0")
	if isNoSuchTable(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, rows.Close()
}

// appliedTo reports whether the shard holds what projection applied: its
// offsets, or on a consistent sink a frontier covering it (a frontier of
// an older version lists no projections and covers every one).
func (m *MySQL) appliedTo(ctx context.Context, sink, projection string, consistent bool) (bool, error) {
	if consistent {
		f, err := ReadFrontier(ctx, m.db, sink)
		if err != nil || f.Checkpoint < 0 {
			return false, err
		}
		_, covered := slices.BinarySearch(f.Projections, projection)
		return covered || len(f.Projections) == 0, nil
	}
	var one int
	err := m.db.QueryRowContext(ctx, "SELECT 1 FROM `_readside_offsets` WHERE projection = ? LIMIT 1", projection).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows), isNoSuchTable(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
