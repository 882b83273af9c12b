package sinks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/readside/readside/projections"
)

// parentKey is one parent key a batch touches, for one join.
type parentKey struct {
	text   string
	values []projections.Value
}

// parentKeys collects, per join, the distinct parent keys of the batch's
// parent changes and of the children it upserts, sorted so that every
// transaction locks them in the same order.
func (a *applier) parentKeys(b *projections.Batch) [][]parentKey {
	out := make([][]parentKey, len(a.p.Joins))
	seen := make([]map[string]bool, len(a.p.Joins))
	add := func(j int, text string, values []projections.Value) {
		if seen[j] == nil {
			seen[j] = map[string]bool{}
		}
		if text == "" || seen[j][text] {
			return
		}
		seen[j][text] = true
		out[j] = append(out[j], parentKey{text, values})
	}
	for _, w := range b.Parents {
		if !w.Truncate {
			add(w.Join, w.Key, w.KeyValues)
		}
	}
	for _, w := range b.Writes {
		if w.Kind == projections.Upsert {
			for j, ref := range w.Parents {
				add(j, ref.Key, ref.Values)
			}
		}
	}
	for j := range out {
		sort.Slice(out[j], func(x, y int) bool { return out[j][x].text < out[j][y].text })
	}
	return out
}

// joinStatementsOf renders join j's statements of p for d.
func joinStatementsOf(p *projections.Projection, j *projections.Join, d dialect) joinStatements {
	state := q(j.StateTable(p))
	var keys, cols, sets, nulls, readNulls []string
	for _, on := range j.On {
		keys = append(keys, q(stateKey(on.Parent)))
	}
	cols = append(cols, keys...)
	for _, c := range j.Columns {
		col := q(stateCol(c.Name))
		cols = append(cols, col)
		sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s > `_rs_version`, %[3]s, %[1]s)", col, d.newRow("`_rs_version`"), d.newRow(col)))
		nulls = append(nulls, col+" = NULL")
		readNulls = append(readNulls, q(c.Name)+" = NULL")
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, "+d.newRow("`_rs_version`")+")")
	v := q(j.VersionColumn())
	return joinStatements{
		// A placeholder (version 0, no columns) where the parent was
		// never seen; an existing row is only locked.
		lock: multiRow{
			head: "INSERT INTO " + state + " (" + strings.Join(keys, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(keys)) + "0)",
			sep:  ", ",
			tail: d.onDuplicate() + keys[0] + " = " + keys[0],
		},
		state: multiRow{
			head: "INSERT INTO " + state + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(cols)) + "?)",
			sep:  ", ",
			tail: d.onDuplicate() + strings.Join(sets, ", "),
		},
		truncateState: "UPDATE " + state + " SET " + strings.Join(nulls, ", ") + ", `_rs_version` = ? WHERE `_rs_version` < ?",
		truncateRead:  "UPDATE " + q(p.Table) + " SET " + strings.Join(readNulls, ", ") + ", " + v + " = ? WHERE " + v + " < ?",
		fanOut:        fanOutStatement(p, j),
	}
}

// lockParents takes an exclusive lock on each key's state row of join
// ji, inserting a placeholder where the parent was never seen.
func (a *applier) lockParents(ji int, keys []parentKey) error {
	if err := a.execKeys(&a.st.joins[ji].lock, keys); err != nil {
		j := a.p.Joins[ji]
		return fmt.Errorf("locking the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, err)
	}
	return nil
}

// execKeys runs stmt for parent keys, up to chunk of them per statement,
// one placeholder group per key.
func (a *applier) execKeys(stmt *multiRow, keys []parentKey) error {
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		var args []any
		for _, k := range part {
			args = appendValues(args, k.values)
		}
		if err := a.exec(stmt.text(len(part)), args...); err != nil {
			return err
		}
	}
	return nil
}

// parentState applies join ji's parent changes to its state table: each
// key's columns move only to a newer version; an absent parent (deleted,
// or moved to another key) is a state row with NULL columns and the
// version that removed it, so an older change cannot bring it back.
func (a *applier) parentState(ji int, all []projections.ParentWrite) error {
	var ws []projections.ParentWrite
	var truncateAt uint64
	for _, w := range all {
		if w.Join != ji {
			continue
		}
		if w.Truncate {
			truncateAt = max(truncateAt, w.Version)
			continue
		}
		ws = append(ws, w)
	}
	name := truncationName(a.p, a.p.Joins[ji])
	if truncateAt > 0 {
		if err := a.truncateParent(ji, name, truncateAt); err != nil {
			return err
		}
	}
	if len(ws) == 0 {
		return nil
	}
	floor, err := a.truncatedAt(name)
	if err != nil {
		return err
	}
	kept := ws[:0:0]
	for _, w := range ws {
		if w.Version > floor {
			kept = append(kept, w)
		} else {
			a.skipped++
		}
	}
	return a.writeParentState(ji, kept)
}

// truncateParent records the truncation of join ji's parent at version
// at, and empties the state and the read rows' copies older than it.
func (a *applier) truncateParent(ji int, name string, at uint64) error {
	st := &a.st.joins[ji]
	if err := a.exec(a.st.truncation, name, at); err != nil {
		return err
	}
	if err := a.exec(st.truncateState, at, at); err != nil {
		return err
	}
	// Every read row showing an older parent now shows none.
	return a.exec(st.truncateRead, at, at)
}

// writeParentState upserts parent changes into join ji's state table.
func (a *applier) writeParentState(ji int, ws []projections.ParentWrite) error {
	j := a.p.Joins[ji]
	for _, sp := range spans(len(ws), func(i int) int { return valueBytes(ws[i].KeyValues) + valueBytes(ws[i].Values) }, a.limit) {
		part := ws[sp[0]:sp[1]]
		var args []any
		for _, w := range part {
			args = appendValues(args, w.KeyValues)
			if w.Values == nil {
				for range j.Columns {
					args = append(args, nil)
				}
			} else {
				args = appendValues(args, w.Values)
			}
			args = append(args, w.Version)
		}
		if err := a.exec(a.st.joins[ji].state.text(len(part)), args...); err != nil {
			return fmt.Errorf("updating the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, err)
		}
	}
	return nil
}

// truncatedAt is the version of the truncation recorded under name (0:
// none).
func (a *applier) truncatedAt(name string) (uint64, error) {
	var floor uint64
	rows, err := a.query(a.st.truncatedAt, name)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if rows.Next() {
		err = rows.Scan(&floor)
	}
	if err == nil {
		err = rows.Err()
	}
	return floor, err
}
