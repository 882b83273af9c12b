package verify

// Aggregate projections (projections.Aggregation): one read row per
// group, keyed by the group columns. The source side is the statement the
// declaration means, computed by the source itself:
//
//	SELECT <group cols>, COUNT(*), SUM(e), … FROM src WHERE <where> GROUP BY <group cols>
//
// as a derived table named s whose columns are the read columns. Every
// query verify runs over a plain projection's source rows (chunk
// boundaries, checksums, row fetches, each ranged by the read key) then
// runs over the groups unchanged: the read key is the group key, so chunks
// are group key ranges, and the range conditions sit on grouping columns,
// which MariaDB and MySQL push into the derived table's WHERE. A group
// the sink holds and the source does not (its count fell to 0, the row
// stayed) is an extra row like any other.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/projections"
)

func newAggregatePlan(p *projections.Projection) *plan {
	pl := &plan{p: p}
	for _, name := range groupColumns(p) {
		pl.cols = append(pl.cols, column{Read: name, Src: sourceColumn(name)})
	}
	for _, a := range p.Aggregation.Aggregates {
		pl.cols = append(pl.cols, column{Read: a.Column, Src: sourceColumn(a.Column)})
	}
	pl.joinStart = len(pl.cols)
	for _, j := range p.Joins {
		if len(p.Aggregation.Joined) > 0 {
			break // the joins give group columns, not columns of their own
		}
		for _, c := range j.Columns {
			pl.cols = append(pl.cols, column{Read: c.Name, Src: fmt.Sprintf("j%d.%s", j.N, q(c.Source))})
		}
	}
	for _, k := range p.Key {
		pl.srcKey = append(pl.srcKey, sourceColumn(k))
		pl.readKey = append(pl.readKey, q(k))
	}
	return pl
}

// groupColumns are the read columns of the group: the key (shard_by
// first), then any group column the key does not list.
func groupColumns(p *projections.Projection) []string {
	out := slices.Clone(p.Key)
	for _, g := range p.Aggregation.GroupBy {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// groupsFrom is the derived table of the groups the source implies.
func (pl *plan) groupsFrom() string {
	p := pl.p
	if len(p.Aggregation.Joined) > 0 {
		return joinedGroupsFrom(p)
	}
	var sel, by []string
	for i, name := range groupColumns(p) {
		sel = append(sel, groupSQL(p, name, sourceColumn)+" AS "+q(name))
		by = append(by, fmt.Sprint(i+1)) // by position: a read name may also be a source column's
	}
	for _, a := range p.Aggregation.Aggregates {
		sel = append(sel, aggregateSQL(a)+" AS "+q(a.Column))
	}
	where := ""
	if p.Where != nil {
		where = " WHERE (" + p.Where.SQL(sourceColumn) + ")"
	}
	return "(SELECT " + strings.Join(sel, ", ") + " FROM " + q(p.SourceDB) + "." + q(p.SourceTbl) + " s" + where +
		" GROUP BY " + strings.Join(by, ", ") + ") s"
}

// groupSQL computes group column name over the source row, col rendering
// a source column: its column's expression, or the source column of
// that name.
func groupSQL(p *projections.Projection, name string, col func(string) string) string {
	for _, c := range p.Columns {
		if c.Name == name {
			return c.SQL(col)
		}
	}
	return col(name)
}

// aggregateSQL is the aggregate's MySQL text over the source row s: the
// definition of each function (docs/config.md, `projections.<name>.aggregates`).
func aggregateSQL(a projections.Aggregate) string {
	arg := func() string {
		if a.Arg == nil {
			return "*"
		}
		return a.Arg.SQL(sourceColumn)
	}
	cond := func() string { return a.Cond.SQL(sourceColumn) }
	switch a.Func {
	case projections.AggCount:
		return "COUNT(" + arg() + ")"
	case projections.AggCountDistinct:
		return "COUNT(DISTINCT " + arg() + ")"
	case projections.AggSumDistinct:
		return "SUM(DISTINCT " + arg() + ")"
	case projections.AggSum:
		return "SUM(" + arg() + ")"
	case projections.AggMin:
		return "MIN(" + arg() + ")"
	case projections.AggMax:
		return "MAX(" + arg() + ")"
	case projections.AggAvg:
		return "AVG(" + arg() + ")"
	case projections.AggCountIf:
		return "COUNT(CASE WHEN (" + cond() + ") THEN 1 END)"
	case projections.AggSumIf:
		return "SUM(CASE WHEN (" + cond() + ") THEN " + arg() + " END)"
	}
	// Compile refuses any other function; a NULL column makes the
	// difference visible rather than the query fail.
	return "NULL"
}
