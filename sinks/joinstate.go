package sinks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/readside/readside/projections"
)

// parentKey is one parent key a batch touches, for one join.
type parentKey struct {
	text   string
	values []projections.Value
	// changed: the batch changes this parent (a parent write of the join),
	// so every read row of it may need the new columns; otherwise only
	// the batch's own rows point at it.
	changed bool
}

// parentKeys collects, per join, the distinct parent keys of the batch's
// parent changes and of the children it upserts, sorted so that every
// transaction locks them in the same order.
func (a *applier) parentKeys(b *projections.Batch) [][]parentKey {
	out := make([][]parentKey, len(a.p.Joins))
	seen := make([]map[string]int, len(a.p.Joins)) // index in out
	add := func(j int, text string, values []projections.Value, changed bool) {
		if seen[j] == nil {
			seen[j] = map[string]int{}
		}
		if text == "" {
			return
		}
		if a.p.Joins[j].Via != nil {
			text = valuesText(values) // as its keys read from state (viaKeys)
		}
		if i, ok := seen[j][text]; ok {
			out[j][i].changed = out[j][i].changed || changed
			return
		}
		seen[j][text] = len(out[j])
		out[j] = append(out[j], parentKey{text, values, changed})
	}
	for _, w := range b.Parents {
		if !w.Truncate {
			add(w.Join, w.Key, w.KeyValues, true)
		}
	}
	for _, w := range b.Writes {
		if w.Kind == projections.Upsert {
			for j, ref := range w.Parents {
				add(j, ref.Key, ref.Values, false)
			}
		}
	}
	for _, c := range b.Contributions {
		for j, ref := range c.Parents {
			add(j, ref.Key, ref.Values, false)
		}
	}
	for j := range out {
		sort.Slice(out[j], func(x, y int) bool { return out[j][x].text < out[j][y].text })
	}
	return out
}

// joinState takes the state-row locks of every join and applies the
// batch's parent changes (steps 1 and 2 of apply), and returns the parent
// keys per join. A join's locks are taken after those of the join it
// hangs off, whose state, updated, says which of its parents the batch's
// rows point at.
func (a *applier) joinState(b *projections.Batch) ([][]parentKey, error) {
	keys := a.parentKeys(b)
	for i, j := range a.p.Joins {
		if j.Via != nil {
			var err error
			if keys[i], err = a.viaKeys(i, keys[slices.Index(a.p.Joins, j.Via)], keys[i]); err != nil {
				return nil, err
			}
		}
		if err := a.lockParents(i, keys[i]); err != nil {
			return nil, err
		}
		if err := a.parentState(i, b.Parents); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// fanOuts runs every join's fan-out (step 4 of apply), in declaration
// order, so a join's carried keys are in the rows before the joins
// hanging off it fill them. rows are the read keys of the batch's upserts
// (writtenRows). After the batch, a read row may show an older version of
// a parent only if the batch changed that parent, or wrote the row (a new
// row, or one moved to another parent, shows none), or moved the row's
// carried key; so a join fans out over the keys the batch changes and
// fills the rows it writes. Every other row points at a parent the batch
// only reads, and already shows its newest version: whoever wrote the row
// filled it under that parent's state lock. An aggregate's group rows
// come from its contributions, not upserts (byRow false): there a join
// fans out over every key the batch touches.
func (a *applier) fanOuts(keys [][]parentKey, rows []parentKey) error {
	byRow := a.p.Aggregation == nil
	if a.fanOutLater {
		keys = withoutChanges(keys)
	}
	for i, j := range a.p.Joins {
		for k, d := range a.p.Joins {
			if d.Via != j {
				continue
			}
			// In the background, the rows of a parent the batch changes
			// may still show its old carried key; the fill of the batch's
			// rows below then moves them.
			if a.fanOutLater {
				if err := a.detachRows(k, rows); err != nil {
					return err
				}
			}
			// Rows move to another of d's parents where j's fan-out moves
			// them to another j parent. At the root, that is only in the
			// rows of the parents the batch changes: an upsert that moves
			// a row to another root parent has cleared d's copy already.
			moving := keys[i]
			if byRow && j.Via == nil {
				moving = changedKeys(moving)
			}
			if err := a.detach(k, moving); err != nil {
				return err
			}
		}
		if j.Via != nil {
			if err := a.fanOutVia(i, keys, rows, byRow); err != nil {
				return err
			}
			continue
		}
		over := keys[i]
		if byRow {
			over = changedKeys(over)
		}
		if err := a.fanOut(i, over); err != nil {
			return err
		}
		if err := a.fillRows(i, rows); err != nil {
			return err
		}
	}
	return nil
}

// writtenRows are the read keys of the batch's upserts (the first
// len(p.Key) values of each, p.Columns' order), which the fan-out fills
// by key; none for an aggregate, whose rows are not upserts.
func (a *applier) writtenRows(writes []projections.Write) []parentKey {
	if len(a.p.Joins) == 0 || a.p.Aggregation != nil {
		return nil
	}
	var rows []parentKey
	for _, w := range writes {
		if w.Kind == projections.Upsert {
			rows = append(rows, parentKey{values: w.Values[:len(a.p.Key)]})
		}
	}
	return rows
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
	st := joinStatements{
		// A placeholder (version 0, no columns) where the parent was
		// never seen; an existing row is only locked.
		lock: multiRow{
			head: "INSERT INTO " + state + " (" + strings.Join(keys, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(keys)) + "0)",
			sep:  ", ",
			tail: d.onDuplicate() + keys[0] + " = " + keys[0],
		},
		// The same placeholder, but an existing row is only share-locked
		// (a duplicate key under IGNORE): batches that only read a parent
		// run at once, and still meet its changes, which lock it
		// exclusively, at the lock.
		share: multiRow{
			head: "INSERT IGNORE INTO " + state + " (" + strings.Join(keys, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(keys)) + "0)",
			sep:  ", ",
		},
		state: multiRow{
			head: "INSERT INTO " + state + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES ",
			row:  "(" + strings.Repeat("?, ", len(cols)) + "?)",
			sep:  ", ",
			tail: d.onDuplicate() + strings.Join(sets, ", "),
		},
		truncateState: "UPDATE " + state + " SET " + strings.Join(nulls, ", ") + ", `_rs_version` = ? WHERE `_rs_version` < ?",
		// The joins hanging off this one lose their parent with it.
		truncateRead: "UPDATE " + q(p.Table) + " SET " + strings.Join(append(readNulls, detachSets("", p.Dependents(j)...)...), ", ") + ", " + v + " = ? WHERE " + v + " < ?",
		fanOut:       fanOutStatement(p, j),
		fillRows:     fillRowsStatement(p, j),
	}
	if j.Via != nil {
		st.via = viaStatementsOf(p, j)
	}
	if p.FanOut == projections.FanOutBackground {
		st.pending = pendingStatementsOf(p, j)
	}
	return st
}

// lockParents locks each key's state row of join ji, inserting a
// placeholder where the parent was never seen: exclusively where the
// batch changes the parent, shared where only its rows point at it. The
// keys are locked in their sorted order whatever the mode, a run of one
// mode per statement, so every transaction takes them in one order.
func (a *applier) lockParents(ji int, keys []parentKey) error {
	st := &a.st.joins[ji]
	for start := 0; start < len(keys); {
		end := start + 1
		for end < len(keys) && keys[end].changed == keys[start].changed {
			end++
		}
		stmt := &st.share
		if keys[start].changed {
			stmt = &st.lock
		}
		if err := a.execKeys(stmt, keys[start:end]); err != nil {
			j := a.p.Joins[ji]
			return fmt.Errorf("locking the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, err)
		}
		start = end
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
	kept, err := newerThanTruncation(a, name, ws, func(w projections.ParentWrite) uint64 { return w.Version })
	if err != nil {
		return err
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
	if joinedAgg(a.p) {
		// The read rows hold no parent columns: the groups move instead.
		a.regroupAll = true
		return nil
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

// newerThanTruncation keeps the state writes newer than the truncation
// recorded under name; the others are stale, counted as such.
func newerThanTruncation[W any](a *applier, name string, ws []W, version func(W) uint64) ([]W, error) {
	floor, err := a.truncatedAt(name)
	if err != nil {
		return nil, err
	}
	kept := ws[:0:0]
	for _, w := range ws {
		if version(w) > floor {
			kept = append(kept, w)
		} else {
			a.skipped++
		}
	}
	return kept, nil
}

// truncatedAt is the version of the truncation recorded under name (0:
// none).
func (a *applier) truncatedAt(name string) (uint64, error) {
	var floor uint64
	if err := a.shareTruncation(name); err != nil {
		return 0, err
	}
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
