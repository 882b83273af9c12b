package verify

// Computed columns on the source side: a read column that is an
// expression (projections.Column.Expr) is computed by its SQL text
// (expr.Expr.SQL) over the source row, in the chunk checksums, the row
// comparisons and the read key the chunks are ranged by. The source
// session runs with time_zone '+00:00' (OpenSource): TIMESTAMP values are
// UTC in events, so an expression over one gives the projector's value
// only in UTC. A computed read key has no index on the source, so each
// chunk's range scans the source table: verify of such a projection reads
// the table once per chunk.

import (
	"context"
	"fmt"
)

// sourceColumn renders a source column reference in the queries over
// the source row s.
func sourceColumn(name string) string { return "s." + q(name) }

// The where filter, typed against the source like the projector's
// (projections.Filter.Typed), is computed on the source too: its Go and
// MySQL values are equal by the expression language's contract, so it
// needs no Go-side evaluation over fetched columns.

// whereTruth is the selected cell saying whether the row passes.
func whereTruth(sql string) string { return "((" + sql + ") IS TRUE)" }

// passesSQL reads whereTruth's cell.
func passesSQL(cell *string) bool { return cell != nil && *cell == "1" }

// typeExpressions types the projection's computed columns and where
// filter against the live source (projections.SourceColumns), which a
// projection compiled by verify alone has not had, and makes the queries
// again with their resolved SQL. Children need it too: which element
// members are text to convert to utf8mb4 (Children.UTF8Member) is read
// from the source's column definitions, and the array over them
// unconverted is not the one the sink builds.
func (v *Verifier) typeExpressions(ctx context.Context) error {
	if !v.p.Computes() && v.p.Where == nil && v.p.Aggregation == nil && len(v.p.Children) == 0 {
		return nil
	}
	if _, err := v.p.SourceColumns(ctx, v.src); err != nil {
		return fmt.Errorf("typing the expressions of projections.%s against the source: %w", v.p.Name, err)
	}
	v.pl = newPlan(v.p, v.pl.childKeys)
	return nil
}
