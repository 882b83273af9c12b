package sinks

// The statements of an aggregate projection (aggregate.go): its
// contributions table's lock, read and write, and its read table's group
// deltas, empty-group removal, MIN/MAX/AVG recompute and truncation
// rebuild. Rendered once per projection and dialect (statements.go).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// aggStatements are an aggregate projection's statements.
type aggStatements struct {
	read, write, insert multiRow // the contributions table
	// readFirst is read with the truncation floor as one more row, of
	// key "" (its last parameter is the projection's name).
	readFirst multiRow
	// floor is the truncation floor alone (key "", parameter the
	// projection's name), for a batch that reads no contribution.
	floor string
	delta multiRow // group deltas into the read table
	// deleteEmpty, recomputeAvg: head + one group match per group, joined
	// by sep, + tail.
	deleteEmpty, recomputeAvg multiRow
	// recomputeExtremes are, per aggregate (head "" but for MIN and MAX),
	// its recompute from the contributions, for the groups whose delta
	// cannot keep it: each extreme dives only where its own delta needs it.
	recomputeExtremes []multiRow
	withdraw          string // truncation: contributions older than ? become none
	clearGroups       string
	rebuildGroups     string
	// fillJoins copy each join's state into every group row (after
	// rebuildGroups made them afresh).
	fillJoins []string
	// distinct are the count(distinct) aggregates' (aggregate_distinct.go).
	distinct []distinctStatements
	// joined: aggregate_joined.go; nil unless groups come from joins.
	joined *joinedStatements
}

// aggDeltaColumns are the read columns a group delta writes, after the
// group columns: per aggregate its value (a count or sum delta; NULL for
// MIN, MAX and AVG, which recompute sets), its non-NULL count and, for
// AVG, its running sum; then the row count and the version.
func aggDeltaColumns(ag *projections.Aggregation) []string {
	var cols []string
	for _, a := range ag.Aggregates {
		cols = append(cols, a.Column)
		if sums(a) {
			cols = append(cols, projections.NonNullColumn(a.Column))
		}
		if a.Func == projections.AggAvg {
			cols = append(cols, projections.AvgSumColumn(a.Column))
		}
	}
	return append(cols, projections.RowsColumn, "_rs_version")
}

// sums reports an aggregate whose delta is a sum with a non-NULL count.
func sums(a projections.Aggregate) bool {
	return a.Func == projections.AggSum || a.Func == projections.AggSumIf || a.Func == projections.AggAvg || a.Func == projections.AggSumDistinct
}

// extreme reports MIN and MAX.
func extreme(a projections.Aggregate) bool {
	return a.Func == projections.AggMin || a.Func == projections.AggMax
}

// aggStatementsOf renders p's statements in dialect d.
func aggStatementsOf(p *projections.Projection, d dialect) *aggStatements {
	ag := p.Aggregation
	c, t := q(p.ContributionsTable()), q(p.Table)
	var gcols, cgcols, ccols []string
	for _, g := range p.Key {
		gcols = append(gcols, q(g))
		cgcols = append(cgcols, q(projections.GroupColumn(g)))
	}
	for _, a := range ag.Aggregates {
		if a.Stored() {
			ccols = append(ccols, q(projections.ContributionColumn(a.Column)))
		}
	}
	stateCols := append(append([]string{"`key_text`", "`_rs_version`"}, cgcols...), ccols...)
	stateCols = append(stateCols, quoteAll(linkColumns(p))...)
	var stateSets []string
	for _, col := range stateCols[1:] {
		stateSets = append(stateSets, col+" = "+d.newRow(col))
	}
	st := &aggStatements{
		// The stored rows, locked (in key order: the primary key's range
		// scan). A key not there locks nothing under READ COMMITTED: the
		// plain INSERT of its first contribution (insert) is what two
		// transactions with one new key meet at.
		read: multiRow{head: "SELECT " + strings.Join(exactReads(p, p.ContributionsTable(), stateCols), ", ") + " FROM " + c + byPrimaryKey + " WHERE `key_text` IN (", row: "?", sep: ", ", tail: ") FOR UPDATE"},
		// Unconditional: the rows are locked and only newer ones are written.
		write: multiRow{head: "INSERT INTO " + c + " (" + strings.Join(stateCols, ", ") + ") VALUES ",
			row: "(" + placeholders(len(stateCols)) + ")", sep: ", ", tail: d.onDuplicate() + strings.Join(stateSets, ", ")},
		// A source row's first contribution: a duplicate key means another
		// transaction wrote it since the read, and this batch's deltas were
		// computed without it (the batch is retried: contention).
		insert: multiRow{head: "INSERT INTO " + c + " (" + strings.Join(stateCols, ", ") + ") VALUES ",
			row: "(" + placeholders(len(stateCols)) + ")", sep: ", "},
	}
	nulls := strings.Repeat(", NULL", len(stateCols)-2)
	st.readFirst = st.read
	st.readFirst.head = "(" + st.read.head
	st.readFirst.tail = ") FOR UPDATE) UNION ALL SELECT '', version" + nulls + " FROM `_readside_truncations` WHERE projection = ?"
	st.floor = "SELECT '', version" + nulls + " FROM `_readside_truncations` WHERE projection = ?"
	all := append(append([]string{}, gcols...), quoteAll(aggDeltaColumns(ag))...)
	st.delta = multiRow{head: "INSERT INTO " + t + " (" + strings.Join(all, ", ") + ") VALUES ",
		row: "(" + placeholders(len(all)) + ")", sep: ", ", tail: d.onDuplicate() + strings.Join(aggDeltaSets(ag, d), ", ")}
	st.deleteEmpty = groupMatch(p, "DELETE FROM "+t+" WHERE `_rs_rows` <= 0 AND ", "", p.Key, "")
	re, avg := aggRecomputeSets(p, c, cgcols)
	st.recomputeExtremes = make([]multiRow, len(ag.Aggregates))
	for i, set := range re {
		if set != "" {
			st.recomputeExtremes[i] = recomputeExtreme(t, set, p.Key, ag.Aggregates[i])
		}
	}
	if len(avg) > 0 {
		st.recomputeAvg = groupMatch(p, "UPDATE "+t+" AS r SET "+strings.Join(avg, ", ")+" WHERE ", "r.", p.Key, "")
	}
	// Truncation: withdraw what is older, then rebuild every group from
	// the contributions left.
	st.withdraw = aggWithdraw(ag, c, append(slices.Clone(cgcols), quoteAll(linkColumns(p))...))
	st.clearGroups = "DELETE FROM " + t
	if joinedAgg(p) {
		st.joined = joinedStatementsOf(p, d)
	} else {
		for _, j := range p.Joins {
			st.fillJoins = append(st.fillJoins, copyStateEverywhere(p, j))
		}
	}
	st.rebuildGroups = aggRebuildGroups(ag, c, t, all, cgcols)
	st.distinct = distinctStatementsOf(p, d)
	return st
}

// aggDeltaSets are the assignments that add a group delta (the new row)
// to a stored group row.
func aggDeltaSets(ag *projections.Aggregation, d dialect) []string {
	var sets []string
	for _, a := range ag.Aggregates {
		col := q(a.Column)
		switch {
		case a.Counts(), a.Func == projections.AggCountDistinct:
			sets = append(sets, col+" = "+col+" + "+d.newRow(col))
		case sums(a):
			n := q(projections.NonNullColumn(a.Column))
			sets = append(sets, n+" = "+n+" + "+d.newRow(n))
			s := col
			if a.Func == projections.AggAvg {
				s = q(projections.AvgSumColumn(a.Column))
			}
			// Assignments run left to right: n is already the new count.
			sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s = 0, NULL, COALESCE(%[1]s, 0) + COALESCE(%[3]s, 0))", s, n, d.newRow(s)))
		case extreme(a):
			// The delta's value is the furthest added when that keeps the
			// extreme (NULL otherwise: recomputeExtremes reads it).
			fn := "LEAST"
			if a.Func == projections.AggMax {
				fn = "GREATEST"
			}
			sets = append(sets, fmt.Sprintf("%[1]s = COALESCE(%[2]s(%[1]s, %[3]s), %[3]s, %[1]s)", col, fn, d.newRow(col)))
		}
	}
	return append(sets, "`_rs_rows` = `_rs_rows` + "+d.newRow("`_rs_rows`"),
		"`_rs_version` = GREATEST(`_rs_version`, "+d.newRow("`_rs_version`")+")")
}

// aggRecomputeSets are the assignments of a group row r that recompute
// MIN and MAX from the contributions table c (per aggregate, "" for the
// others), and AVG from its running sum and count.
func aggRecomputeSets(p *projections.Projection, c string, cgcols []string) (re, avg []string) {
	var on []string
	for i, g := range p.Key {
		on = append(on, "c."+cgcols[i]+" = r."+q(g))
	}
	indexed := extremeIndexes(p.Aggregation)
	re = make([]string, len(p.Aggregation.Aggregates))
	for i, a := range p.Aggregation.Aggregates {
		col := q(a.Column)
		switch {
		case extreme(a):
			fn := "MIN"
			if a.Func == projections.AggMax {
				fn = "MAX"
			}
			// Dives along the (group, value) index, not MIN() or MAX(): a
			// correlated MIN reads every contribution of the group (a hot
			// group's thousands per batch), a dive one index entry. Of
			// values equal under the collation ('x', 'X') MIN() and MAX()
			// keep the first in index order, so MAX takes the largest
			// value from the end, then the first entry equal to it. A MIN
			// and a MAX of one argument hold equal values and dive along
			// one index, the first's (extremeIndexes).
			v := "c." + q(projections.ContributionColumn(p.Aggregation.Aggregates[indexed[i]].Column))
			where := strings.Join(on, " AND ")
			first := fmt.Sprintf("(SELECT %s FROM %s AS c WHERE %s AND %s IS NOT NULL ORDER BY %s LIMIT 1)", v, c, where, v, v)
			if fn == "MAX" {
				last := fmt.Sprintf("(SELECT %s FROM %s AS c WHERE %s AND %s IS NOT NULL ORDER BY %s DESC LIMIT 1)", v, c, where, v, v)
				first = fmt.Sprintf("(SELECT %s FROM %s AS c WHERE %s AND %s = %s ORDER BY %s LIMIT 1)", v, c, where, v, last, v)
			}
			re[i] = fmt.Sprintf("r.%s = %s", col, first)
		case a.Func == projections.AggAvg:
			n, s := q(projections.NonNullColumn(a.Column)), q(projections.AvgSumColumn(a.Column))
			avg = append(avg, fmt.Sprintf("r.%s = IF(r.%s = 0, NULL, r.%s / r.%s)", col, n, s, n))
		}
	}
	return re, avg
}

// recomputeExtreme is the recompute of MIN or MAX aggregate a (set: its
// assignment) of the groups of a batch, each group matched with the
// furthest value the batch withdrew from it (NULL: unknown). A group
// whose stored extreme is strictly further than every value withdrawn
// still holds it: the withdrawn were not it, and the batch's delta
// already kept the furthest added (the dive was only needed because it
// lies short of the furthest withdrawn). Such a group is not matched,
// so it is neither read from the contributions nor rewritten; a NULL
// extreme, or the server unable to compare, dives.
func recomputeExtreme(t, set string, key []string, a projections.Aggregate) multiRow {
	op := "<"
	if a.Func == projections.AggMax {
		op = ">"
	}
	var match []string
	for _, k := range key {
		match = append(match, "r."+q(k)+" = ?")
	}
	col := "r." + q(a.Column)
	return multiRow{head: "UPDATE " + t + " AS r SET " + set + " WHERE ",
		row: "(" + strings.Join(match, " AND ") + " AND (" + col + " " + op + " ?) IS NOT TRUE)", sep: " OR "}
}

// extremeIndexes are, per aggregate, the aggregate whose contribution
// column and (group, value) index its MIN or MAX recompute reads: the
// first MIN or MAX of the same argument (min(x) and max(x) store equal
// values, so one index serves both and each write maintains one index
// fewer); -1 for the others.
func extremeIndexes(ag *projections.Aggregation) []int {
	out := make([]int, len(ag.Aggregates))
	first := map[string]int{}
	for i, a := range ag.Aggregates {
		out[i] = -1
		if !extreme(a) {
			continue
		}
		arg := a.Arg.SQL(func(name string) string { return q(name) })
		if j, ok := first[arg]; ok {
			out[i] = j
			continue
		}
		first[arg], out[i] = i, i
	}
	return out
}

// aggWithdraw is the truncation's first step: every contribution older
// than the truncation becomes none (no group, a zero count, NULL values;
// cgcols may end with link columns, which become NULL too).
func aggWithdraw(ag *projections.Aggregation, c string, cgcols []string) string {
	var none []string
	for _, col := range cgcols {
		none = append(none, col+" = NULL")
	}
	for _, a := range ag.Aggregates {
		if a.Stored() {
			v := q(projections.ContributionColumn(a.Column))
			if a.Counts() {
				none = append(none, v+" = 0")
			} else {
				none = append(none, v+" = NULL")
			}
		}
	}
	return "UPDATE " + c + " SET " + strings.Join(none, ", ") + ", `_rs_version` = ? WHERE `_rs_version` < ?"
}

// aggRebuildGroups is the truncation's last step: every group row of t
// afresh from the contributions left in c, into the delta's columns all.
func aggRebuildGroups(ag *projections.Aggregation, c, t string, all, cgcols []string) string {
	sel := append([]string(nil), cgcols...)
	for _, a := range ag.Aggregates {
		v := q(projections.ContributionColumn(a.Column))
		switch {
		case a.Func == projections.AggCount && !a.Stored():
			sel = append(sel, "COUNT(*)")
		case a.Func == projections.AggCountDistinct:
			sel = append(sel, "COUNT(DISTINCT "+v+")")
		case a.Func == projections.AggSumDistinct:
			sel = append(sel, "SUM(DISTINCT "+v+")", "COUNT(DISTINCT "+v+")")
		case a.Counts():
			sel = append(sel, "SUM("+v+")")
		case extreme(a):
			sel = append(sel, map[projections.AggFunc]string{projections.AggMin: "MIN(", projections.AggMax: "MAX("}[a.Func]+v+")")
		case a.Func == projections.AggAvg:
			sel = append(sel, "AVG("+v+")", "COUNT("+v+")", "SUM("+v+")")
		default:
			sel = append(sel, "SUM("+v+")", "COUNT("+v+")")
		}
	}
	sel = append(sel, "COUNT(*)", "MAX(`_rs_version`)")
	var notNull []string
	for _, g := range cgcols {
		notNull = append(notNull, g+" IS NOT NULL")
	}
	return "INSERT INTO " + t + " (" + strings.Join(all, ", ") + ") SELECT " + strings.Join(sel, ", ") + " FROM " + c +
		" WHERE " + strings.Join(notNull, " AND ") + " GROUP BY " + strings.Join(cgcols, ", ")
}

// groupMatch is a statement matching groups of p by the columns key
// (prefixed by alias): keyIn.
func groupMatch(p *projections.Projection, head, alias string, key []string, tail string) multiRow {
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = alias + q(k)
	}
	return keyIn(p, head, cols, tail)
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = q(n)
	}
	return out
}

// aggregateDDL is the read table and contributions table of an aggregate
// projection.
func aggregateDDL(p *projections.Projection, types projections.Types) []string {
	ag := p.Aggregation
	var defs, key, cdefs, gcols []string
	for _, c := range p.Columns {
		def := types.Read[c.Name]
		if g, ok := types.GroupRead[c.Name]; ok {
			def = g // a joined parent's column, NOT NULL as a key
		}
		defs = append(defs, q(c.Name)+" "+def)
		key = append(key, q(c.Name))
		g := q(projections.GroupColumn(c.Name))
		gcols = append(gcols, g)
		cdefs = append(cdefs, g+" "+nullable(types.Read[c.Name]))
	}
	var hidden, idx []string
	indexed := extremeIndexes(ag)
	for i, a := range ag.Aggregates {
		defs = append(defs, fmt.Sprintf("%s %s COMMENT %s", q(a.Column), types.Read[a.Column], sqlquote.Literal("readside: "+a.Text)))
		if sums(a) {
			hidden = append(hidden, fmt.Sprintf("%s BIGINT NOT NULL DEFAULT 0 COMMENT %s", q(projections.NonNullColumn(a.Column)), sqlquote.Literal("readside: non-NULL values in "+a.Column)))
		}
		if a.Func == projections.AggAvg {
			hidden = append(hidden, fmt.Sprintf("%s %s COMMENT %s", q(projections.AvgSumColumn(a.Column)), types.Read[projections.AvgSumColumn(a.Column)], sqlquote.Literal("readside: sum of the values in "+a.Column)))
		}
		if a.Stored() {
			v := q(projections.ContributionColumn(a.Column))
			cdefs = append(cdefs, v+" "+types.Contribution[a.Column])
			if extreme(a) && indexed[i] == i {
				idx = append(idx, fmt.Sprintf("KEY %s (%s, %s)", q("_rs_"+a.Column), strings.Join(gcols, ", "), v))
			}
		}
	}
	defs = append(defs, hidden...)
	if !joinedAgg(p) {
		defs = append(defs, joinColumnDefs(p, types)...)
	}
	defs = append(defs, "`_rs_rows` BIGINT NOT NULL DEFAULT 0 COMMENT 'readside: source rows in the group'",
		"`_rs_version` BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'readside: newest source version applied to the group'",
		"PRIMARY KEY ("+strings.Join(key, ", ")+")")
	if !joinedAgg(p) {
		defs = append(defs, joinIndexDefs(p, key)...)
	}
	ldefs, lidx := joinedAggDDL(p, types)
	cdefs = append(cdefs, ldefs...)
	idx = append(idx, lidx...)
	cdefs = append([]string{"`key_text` VARBINARY(" + fmt.Sprint(projections.MaxSourceKeyBytes) + ") NOT NULL COMMENT 'readside: the source primary key (event key)'",
		"`_rs_version` BIGINT UNSIGNED NOT NULL COMMENT 'readside: version of the source row (0: never seen); NULL group: it adds nothing'"}, cdefs...)
	cdefs = append(cdefs, "PRIMARY KEY (`key_text`)")
	cdefs = append(cdefs, idx...)
	out := append([]string{}, bookkeeping...)
	out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s",
		q(p.Table), strings.Join(defs, ",\n  "), sqlquote.Literal(fmt.Sprintf("readside aggregate projection %s from %s.%s", p.Name, p.SourceDB, p.SourceTbl))),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s",
			q(p.ContributionsTable()), strings.Join(cdefs, ",\n  "), sqlquote.Literal(fmt.Sprintf("readside contributions: last contribution of each %s.%s row to projection %s", p.SourceDB, p.SourceTbl, p.Name)+EveryGroupMark)))
	out = append(out, distinctDDL(p, types)...)
	return append(out, joinStateDDL(p, types)...)
}

// EveryGroupMark ends the comment of a contributions table whose every
// shard stores every contribution's group and values (each adds to the
// groups of its own range only). Tables made before that store the groups
// of their shard's range only (NULL elsewhere): the live projector works
// with both, but a reshard needs every shard to hold every group
// (docs/design/resharding.md, "Aggregates and children"); `readside
// replay --rebuild` of the projection makes them anew with the mark.
const EveryGroupMark = " [every shard stores every group]"

// nullable is a column definition made NULL-able.
func nullable(def string) string {
	return strings.TrimSuffix(strings.TrimSuffix(def, " NOT NULL"), " NULL") + " NULL"
}
