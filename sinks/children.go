package sinks

// Nested children on the sink (docs/design/children.md, "Nested children").
// Per children entry, in the batch's transaction:
//
//  1. before the read table's own writes (lockChildren): read, locking
//     them, the stored links of the child rows the batch changes (their
//     old parents); apply the child state changes, each only when newer
//     than the stored state; then lock the link row of every parent the
//     batch touches — old and new parents of its child changes and the
//     parents it upserts — in sorted order, creating the rows not there
//     yet;
//  2. after them (children): rebuild the array and count of every read
//     row of those links from the state, in SQL:
//     JSON_ARRAYAGG(JSON_OBJECT(…) ORDER BY …, <pk> LIMIT n).
//
// A parent write and a child write of one link in two transactions meet
// at step 1's lock, so the one that takes it second refreshes after the
// other's commit, and sees it: READ COMMITTED reads the latest committed
// rows in every statement. Each transaction's own state writes come
// before the lock, so the state writes of two transactions run side by
// side. A batch that truncates the child table locks every link first
// and writes the state after the truncation's floor.

import (
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// childStatements are the statements of one children entry.
type childStatements struct {
	oldLinks      multiRow // the stored links of child keys, locking their state rows
	lock          multiRow // a link row per parent link, locked
	lockAll       string   // every link row, locked (a truncation refreshes every parent)
	state         multiRow // version-guarded child state upsert
	truncateState string
	refresh       multiRow // the array and count of the read rows of some links
	refreshAll    string
	// readLink are the indexes in Projection.Columns of the link's read
	// columns: a parent upsert's link is in its Values there.
	readLink []int
	joins    []childJoinStatements // per Children.Joins (children_join.go)
}

func childStatementsOf(p *projections.Projection, c *projections.Children, d dialect) childStatements {
	state, links := q(c.StateTable(p)), q(c.LinkTable(p))
	var stateLink, linkCols, readLink []string
	for _, on := range c.On {
		stateLink = append(stateLink, q(projections.ChildStateColumn(on.Child)))
		linkCols = append(linkCols, q(childLinkCol(on.Child)))
		readLink = append(readLink, "r."+q(on.Read))
	}
	cols := []string{"`_rs_key`"}
	var sets, nulls []string
	for _, col := range c.StateColumns() {
		sc := q(projections.ChildStateColumn(col))
		cols = append(cols, sc)
		sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s > `_rs_version`, %[3]s, %[1]s)", sc, d.newRow("`_rs_version`"), d.newRow(sc)))
		nulls = append(nulls, sc+" = NULL")
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, "+d.newRow("`_rs_version`")+")")
	group := "(" + strings.Repeat("?, ", len(c.On)-1) + "?)"
	// The element is MariaDB's own JSON_OBJECT of the state columns, which
	// are typed like the child's (text in another character set than
	// utf8mb4 converted to it: Children.UTF8Member): the same text verify
	// computes on the source. Ties in order_by are broken by the child's primary key.
	var members, order []string
	for _, m := range c.Members() {
		v := childMemberSQL(m)
		if c.UTF8Member(m.Name) {
			v = "CONVERT(" + v + " USING utf8mb4)"
		}
		members = append(members, sqlquote.Literal(m.Name)+", "+v)
	}
	for _, col := range c.OrderBy {
		if o := childOrderSQL(c, col); !slices.Contains(order, o) {
			order = append(order, o)
		}
	}
	for _, col := range c.SourceKey() {
		if o := "s." + q(projections.ChildStateColumn(col)); !slices.Contains(order, o) {
			order = append(order, o)
		}
	}
	agg := "JSON_ARRAYAGG(JSON_OBJECT(" + strings.Join(members, ", ") + ")"
	if len(order) > 0 {
		agg += " ORDER BY " + strings.Join(order, ", ")
	}
	if c.Limit > 0 {
		agg += " LIMIT " + strconv.Itoa(c.Limit)
	}
	agg += ")"
	var match []string
	for k, on := range c.On {
		match = append(match, "s."+stateLink[k]+" = r."+q(on.Read))
	}
	where := " WHERE " + strings.Join(match, " AND ")
	from := " FROM " + state + " AS s" + where
	set := "UPDATE " + q(p.Table) + " AS r SET r." + q(c.Name) + " = (SELECT " + agg + " FROM " + state + " AS s" + childJoinFrom(p, c) + where + "), r." + q(c.CountColumn) + " = (SELECT COUNT(*)" + from + ")"
	var readIdx []int
	for _, on := range c.On {
		readIdx = append(readIdx, slices.IndexFunc(p.Columns, func(col projections.Column) bool { return col.Name == on.Read }))
	}
	var joins []childJoinStatements
	for _, j := range c.Joins {
		joins = append(joins, childJoinStatementsOf(p, c, j, d))
	}
	return childStatements{
		joins:    joins,
		readLink: readIdx,
		oldLinks: multiRow{
			head: "SELECT " + strings.Join(exactReads(p, c.StateTable(p), stateLink), ", ") + " FROM " + state + byPrimaryKey + " WHERE `_rs_key` IN (",
			row:  "?",
			sep:  ", ",
			tail: ") AND " + stateLink[0] + " IS NOT NULL FOR UPDATE",
		},
		// IGNORE: a parent's link value the child's column cannot hold
		// (an id beyond its range) has no children; it locks the nearest
		// row the column clamps it to instead of failing the batch.
		lock: multiRow{
			head: "INSERT IGNORE INTO " + links + " (" + strings.Join(linkCols, ", ") + ") VALUES ",
			row:  group,
			sep:  ", ",
			tail: d.onDuplicate() + linkCols[0] + " = " + linkCols[0],
		},
		lockAll: "SELECT " + linkCols[0] + " FROM " + links + " ORDER BY " + strings.Join(linkCols, ", ") + " FOR UPDATE",
		state: multiRow{
			head: "INSERT INTO " + state + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(cols)) + "?)",
			sep:  ", ",
			tail: d.onDuplicate() + strings.Join(sets, ", "),
		},
		truncateState: "UPDATE " + state + " SET " + strings.Join(nulls, ", ") + ", `_rs_version` = ? WHERE `_rs_version` < ?",
		refresh:       keyIn(p, set+" WHERE ", readLink, ""),
		refreshAll:    set,
	}
}

// childLinks is what lockChildren found for one children entry: the links
// to refresh, sorted, and the truncation of the child table, if any.
type childLinks struct {
	links      []parentKey
	truncateAt uint64
	// all: a join's parent table was truncated, so every array is
	// refreshed (under the lock of every link).
	all bool
}

// lockChildren is step 1 for every children entry (before the read
// table's writes, so a transaction never holds a read row while it waits
// for a link lock another one holds: that one may be refreshing it).
func (a *applier) lockChildren(b *projections.Batch) error {
	if len(a.p.Children) == 0 {
		return nil
	}
	a.childLinks = make([]childLinks, len(a.p.Children))
	for ci, c := range a.p.Children {
		st := &a.st.children[ci]
		cl := &a.childLinks[ci]
		seen := map[string]bool{}
		add := func(vals []projections.Value) {
			if t := valuesText(vals); !seen[t] {
				seen[t] = true
				cl.links = append(cl.links, parentKey{text: t, values: vals})
			}
		}
		var keys []string
		for _, w := range b.ChildWrites {
			switch {
			case w.Child != ci || w.Join != 0:
			case w.Truncate:
				cl.truncateAt = max(cl.truncateAt, w.Version)
			default:
				keys = append(keys, w.SourceKey)
				if w.Link != nil {
					add(w.Link)
				}
			}
		}
		old, err := a.storedLinks(st, keys)
		if err != nil {
			return fmt.Errorf("reading the children state of %s.%s: %w", c.SourceDB, c.SourceTbl, err)
		}
		for _, l := range old {
			add(l)
		}
		for _, w := range b.Writes {
			if w.Kind != projections.Upsert {
				continue
			}
			link := make([]projections.Value, len(c.On))
			for k, i := range st.readLink {
				link[k] = w.Values[i]
			}
			add(link)
		}
		joined, all, err := a.childJoins(ci, b)
		if err != nil {
			return err
		}
		for _, l := range joined {
			add(l)
		}
		cl.all = all
		sort.Slice(cl.links, func(x, y int) bool { return cl.links[x].text < cl.links[y].text })
		if cl.truncateAt > 0 || cl.all {
			if err := a.drain(st.lockAll); err != nil {
				return err
			}
		}
		if cl.truncateAt == 0 {
			if err := a.writeChildStates(ci, b); err != nil {
				return err
			}
		}
		if err := a.execKeys(&st.lock, cl.links); err != nil {
			return fmt.Errorf("locking the children links of %s.%s: %w", c.SourceDB, c.SourceTbl, err)
		}
	}
	return nil
}

// storedLinks are the stored (non-NULL) links of the child keys, read
// with their state rows locked.
func (a *applier) storedLinks(st *childStatements, keys []string) ([][]projections.Value, error) {
	var out [][]projections.Value
	for _, sp := range cut(len(keys), lookupChunk, func(i int) int { return len(keys[i]) + 9 }, a.limit) {
		args := make([]any, 0, sp[1]-sp[0])
		for _, k := range keys[sp[0]:sp[1]] {
			args = append(args, []byte(k))
		}
		rows, err := a.query(st.oldLinks.text(len(args)), args...)
		if err != nil {
			return nil, err
		}
		got, err := scanValues(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// scanValues reads rows as Values: binary columns as bytes, the others
// as their text (bound back as it was read).
func scanValues(rows *sql.Rows) ([][]projections.Value, error) {
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	var out [][]projections.Value
	for rows.Next() {
		raw := make([]sql.NullString, len(types))
		ptrs := make([]any, len(raw))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		vals := make([]projections.Value, len(raw))
		for i, r := range raw {
			switch {
			case !r.Valid:
			case binaryType(types[i].DatabaseTypeName()):
				vals[i] = projections.ValueOf([]byte(r.String))
			case strings.EqualFold(types[i].DatabaseTypeName(), "YEAR"):
				vals[i] = projections.ValueOf(string(projections.YearText([]byte(r.String))))
			default:
				vals[i] = projections.ValueOf(r.String)
			}
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

func binaryType(name string) bool {
	switch strings.ToUpper(name) {
	case "BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB", "BIT", "GEOMETRY":
		return true
	}
	return false
}

// drain runs a locking query whose rows are not needed.
func (a *applier) drain(query string) error {
	rows, err := a.query(query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// children rebuilds the arrays and counts of every parent read row the
// batch touched: the old and new parents of the child changes and the
// parent rows the batch wrote (docs/design/children.md, "Nested children").
// A batch that truncates the child table applies the truncation and its
// child state changes here, under the lock of every link.
func (a *applier) children(b *projections.Batch) error {
	for ci, c := range a.p.Children {
		st := &a.st.children[ci]
		cl := a.childLinks[ci]
		name := c.TruncationName(a.p)
		if cl.truncateAt > 0 {
			if err := a.exec(a.st.truncation, name, cl.truncateAt); err != nil {
				return err
			}
			if err := a.exec(st.truncateState, cl.truncateAt, cl.truncateAt); err != nil {
				return err
			}
		}
		if cl.truncateAt > 0 {
			if err := a.writeChildStates(ci, b); err != nil {
				return err
			}
		}
		if err := a.refreshArrays(ci, cl.links, cl.truncateAt > 0 || cl.all); err != nil {
			return fmt.Errorf("refreshing %s of %s: %w", c.Name, a.p.Table, err)
		}
	}
	return nil
}

// writeChildStates applies the batch's child state changes of children
// entry ci, each only when newer than the stored state of its child row
// and than the child table's last truncation.
func (a *applier) writeChildStates(ci int, b *projections.Batch) error {
	c := a.p.Children[ci]
	var ws []projections.ChildWrite
	for _, w := range b.ChildWrites {
		if w.Child == ci && w.Join == 0 && !w.Truncate {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return nil
	}
	kept, err := newerThanTruncation(a, c.TruncationName(a.p), ws, func(w projections.ChildWrite) uint64 { return w.Version })
	if err != nil {
		return err
	}
	if err := a.writeChildState(ci, kept); err != nil {
		return fmt.Errorf("updating the children state of %s.%s: %w", c.SourceDB, c.SourceTbl, err)
	}
	return nil
}

// writeChildState upserts child states into children entry ci's state
// table, each column moving only to a newer version.
func (a *applier) writeChildState(ci int, ws []projections.ChildWrite) error {
	n := len(a.p.Children[ci].StateColumns())
	size := func(i int) int { return len(ws[i].SourceKey) + valueBytes(ws[i].Values) }
	for _, sp := range spans(len(ws), size, a.limit) {
		part := ws[sp[0]:sp[1]]
		args := make([]any, 0, len(part)*(n+2))
		for _, w := range part {
			args = append(args, []byte(w.SourceKey))
			if w.Values == nil {
				for range n {
					args = append(args, nil)
				}
			} else {
				args = appendValues(args, w.Values)
			}
			args = append(args, w.Version)
		}
		if err := a.exec(a.st.children[ci].state.text(len(part)), args...); err != nil {
			return err
		}
	}
	return nil
}
