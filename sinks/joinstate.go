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

// lockParents takes an exclusive lock on each key's state row, inserting a
// placeholder (version 0, no columns) where the parent was never seen.
func (a *applier) lockParents(j *projections.Join, keys []parentKey) error {
	var cols []string
	for _, on := range j.On {
		cols = append(cols, q(stateKey(on.Parent)))
	}
	row := "(" + strings.Repeat("?, ", len(cols)) + "0)"
	first := q(stateKey(j.On[0].Parent))
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		var args []any
		for _, k := range part {
			args = appendValues(args, k.values)
		}
		if err := a.exec("INSERT INTO "+q(j.StateTable(a.p))+" ("+strings.Join(cols, ", ")+", `_rs_version`) VALUES "+
			row+strings.Repeat(", "+row, len(part)-1)+" ON DUPLICATE KEY UPDATE "+first+" = "+first, args...); err != nil {
			return fmt.Errorf("locking the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, err)
		}
	}
	return nil
}

// parentState applies join j's parent changes to its state table: each
// key's columns move only to a newer version; an absent parent (deleted,
// or moved to another key) is a state row with NULL columns and the
// version that removed it, so an older change cannot bring it back.
func (a *applier) parentState(ji int, j *projections.Join, all []projections.ParentWrite) error {
	state := q(j.StateTable(a.p))
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
	name := truncationName(a.p, j)
	if truncateAt > 0 {
		if err := a.exec("INSERT INTO `_readside_truncations` (projection, version) VALUES (?, ?) ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))", name, truncateAt); err != nil {
			return err
		}
		var sets []string
		for _, c := range j.Columns {
			sets = append(sets, q(stateCol(c.Name))+" = NULL")
		}
		if err := a.exec("UPDATE "+state+" SET "+strings.Join(sets, ", ")+", `_rs_version` = ? WHERE `_rs_version` < ?", truncateAt, truncateAt); err != nil {
			return err
		}
		// Every read row showing an older parent now shows none.
		sets = sets[:0]
		for _, c := range j.Columns {
			sets = append(sets, q(c.Name)+" = NULL")
		}
		if err := a.exec("UPDATE "+q(a.p.Table)+" SET "+strings.Join(sets, ", ")+", "+q(j.VersionColumn())+" = ? WHERE "+q(j.VersionColumn())+" < ?", truncateAt, truncateAt); err != nil {
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
	var cols, sets []string
	for _, on := range j.On {
		cols = append(cols, q(stateKey(on.Parent)))
	}
	for _, c := range j.Columns {
		cols = append(cols, q(stateCol(c.Name)))
		sets = append(sets, fmt.Sprintf("%[1]s = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(%[1]s), %[1]s)", q(stateCol(c.Name))))
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))")
	row := "(" + strings.Repeat("?, ", len(cols)) + "?)"
	kept := ws[:0:0]
	for _, w := range ws {
		if w.Version > floor {
			kept = append(kept, w)
		} else {
			a.skipped++
		}
	}
	for _, sp := range spans(len(kept), func(i int) int { return valueBytes(kept[i].KeyValues) + valueBytes(kept[i].Values) }, a.limit) {
		part := kept[sp[0]:sp[1]]
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
		if err := a.exec("INSERT INTO "+state+" ("+strings.Join(cols, ", ")+", `_rs_version`) VALUES "+row+strings.Repeat(", "+row, len(part)-1)+
			" ON DUPLICATE KEY UPDATE "+strings.Join(sets, ", "), args...); err != nil {
			return fmt.Errorf("updating the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, err)
		}
	}
	return nil
}

func (a *applier) truncatedAt(name string) (uint64, error) {
	var floor uint64
	rows, err := a.query("SELECT version FROM `_readside_truncations` WHERE projection = ?", name)
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
