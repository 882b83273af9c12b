package sinks

// Joined columns in children elements (children.<name>.join;
// docs/design/children.md, "Joined columns in elements"). Each join keeps
// the latest rows of its parent table in a state table (as a projection's
// join does), and the refresh LEFT JOINs the child state to them, so an
// element shows its parents' latest columns, or NULL members when a
// parent is absent. Per children entry, in lockChildren, for each join in
// declaration order (a join after the one it hangs off):
//
//  1. lock the state row of every parent key the batch changes (an
//     exclusive lock) or points at (a shared one: the new links of its
//     child rows, or the carried keys of its changes to the parent this
//     join hangs off), in sorted order, creating placeholders;
//  2. apply the batch's changes of the join's parents, each only when
//     newer than the stored state and the parent table's truncation;
//  3. read the links of the child rows below the parents it changed:
//     their arrays are refreshed with the batch's others.
//
// A parent change and a child change that points at the parent meet at
// step 1's lock: the child's transaction holds it while it refreshes, so
// the parent's either waits and then (READ COMMITTED) finds the child at
// step 3, or the child's waits and its refresh reads the new parent. The
// arrays the parent change refreshes meet other writers at the link lock,
// as child changes do.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/readside/readside/projections"
)

// childJoinStatements are the statements of one children join.
type childJoinStatements struct {
	lock     multiRow // a placeholder per parent key; an existing row locked exclusively
	share    multiRow // the same, an existing row share-locked
	state    multiRow // version-guarded parent state upsert
	truncate string   // withdraw every parent state older than a version
	links    multiRow // the links of the child rows below some parent keys
}

func childJoinAlias(j *projections.Join) string { return fmt.Sprintf("j%d", j.N) }

// childJoinOn is the condition that joins j's state to the child state s
// (or to the state of the join j hangs off).
func childJoinOn(j *projections.Join) string {
	var ands []string
	for _, on := range j.On {
		below := "s." + q(projections.ChildStateColumn(on.Child))
		if j.Via != nil {
			below = childJoinAlias(j.Via) + "." + q(stateCol(on.Read))
		}
		ands = append(ands, childJoinAlias(j)+"."+q(stateKey(on.Parent))+" = "+below)
	}
	return strings.Join(ands, " AND ")
}

// childJoinFrom is the LEFT JOINs of every join of c to the child state s.
func childJoinFrom(p *projections.Projection, c *projections.Children) string {
	var b strings.Builder
	for _, j := range c.Joins {
		fmt.Fprintf(&b, " LEFT JOIN %s AS %s ON %s", q(c.JoinStateTable(p, j)), childJoinAlias(j), childJoinOn(j))
	}
	return b.String()
}

// childMemberSQL is the state column holding element member m (or the
// order_by entry naming it).
func childMemberSQL(m projections.Member) string {
	if m.Join != nil {
		return childJoinAlias(m.Join) + "." + q(stateCol(m.Name))
	}
	return "s." + q(projections.ChildStateColumn(m.Source))
}

// childOrderSQL is the state column of order_by entry o.
func childOrderSQL(c *projections.Children, o string) string {
	if j := c.OrderJoin(o); j != nil {
		return childMemberSQL(projections.Member{Name: o, Join: j})
	}
	return "s." + q(projections.ChildStateColumn(o))
}

func childJoinStatementsOf(p *projections.Projection, c *projections.Children, j *projections.Join, d dialect) childJoinStatements {
	state := q(c.JoinStateTable(p, j))
	var keys, cols, sets, nulls []string
	for _, on := range j.On {
		keys = append(keys, q(stateKey(on.Parent)))
	}
	cols = append(cols, keys...)
	for _, col := range j.Columns {
		sc := q(stateCol(col.Name))
		cols = append(cols, sc)
		sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s > `_rs_version`, %[3]s, %[1]s)", sc, d.newRow("`_rs_version`"), d.newRow(sc)))
		nulls = append(nulls, sc+" = NULL")
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, "+d.newRow("`_rs_version`")+")")
	placeholder := "(" + strings.Repeat("?, ", len(keys)) + "0)"
	var linkCols []string
	for _, on := range c.On {
		linkCols = append(linkCols, "s."+q(projections.ChildStateColumn(on.Child)))
	}
	// The child rows below j: through the joins between j and the child.
	var chain []*projections.Join
	for v := j.Via; v != nil; v = v.Via {
		chain = append([]*projections.Join{v}, chain...)
	}
	from := " FROM " + q(c.StateTable(p)) + " AS s"
	for _, v := range chain {
		from += fmt.Sprintf(" JOIN %s AS %s ON %s", q(c.JoinStateTable(p, v)), childJoinAlias(v), childJoinOn(v))
	}
	var match []string
	for _, on := range j.On {
		if j.Via != nil {
			match = append(match, childJoinAlias(j.Via)+"."+q(stateCol(on.Read)))
		} else {
			match = append(match, "s."+q(projections.ChildStateColumn(on.Child)))
		}
	}
	return childJoinStatements{
		// IGNORE: a child's value the parent's key column cannot hold has
		// no parent; it locks nothing rather than failing the batch.
		lock: multiRow{
			head: "INSERT IGNORE INTO " + state + " (" + strings.Join(keys, ", ") + ", `_rs_version`) VALUES ",
			row:  placeholder, sep: ", ",
			tail: d.onDuplicate() + keys[0] + " = " + keys[0],
		},
		share: multiRow{
			head: "INSERT IGNORE INTO " + state + " (" + strings.Join(keys, ", ") + ", `_rs_version`) VALUES ",
			row:  placeholder, sep: ", ",
		},
		state: multiRow{
			head: "INSERT INTO " + state + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(cols)) + "?)",
			sep:  ", ",
			tail: d.onDuplicate() + strings.Join(sets, ", "),
		},
		truncate: "UPDATE " + state + " SET " + strings.Join(nulls, ", ") + ", `_rs_version` = ? WHERE `_rs_version` < ?",
		links:    keyIn(p, "SELECT DISTINCT "+strings.Join(linkCols, ", ")+from+" WHERE "+linkCols[0]+" IS NOT NULL AND ", match, ""),
	}
}

// lockedKey is a parent key lockChildJoins locks, and how.
type lockedKey struct {
	parentKey
	exclusive bool
}

// childJoins runs steps 1–3 for every join of children entry ci and
// returns the links to refresh, and whether a parent table's truncation
// asks for every array to be refreshed.
func (a *applier) childJoins(ci int, b *projections.Batch) (links [][]projections.Value, all bool, err error) {
	c := a.p.Children[ci]
	if len(c.Joins) == 0 {
		return nil, false, nil
	}
	st := &a.st.children[ci]
	for k, j := range c.Joins {
		js := &st.joins[k]
		sorted, changes, truncateAt := childJoinKeys(c, ci, j, b)
		if err := a.lockChildJoinKeys(js, sorted); err != nil {
			return nil, false, fmt.Errorf("locking the %s.%s rows of children %s: %w", j.ParentDB, j.ParentTbl, c.Name, err)
		}
		name := c.JoinTruncationName(a.p, j)
		if truncateAt > 0 {
			all = true
			if err := a.exec(a.st.truncation, name, truncateAt); err != nil {
				return nil, false, err
			}
			if err := a.exec(js.truncate, truncateAt, truncateAt); err != nil {
				return nil, false, err
			}
		}
		if len(changes) == 0 {
			continue
		}
		kept, err := newerThanTruncation(a, name, changes, func(w projections.ChildWrite) uint64 { return w.Version })
		if err != nil {
			return nil, false, err
		}
		if err := a.writeChildJoinState(js, len(j.Columns), kept); err != nil {
			return nil, false, fmt.Errorf("updating the %s.%s state of children %s: %w", j.ParentDB, j.ParentTbl, c.Name, err)
		}
		if all {
			continue
		}
		below, err := a.childLinksBelow(js, j, kept)
		if err != nil {
			return nil, false, err
		}
		links = append(links, below...)
	}
	return links, all, nil
}

// childJoinKeys are the parent keys of join j of children entry ci (c)
// that batch b touches, in key order: exclusive where the parent changes,
// shared where a child (or the parent below, with via) points at it; and
// the parent changes and the latest truncation of its table.
func childJoinKeys(c *projections.Children, ci int, j *projections.Join, b *projections.Batch) (sorted []*lockedKey, changes []projections.ChildWrite, truncateAt uint64) {
	stateCols := c.StateColumns()
	keys := map[string]*lockedKey{}
	add := func(vals []projections.Value, exclusive bool) {
		for _, v := range vals {
			if v.Kind() == projections.NullValue {
				return // no parent, as a NULL foreign key has none
			}
		}
		t := lockText(vals)
		if lk, ok := keys[t]; ok {
			lk.exclusive = lk.exclusive || exclusive
			return
		}
		keys[t] = &lockedKey{parentKey{text: t, values: vals}, exclusive}
	}
	for _, w := range b.ChildWrites {
		switch {
		case w.Child != ci:
		case w.Join == j.N && w.Truncate:
			truncateAt = max(truncateAt, w.Version)
		case w.Join == j.N:
			changes = append(changes, w)
			add(w.Link, true)
		case j.Via == nil && w.Join == 0 && w.Values != nil:
			vals := make([]projections.Value, len(j.On))
			for x, on := range j.On {
				vals[x] = w.Values[slices.Index(stateCols, on.Child)]
			}
			add(vals, false)
		case j.Via != nil && w.Join == j.Via.N && w.Values != nil:
			vals := make([]projections.Value, len(j.On))
			for x, on := range j.On {
				vals[x] = w.Values[columnIndex(j.Via.Columns, on.Read)]
			}
			add(vals, false)
		}
	}
	sorted = make([]*lockedKey, 0, len(keys))
	for _, lk := range keys {
		sorted = append(sorted, lk)
	}
	sort.Slice(sorted, func(x, y int) bool { return sorted[x].text < sorted[y].text })
	return sorted, changes, truncateAt
}

// lockChildJoinKeys locks sorted in runs of one lock mode, in key order:
// every transaction locks the keys of a join in the same order, whatever
// the mode.
func (a *applier) lockChildJoinKeys(js *childJoinStatements, sorted []*lockedKey) error {
	for start := 0; start < len(sorted); {
		end := start
		var run []parentKey
		for end < len(sorted) && sorted[end].exclusive == sorted[start].exclusive {
			run = append(run, sorted[end].parentKey)
			end++
		}
		stmt := &js.share
		if sorted[start].exclusive {
			stmt = &js.lock
		}
		if err := a.execKeys(stmt, run); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// childLinksBelow are the links of the arrays whose children point at
// the parents kept changed.
func (a *applier) childLinksBelow(js *childJoinStatements, j *projections.Join, kept []projections.ChildWrite) ([][]projections.Value, error) {
	var links [][]projections.Value
	for start := 0; start < len(kept); start += chunk {
		part := kept[start:min(start+chunk, len(kept))]
		var args []any
		for _, w := range part {
			args = appendValues(args, w.Link)
		}
		rows, err := a.query(js.links.text(len(part)), args...)
		if err != nil {
			return nil, fmt.Errorf("reading the children below %d %s.%s rows: %w", len(part), j.ParentDB, j.ParentTbl, err)
		}
		got, err := scanValues(rows)
		if err != nil {
			return nil, err
		}
		links = append(links, got...)
	}
	return links, nil
}

// writeChildJoinState upserts parent states, each column moving only to
// a newer version; an absent parent (nil Values) keeps only its version.
func (a *applier) writeChildJoinState(js *childJoinStatements, n int, ws []projections.ChildWrite) error {
	size := func(i int) int { return valueBytes(ws[i].Link) + valueBytes(ws[i].Values) }
	for _, sp := range spans(len(ws), size, a.limit) {
		part := ws[sp[0]:sp[1]]
		args := make([]any, 0, len(part)*(n+3))
		for _, w := range part {
			args = appendValues(args, w.Link)
			if w.Values == nil {
				for range n {
					args = append(args, nil)
				}
			} else {
				args = appendValues(args, w.Values)
			}
			args = append(args, w.Version)
		}
		if err := a.exec(js.state.text(len(part)), args...); err != nil {
			return err
		}
	}
	return nil
}

// lockText is the text a parent key is locked in order of: its values'
// texts, whatever their kinds, so that one key read from a child column
// (say unsigned) and from the parent's event (signed) is one entry, with
// one lock mode, not two locks of one row in two modes.
func lockText(vals []projections.Value) string {
	var b []byte
	for i := range vals {
		if i > 0 {
			b = append(b, 0)
		}
		if vals[i].Kind() == projections.UintValue {
			b = strconv.AppendUint(b, vals[i].Uint(), 10)
		} else {
			b = append(b, vals[i].Bytes()...)
		}
	}
	return string(b)
}

func columnIndex(cols []projections.Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}
