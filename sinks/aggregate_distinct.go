package sinks

// count(distinct expr) (docs/design/aggregates.md, "Distinct counts"). A
// group's distinct count is the number of values some source row of the
// group holds, so each such aggregate keeps a reference count per (group,
// value) in a table of its own (projections.DistinctTable), keyed by the
// value in its column's collation: the server, not readside, decides that
// 'a' and 'A' are one value under a _ci collation, as its COUNT(DISTINCT)
// does. The counts move with the stored contributions (aggregate.go):
// the batch's coalesced ±1 per (group, value) is added in one upsert, and
// the group's count moves by +1 for each value whose reference count
// went from 0 to positive and by −1 for each that went back to 0.
//
// Which values crossed is read back from the server rather than worked
// out in Go, where two spellings of one value are two keys: the upsert
// also records, per row, how much this transaction added (_rs_pending,
// reset on the first touch by another transaction, told apart by
// _rs_batch), so a row's count before the batch is _rs_refs −
// _rs_pending. The upsert locks each row it writes until commit, so no
// other transaction's change falls between the upsert and the read, and
// a second transaction that adds the same new value waits for the first
// to commit and then finds the value counted. It runs before the group
// deltas' upsert (applyDeltas), which then carries the distinct counts'
// moves with the other deltas: one upsert of the group rows per batch.
// Every transaction locks each aggregate's reference counts in one order
// (its batch's (group, value) texts, sorted) and then its groups. The
// aggregates go in the order of their row counts in the batch, most
// first (distinctWritesOf): two transactions take them in two orders
// only when their batches' counts disagree, and then deadlock only if
// each holds a row of one aggregate that the other also writes. Two
// spellings of one value under a _ci collation ('a', 'A'), one row to
// the server and two keys in Go, can also be locked in two orders. InnoDB
// reports either as a deadlock and the batch is retried.

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// distinctStatements are one count(distinct) aggregate's statements.
type distinctStatements struct {
	i int // the aggregate's index in Aggregation.Aggregates
	// upsert adds (group, value, n, batch) rows to the reference counts.
	upsert multiRow
	// read reads the touched rows (batch, then (group, value) matches):
	// group, value, reference count and what this batch added.
	read multiRow
	// dropZero removes the rows whose count fell to 0.
	dropZero multiRow
	// clear and rebuild make the reference counts afresh from the
	// contributions (truncation); clearGroups and rebuildGroups do it for
	// some groups (repair: a group match is appended, then rebuildTail).
	clear, rebuild             string
	clearGroups, rebuildGroups multiRow
	rebuildTail                string
}

// distinctCols are the columns of a DistinctTable: the group columns (as
// in the contributions table), the value, the reference count, what the
// last transaction to touch the row added, and that transaction's token.
func distinctCols(p *projections.Projection) (groups []string, value, refs, pending, batch string) {
	for _, g := range p.Key {
		groups = append(groups, q(projections.GroupColumn(g)))
	}
	return groups, q("_rs_value"), q("_rs_refs"), q("_rs_pending"), q("_rs_batch")
}

// distinctStatementsOf renders the statements of p's count(distinct)
// aggregates.
func distinctStatementsOf(p *projections.Projection, d dialect) []distinctStatements {
	var out []distinctStatements
	gcols, v, refs, pending, batch := distinctCols(p)
	all := append(slices.Clone(gcols), v, refs, pending, batch)
	match := append(slices.Clone(gcols), v)
	for i, a := range p.Aggregation.Aggregates {
		if !a.Distinct() {
			continue
		}
		t, c := q(p.DistinctTable(a.Column)), q(p.ContributionsTable())
		cv := q(projections.ContributionColumn(a.Column))
		var notNull []string
		for _, g := range gcols {
			notNull = append(notNull, g+" IS NOT NULL")
		}
		sel := "SELECT " + strings.Join(gcols, ", ") + ", " + cv + ", COUNT(*), 0, 0 FROM " + c +
			" WHERE " + strings.Join(notNull, " AND ") + " AND " + cv + " IS NOT NULL"
		by := " GROUP BY " + strings.Join(gcols, ", ") + ", " + cv
		out = append(out, distinctStatements{
			i: i,
			// Assignments run left to right: _rs_pending reads the old
			// _rs_batch before it is set.
			upsert: multiRow{head: "INSERT INTO " + t + " (" + strings.Join(all, ", ") + ") VALUES ",
				row: "(" + placeholders(len(all)) + ")", sep: ", ",
				tail: d.onDuplicate() + fmt.Sprintf("%[1]s = IF(%[2]s = %[3]s, %[1]s + %[4]s, %[4]s), %[5]s = %[5]s + %[4]s, %[2]s = %[3]s",
					pending, batch, d.newRow(batch), d.newRow(refs), refs)},
			// Only the rows whose count crossed 0 (held before the batch
			// and not after, or the reverse) come back: the others move
			// no group, and on a value most of a group's rows share
			// (a status) they are nearly all the rows touched.
			read: keyIn(p, "SELECT "+strings.Join(exactReads(p, p.DistinctTable(a.Column), append(slices.Clone(gcols), v)), ", ")+", "+refs+", "+pending+" FROM "+t+" WHERE "+batch+" = ? AND ("+
				refs+" > 0) <> ("+refs+" > "+pending+") AND ", match, ""),
			dropZero: keyIn(p, "DELETE FROM "+t+" WHERE "+refs+" <= 0 AND ", match, ""),
			clear:    "DELETE FROM " + t,
			// GROUP BY the value compares it under its collation, as the
			// table's primary key does: one row per value the key allows.
			rebuild:       "INSERT INTO " + t + " (" + strings.Join(all, ", ") + ") " + sel + by,
			clearGroups:   keyIn(p, "DELETE FROM "+t+" WHERE ", gcols, ""),
			rebuildGroups: keyIn(p, "INSERT INTO "+t+" ("+strings.Join(all, ", ")+") "+sel+" AND ", gcols, ""),
			rebuildTail:   by,
		})
	}
	return out
}

// distinctDDL is the reference count table of each count(distinct)
// aggregate of p.
func distinctDDL(p *projections.Projection, types projections.Types) []string {
	var out []string
	gcols, v, refs, pending, batch := distinctCols(p)
	for _, a := range p.Aggregation.Aggregates {
		if !a.Distinct() {
			continue
		}
		var defs []string
		for i, c := range p.Columns {
			defs = append(defs, gcols[i]+" "+notNull(types.Read[c.Name]))
		}
		defs = append(defs, v+" "+notNull(types.Contribution[a.Column])+" COMMENT "+sqlquote.Literal("readside: a value of "+a.Text),
			refs+" BIGINT NOT NULL COMMENT 'readside: source rows of the group holding the value'",
			pending+" BIGINT NOT NULL DEFAULT 0 COMMENT 'readside: what the last transaction to touch the row added'",
			batch+" BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'readside: that transaction'",
			"PRIMARY KEY ("+strings.Join(append(slices.Clone(gcols), v), ", ")+")")
		out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s",
			q(p.DistinctTable(a.Column)), strings.Join(defs, ",\n  "),
			sqlquote.Literal(fmt.Sprintf("readside distinct values: per group of %s, the source rows holding each value of %s", p.Name, a.Column))))
	}
	return out
}

// notNull is a column definition made NOT NULL.
func notNull(def string) string {
	return strings.TrimSuffix(strings.TrimSuffix(def, " NOT NULL"), " NULL") + " NOT NULL"
}

// plannedDistinctTables are the columns distinctDDL gives p's reference
// count tables, for check and plan to compare.
func plannedDistinctTables(p *projections.Projection, types projections.Types) []plannedTable {
	var out []plannedTable
	for _, a := range p.Aggregation.Aggregates {
		if !a.Distinct() {
			continue
		}
		t := plannedTable{name: p.DistinctTable(a.Column), read: map[string]string{}}
		for _, c := range p.Columns {
			name := projections.GroupColumn(c.Name)
			col := parseDef(name, notNull(types.Read[c.Name]))
			col.Key, col.Groups = true, true
			t.columns = append(t.columns, col)
			t.read[name] = c.Name
		}
		val := parseDef("_rs_value", notNull(types.Contribution[a.Column]))
		val.Key, val.Groups, val.Comment = true, true, "readside: a value of "+a.Text
		t.columns = append(t.columns, val,
			Column{Name: "_rs_refs", Type: "bigint", Comment: "readside: source rows of the group holding the value"},
			Column{Name: "_rs_pending", Type: "bigint", Default: "0", HasDefault: true, Comment: "readside: what the last transaction to touch the row added"},
			Column{Name: "_rs_batch", Type: "bigint unsigned", Default: "0", HasDefault: true, Comment: "readside: that transaction"})
		t.read["_rs_value"] = a.Column
		out = append(out, t)
	}
	return out
}

// distinctDelta is a batch's net change of one (group, value) reference
// count, as Go sees the value (its bytes: the server may call two of
// them one value).
type distinctDelta struct {
	group []projections.Value
	value projections.Value
	n     int64
}

// distinctDeltas are a batch's reference count changes per count(distinct)
// aggregate, coalesced per (group, value bytes).
type distinctDeltas struct {
	by    []map[string]*distinctDelta // per aggregate (nil for the others)
	order [][]string
}

func newDistinctDeltas(ag *projections.Aggregation) *distinctDeltas {
	dd := &distinctDeltas{by: make([]map[string]*distinctDelta, len(ag.Aggregates)), order: make([][]string, len(ag.Aggregates))}
	for i, a := range ag.Aggregates {
		if a.Distinct() {
			dd.by[i] = map[string]*distinctDelta{}
		}
	}
	return dd
}

// add counts (sign 1) or uncounts (sign −1) value v of aggregate i in
// group, whose text is gk. A NULL is no value (COUNT(DISTINCT) skips it).
func (dd *distinctDeltas) add(i int, gk string, group []projections.Value, v projections.Value, sign int64) {
	if v.Kind() == projections.NullValue {
		return
	}
	k := gk + "\x00" + valuesText([]projections.Value{v})
	d := dd.by[i][k]
	if d == nil {
		d = &distinctDelta{group: group, value: v}
		dd.by[i][k] = d
		dd.order[i] = append(dd.order[i], k)
	}
	d.n += sign
}

// distinctChunk is the most reference count rows per statement (bytes
// permitting): a batch of new orders touches a (group, value) per order,
// and every statement in the window where its groups are locked (from the
// first reference count upsert to the commit) is time another
// transaction on those groups waits.
const distinctChunk = 5000

// distinctMoves moves the batch's reference counts and returns what that
// does to its groups' distinct aggregates, by the groupText of the group
// as the server returned it, in the order first seen (applyDeltas adds
// them to the group deltas).
func (a *applier) distinctMoves(ds *deltas) (map[string]*distinctMove, []string, error) {
	if len(a.st.agg.distinct) == 0 {
		return nil, nil, nil
	}
	batch := rand.Uint64() >> 1 // a BIGINT UNSIGNED; 0 is the rebuilt rows'
	mv := &distinctMoving{moves: map[string]*distinctMove{}}
	for _, w := range distinctWritesOf(a.st.agg.distinct, ds.distinct, batch) {
		if err := a.moveDistinct(w, batch, mv); err != nil {
			return nil, nil, err
		}
	}
	return mv.moves, mv.order, nil
}

// distinctWrites are one count(distinct) aggregate's reference count
// changes in a batch: the upsert's rows and the (group, value) matches of
// the read of those that crossed 0.
type distinctWrites struct {
	st          *distinctStatements
	rows, match [][]any
}

// distinctWritesOf are the batch's reference count changes per distinct
// aggregate, the aggregate with the most (group, value) rows first. Rows
// that many of the batch's events share (a status: a few per group) are
// the ones the other transaction of a poll also writes, and each waits
// for the other's from its upsert to its commit; rows that one event
// each moves (a total: about one per order) are rarely shared. Writing
// the least shared aggregate first and the most shared last, right
// before the group upsert and the commit, shortens the time the shared
// rows stay locked. Each aggregate's read still follows all of its own
// upserts (a value's two spellings meet on one row).
func distinctWritesOf(sts []distinctStatements, dd *distinctDeltas, batch uint64) []distinctWrites {
	var out []distinctWrites
	for i := range sts {
		w := distinctWrites{st: &sts[i]}
		keys := slices.Clone(dd.order[w.st.i])
		slices.Sort(keys)
		for _, k := range keys {
			d := dd.by[w.st.i][k]
			if d.n == 0 { // the group's rows still hold the value as often
				continue
			}
			row := appendValues(nil, d.group)
			row = append(row, &d.value)
			w.match = append(w.match, slices.Clone(row))
			w.rows = append(w.rows, append(row, d.n, d.n, batch))
		}
		if len(w.rows) > 0 {
			out = append(out, w)
		}
	}
	// Stable: aggregates with as many rows keep the declaration's order.
	slices.SortStableFunc(out, func(x, y distinctWrites) int { return len(y.rows) - len(x.rows) })
	return out
}

// distinctMoving collects a batch's moves of its groups' distinct
// aggregates, by groupText, in the order first seen.
type distinctMoving struct {
	moves map[string]*distinctMove
	order []string
}

// moveDistinct upserts one aggregate's reference counts, reads those that
// crossed 0 into mv and removes those that fell to 0.
func (a *applier) moveDistinct(w distinctWrites, batch uint64, mv *distinctMoving) error {
	ag := a.p.Aggregation
	col := ag.Aggregates[w.st.i].Column
	if err := a.execRowsOf(&w.st.upsert, w.rows, distinctChunk); err != nil {
		return fmt.Errorf("counting the distinct values of %s.%s: %w", a.p.Table, col, err)
	}
	var zero [][]any
	for _, sp := range cut(len(w.match), distinctChunk, func(i int) int { return argBytes(w.match[i]) }, a.limit) {
		part := w.match[sp[0]:sp[1]]
		args := append([]any{batch}, slices.Concat(part...)...)
		var bad error
		err := a.readDistinct(w.st.read.text(len(part)), args, func(group []projections.Value, value projections.Value, refs, pending int64) {
			before, after := refs-pending > 0, refs > 0
			if before == after {
				return
			}
			if !after {
				zero = append(zero, append(appendValues(nil, group), &value))
			}
			if err := mv.cross(ag, w.st.i, group, value, after); err != nil && bad == nil {
				bad = fmt.Errorf("aggregate %s: %w", col, err)
			}
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return fmt.Errorf("reading the distinct values of %s.%s: %w", a.p.Table, col, err)
		}
	}
	if err := a.execRowsOf(&w.st.dropZero, zero, distinctChunk); err != nil {
		return fmt.Errorf("removing the values no row of %s.%s holds: %w", a.p.Table, col, err)
	}
	return nil
}

// cross records that value's reference count in group, for aggregate i,
// crossed 0: upwards (gained) or downwards.
func (mv *distinctMoving) cross(ag *projections.Aggregation, i int, group []projections.Value, value projections.Value, gained bool) error {
	k := groupText(group)
	m := mv.moves[k]
	if m == nil {
		m = &distinctMove{group: group, by: make([]int64, len(ag.Aggregates)), sums: make([]*decimal, len(ag.Aggregates))}
		mv.moves[k] = m
		mv.order = append(mv.order, k)
	}
	sign := int64(1)
	if !gained {
		sign = -1
	}
	m.by[i] += sign
	if ag.Aggregates[i].Func != projections.AggSumDistinct {
		return nil
	}
	if m.sums[i] == nil {
		m.sums[i] = &decimal{u: new(big.Int)}
	}
	return m.sums[i].add(string(value.Bytes()), sign)
}

// appendDistinctDeltas appends to row (a group delta being built) the
// delta columns of aggregate i, a distinct one: the group's move m (nil:
// none).
func appendDistinctDeltas(row []any, x projections.Aggregate, i int, m *distinctMove) []any {
	if m == nil {
		if x.Func == projections.AggSumDistinct {
			return append(row, nil, 0)
		}
		return append(row, 0)
	}
	if x.Func == projections.AggSumDistinct {
		var sum any
		if m.sums[i] != nil {
			sum = m.sums[i].String()
		}
		return append(row, sum, m.by[i])
	}
	return append(row, m.by[i])
}

// groupText is a group's values as text, each length-prefixed, whatever
// their kinds: a group Go holds as an unsigned number and the server
// returns as text is one key, as equal bytes in one column are one value
// to the server under any collation.
func groupText(vals []projections.Value) string {
	var b []byte
	for i := range vals {
		v := &vals[i]
		switch {
		case v.Kind() == projections.NullValue:
			b = append(b, 'N')
		case v.Kind() == projections.UintValue:
			u := strconv.FormatUint(v.Uint(), 10)
			b = append(strconv.AppendInt(b, int64(len(u)), 10), ':')
			b = append(b, u...)
		default:
			b = append(strconv.AppendInt(b, int64(len(v.Bytes())), 10), ':')
			b = append(b, v.Bytes()...)
		}
	}
	return string(b)
}

// distinctMove is what a batch does to one group's distinct aggregates:
// per aggregate, values gained minus values lost, and for sum(distinct)
// the sum of those gained minus those lost.
type distinctMove struct {
	group []projections.Value
	by    []int64
	sums  []*decimal
}

// distinctMoveRow is a group delta (st.delta's row) that changes only the
// distinct counts: every other column's delta is nothing.
func distinctMoveRow(ag *projections.Aggregation, m *distinctMove) []any {
	row := appendValues(nil, m.group)
	for i, x := range ag.Aggregates {
		switch {
		case x.Distinct():
			row = appendDistinctDeltas(row, x, i, m)
		case x.Counts():
			row = append(row, 0)
		case x.Func == projections.AggAvg:
			row = append(row, nil, 0, nil)
		case sums(x):
			row = append(row, nil, 0)
		default:
			row = append(row, nil)
		}
	}
	return append(row, 0, 0)
}

// readDistinct reads reference count rows (group, value, refs, pending)
// into each.
func (a *applier) readDistinct(query string, args []any, each func(group []projections.Value, value projections.Value, refs, pending int64)) error {
	rows, err := a.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	k := len(a.p.Key)
	cs := newCells(types[:k+1])
	var refs, pending int64
	raw, value := append(cs.dest, &refs, &pending), cs.value
	for rows.Next() {
		if err := rows.Scan(raw...); err != nil {
			return err
		}
		group := make([]projections.Value, k)
		for i := range k {
			group[i] = value(i)
		}
		each(group, value(k), refs, pending)
	}
	return rows.Err()
}

// rebuildDistinct makes every reference count afresh from the
// contributions (a truncation: the group rows were just deleted).
func (a *applier) rebuildDistinct() error {
	for _, dst := range a.st.agg.distinct {
		for _, q := range []string{dst.clear, dst.rebuild} {
			if err := a.exec(q); err != nil {
				return fmt.Errorf("rebuilding the distinct values of %s: %w", a.p.Table, err)
			}
		}
	}
	return nil
}
