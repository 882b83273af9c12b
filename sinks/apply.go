package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/readside/readside/projections"
)

// chunk is the most rows per multi-row statement.
const chunk = 500

// spans cuts n rows into statements of at most chunk rows and about
// limit bytes of parameters, so no statement outgrows the server's
// max_allowed_packet (the driver reports an oversized prepared statement
// as a bad connection, which would be retried forever).
func spans(n int, size func(i int) int, limit int) [][2]int {
	return cut(n, chunk, size, limit)
}

// cut cuts n items into runs of at most most items and about limit bytes.
func cut(n, most int, size func(i int) int, limit int) [][2]int {
	var out [][2]int
	start, bytes := 0, 0
	for i := range n {
		sz := size(i)
		if i > start && (i-start >= most || bytes+sz > limit) {
			out = append(out, [2]int{start, i})
			start, bytes = i, 0
		}
		bytes += sz
	}
	if start < n {
		out = append(out, [2]int{start, n})
	}
	return out
}

// lookupChunk is the most keys per tombstone lookup: the server sorts an
// IN list of constants once and searches it, so a whole batch's keys fit
// in one round trip.
const lookupChunk = 5000

// argBytes estimates the bytes a row's parameters take on the wire.
func argBytes(vals []any) int {
	n := 16
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			n += len(x) + 9
		case []byte:
			n += len(x) + 9
		case *projections.Value:
			n += len(x.Bytes()) + 9
		default:
			n += 9
		}
	}
	return n
}

// valueBytes is argBytes of values.
func valueBytes(vals []projections.Value) int {
	n := 16
	for i := range vals {
		n += len(vals[i].Bytes()) + 9
	}
	return n
}

// appendValues appends a parameter for each of vals: a pointer into vals
// (no copy, no allocation per value), which the pipeline writes as a
// literal and database/sql reads through its driver.Valuer.
func appendValues(args []any, vals []projections.Value) []any {
	for i := range vals {
		args = append(args, &vals[i])
	}
	return args
}

// apply runs one batch in one transaction, in an order that makes joins
// race-free (docs/ARCHITECTURE.md, "Joins"):
//
//  1. lock, per join and in sorted order, the state row of every parent
//     key the batch touches — from parent changes and from the children it
//     writes — creating version-0 placeholders for parents not seen yet;
//  2. apply parent truncations and parent state changes (version-guarded);
//  3. apply the read table's own truncation, upserts and deletes
//     (version-guarded, tombstones);
//  4. per join, copy the state into every read row of those parent keys
//     whose join version is older (fan-out for parent changes, fill for
//     new or moved children);
//  5. record the offsets.
//
// A child write and a parent write of the same key in two concurrent
// transactions meet at step 1's row lock, so whichever commits second
// sees the other's rows: a child can never keep a stale parent copy.
func (s *MySQL) apply(ctx context.Context, p *projections.Projection, b *projections.Batch) (err error) {
	// READ COMMITTED (every sink connection's level, session): each
	// statement reads the latest committed rows, which step 4 relies on
	// after step 1's locks; no gap locks between batches.
	a, err := s.beginApplier(ctx, p)
	if err != nil {
		return err
	}
	defer a.rollbackOnError(&err)
	zero, err := s.enumZeroColumns(ctx, p)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.enumZero.Delete(p.Table)
		}
	}()
	a.stale, a.rowAlias, a.zero = b.Stale, s.rowAlias, zero

	keys := a.parentKeys(b)
	for i, j := range p.Joins {
		if err := a.lockParents(j, keys[i]); err != nil {
			return err
		}
	}
	for i, j := range p.Joins {
		if err := a.parentState(i, j, b.Parents); err != nil {
			return err
		}
	}
	if err := a.readRows(b.Writes); err != nil {
		return err
	}
	for i, j := range p.Joins {
		if err := a.fanOut(j, keys[i]); err != nil {
			return err
		}
	}
	if err := a.offsets(b.Offsets); err != nil {
		return err
	}
	if err := a.watermarks(b.Marks); err != nil {
		return err
	}
	if err := a.run.commit(ctx); err != nil {
		return fmt.Errorf("writing a batch to %s: %w", p.Table, err)
	}
	if a.stale != nil {
		a.stale.Add(a.skipped)
	}
	return nil
}

type applier struct {
	ctx      context.Context
	run      stmts
	p        *projections.Projection
	comment  string
	stale    *atomic.Int64
	limit    int   // parameter bytes per statement
	rowAlias bool  // MySQL 8 upsert syntax
	zero     []int // enumZeroColumns
	skipped  int64 // counted into stale only when the transaction commits
}

// exec runs a statement whose result is not read. Its error may come
// later, from the next query or the commit (pipeline).
func (a *applier) exec(query string, args ...any) error {
	if a.rowAlias {
		query = mysql8Upsert(query)
	}
	return a.run.exec(a.ctx, a.comment+query, args)
}

func (a *applier) query(query string, args ...any) (*sql.Rows, error) {
	return a.run.query(a.ctx, a.comment+query, args)
}

// offsets records the next offset to consume of each partition, in one
// statement; they only ever move forward.
func (a *applier) offsets(offs projections.Offsets) error {
	var args []any
	rows := 0
	for _, topic := range slices.Sorted(maps.Keys(offs)) {
		for _, part := range slices.Sorted(maps.Keys(offs[topic])) {
			args = append(args, a.p.Name, topic, part, offs[topic][part])
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	row := "(?, ?, ?, ?)"
	err := a.exec("INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES "+row+strings.Repeat(", "+row, rows-1)+
		" ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, VALUES(next_offset))", args...)
	return err
}

// watermarks moves each partition's applied source position forward (the
// GTID and commit time go with the highest version).
func (a *applier) watermarks(marks map[string]map[int32]projections.Mark) error {
	var args []any
	rows := 0
	for _, topic := range slices.Sorted(maps.Keys(marks)) {
		for part, m := range marks[topic] {
			args = append(args, a.p.Name, topic, part, m.GTID, m.Version, m.TS)
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	row := "(?, ?, ?, ?, ?, ?)"
	newer := "VALUES(version) > version"
	err := a.exec("INSERT INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) VALUES "+row+strings.Repeat(", "+row, rows-1)+
		" ON DUPLICATE KEY UPDATE gtid = IF("+newer+", VALUES(gtid), gtid), source_ts = IF("+newer+", VALUES(source_ts), source_ts), version = GREATEST(version, VALUES(version))", args...)
	return err
}

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

// readRows applies the read table's own writes.
func (a *applier) readRows(writes []projections.Write) error {
	var truncateAt uint64
	upserts := make([]projections.Write, 0, len(writes))
	var deletes []projections.Write
	for _, w := range writes {
		switch w.Kind {
		case projections.Truncate:
			truncateAt = max(truncateAt, w.Version)
		case projections.Upsert:
			upserts = append(upserts, w)
		case projections.Delete:
			deletes = append(deletes, w)
		}
	}
	if truncateAt > 0 {
		if err := a.exec("INSERT INTO `_readside_truncations` (projection, version) VALUES (?, ?) ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))", a.p.Name, truncateAt); err != nil {
			return err
		}
		if err := a.exec("DELETE FROM "+q(a.p.Table)+" WHERE _rs_version < ?", truncateAt); err != nil {
			return err
		}
	}
	if len(upserts) > 0 {
		var err error
		if upserts, err = a.dropShadowed(upserts); err != nil {
			return err
		}
		if err := a.upsert(upserts); err != nil {
			return err
		}
	}
	return a.delete(deletes)
}

// dropShadowed removes upserts a newer (or equal) delete or truncate
// already covers: a late or replayed upsert never resurrects a row. The
// truncation floor comes with the first tombstone lookup (one round trip
// less per batch).
func (a *applier) dropShadowed(ups []projections.Write) ([]projections.Write, error) {
	var floor uint64
	tomb := map[string]uint64{}
	for _, sp := range cut(len(ups), lookupChunk, func(i int) int { return len(ups[i].Key) + 9 }, a.limit) {
		start, part := sp[0], ups[sp[0]:sp[1]]
		args := []any{a.p.Name}
		for _, w := range part {
			args = append(args, []byte(w.Key))
		}
		query := "SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (?" + strings.Repeat(", ?", len(part)-1) + ")"
		if start == 0 {
			query += " UNION ALL SELECT NULL, version FROM `_readside_truncations` WHERE projection = ?"
			args = append(args, a.p.Name)
		}
		rows, err := a.query(query, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k []byte
			var v uint64
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, err
			}
			if k == nil { // the truncation row
				floor = v
			} else {
				tomb[string(k)] = v
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	kept := make([]projections.Write, 0, len(ups))
	for _, w := range ups {
		if w.Version <= floor || w.Version <= tomb[w.Key] {
			a.skipped++
			continue
		}
		kept = append(kept, w)
	}
	return kept, nil
}

// upsert writes rows whose version is newer than what the table holds.
// ON DUPLICATE KEY UPDATE assigns left to right and later assignments see
// earlier ones, so the order is: each join's columns (which compare the
// old join columns and version), then the row's own columns (which
// compare the old _rs_version), then _rs_version last.
//
// Joined columns are not written here: a new row starts without a parent
// (NULL, join version 0), and a newer change that moves the row to
// another parent clears the old parent's copy; step 4 then fills both in
// from the join state.
func (a *applier) upsert(ups []projections.Write) error {
	ups, err := a.upsertEnumZero(ups)
	if err != nil {
		return err
	}
	return a.upsertRows(ups, false)
}

// upsertRows writes ups; lenient: each statement without strict mode
// (enumzero.go).
func (a *applier) upsertRows(ups []projections.Write, lenient bool) error {
	if len(ups) == 0 {
		return nil
	}
	p := a.p
	var cols, sets []string
	newer := "VALUES(`_rs_version`) > `_rs_version`"
	for _, j := range p.Joins {
		var same []string
		for _, on := range j.On {
			same = append(same, fmt.Sprintf("VALUES(%[1]s) <=> %[1]s", q(on.Read)))
		}
		moved := newer + " AND NOT (" + strings.Join(same, " AND ") + ")"
		for _, c := range j.Columns {
			sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s, NULL, %[1]s)", q(c.Name), moved))
		}
		sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s, 0, %[1]s)", q(j.VersionColumn()), moved))
	}
	for i, c := range p.Columns {
		cols = append(cols, q(c.Name))
		if i >= len(p.Key) {
			sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s, VALUES(%[1]s), %[1]s)", q(c.Name), newer))
		}
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))")
	row := "(" + strings.Repeat("?, ", len(p.Columns)) + "?)"
	head := "INSERT INTO " + q(p.Table) + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES "
	tail := " ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", ")
	tt, direct := a.run.(textStmts)
	if lenient {
		head, direct = lenientPrefix+head, false
	}
	if direct && a.rowAlias {
		tail = mysql8Upsert(tail)
	}
	for _, sp := range spans(len(ups), func(i int) int { return valueBytes(ups[i].Values) }, a.limit) {
		part := ups[sp[0]:sp[1]]
		if direct {
			// The rows' values written straight into the text: no
			// placeholders to write and then find again.
			n := len(a.comment) + len(head) + len(tail)
			for i := range part {
				n += valueBytes(part[i].Values) + 24
			}
			err := tt.execText(a.ctx, n, func(buf []byte) []byte {
				buf = append(append(buf, a.comment...), head...)
				for i := range part {
					if i > 0 {
						buf = append(buf, ", "...)
					}
					buf = append(buf, '(')
					for j := range part[i].Values {
						buf = append(appendValue(buf, &part[i].Values[j]), ", "...)
					}
					buf = append(strconv.AppendUint(buf, part[i].Version, 10), ')')
				}
				return append(buf, tail...)
			})
			if err == nil {
				continue
			}
			if !errors.Is(err, errTextTooLarge) {
				return fmt.Errorf("upserting into %s: %w", p.Table, err)
			}
			// Too long as text once escaped: with parameters below.
		}
		// Sized up front: a backlog's statements are thousands of rows,
		// and growing this slice row by row was 5% of the projector's CPU
		// in a drain (docs/benchmarks.md, tuning log 27).
		args := make([]any, 0, len(part)*(len(p.Columns)+1))
		for i := range part {
			args = appendValues(args, part[i].Values)
			args = append(args, &part[i].Version) // a pointer: no allocation per row
		}
		var stmt strings.Builder
		stmt.Grow(len(head) + len(part)*(len(row)+2) + len(tail))
		stmt.WriteString(head)
		for i := range part {
			if i > 0 {
				stmt.WriteString(", ")
			}
			stmt.WriteString(row)
		}
		stmt.WriteString(tail)
		if err := a.exec(stmt.String(), args...); err != nil {
			return fmt.Errorf("upserting into %s: %w", p.Table, err)
		}
	}
	return nil
}

// delete removes rows older than each delete and records its version.
func (a *applier) delete(dels []projections.Write) error {
	p := a.p
	// Tombstones first, one multi-row statement per chunk.
	for _, sp := range spans(len(dels), func(i int) int { return len(dels[i].Key) + len(p.Name) + 40 }, a.limit) {
		part := dels[sp[0]:sp[1]]
		var args []any
		for _, w := range part {
			args = append(args, p.Name, []byte(w.Key), w.Version)
		}
		if err := a.exec("INSERT INTO `_readside_tombstones` (projection, key_text, version) VALUES (?, ?, ?)"+
			strings.Repeat(", (?, ?, ?)", len(part)-1)+" ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))", args...); err != nil {
			return fmt.Errorf("recording tombstones of %s: %w", p.Table, err)
		}
	}
	// Then the rows, one statement per chunk: each delete removes its key
	// only below its own version.
	var where []string
	for _, k := range p.Key {
		where = append(where, q(k)+" = ?")
	}
	one := "(" + strings.Join(where, " AND ") + " AND `_rs_version` < ?)"
	for _, sp := range spans(len(dels), func(i int) int { return valueBytes(dels[i].Values) }, a.limit) {
		part := dels[sp[0]:sp[1]]
		var args []any
		for _, w := range part {
			args = appendValues(args, w.Values)
			args = append(args, w.Version)
		}
		if err := a.exec("DELETE FROM "+q(p.Table)+" WHERE "+one+strings.Repeat(" OR "+one, len(part)-1), args...); err != nil {
			return fmt.Errorf("deleting from %s: %w", p.Table, err)
		}
	}
	return nil
}

// fanOut copies join j's state into the read rows of the given parent
// keys wherever the row shows an older parent version.
func (a *applier) fanOut(j *projections.Join, keys []parentKey) error {
	if len(keys) == 0 {
		return nil
	}
	var on, sets, match []string
	for _, o := range j.On {
		on = append(on, fmt.Sprintf("r.%s = s.%s", q(o.Read), q(stateKey(o.Parent))))
		match = append(match, fmt.Sprintf("s.%s = ?", q(stateKey(o.Parent))))
	}
	for _, c := range j.Columns {
		sets = append(sets, fmt.Sprintf("r.%s = s.%s", q(c.Name), q(stateCol(c.Name))))
	}
	v := q(j.VersionColumn())
	sets = append(sets, "r."+v+" = s.`_rs_version`")
	one := "(" + strings.Join(match, " AND ") + ")"
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		var args []any
		for _, k := range part {
			args = appendValues(args, k.values)
		}
		stmt := "UPDATE " + q(a.p.Table) + " AS r JOIN " + q(j.StateTable(a.p)) + " AS s ON " + strings.Join(on, " AND ") +
			" SET " + strings.Join(sets, ", ") + " WHERE r." + v + " < s.`_rs_version` AND (" + one + strings.Repeat(" OR "+one, len(part)-1) + ")"
		if err := a.exec(stmt, args...); err != nil {
			return fmt.Errorf("copying %s.%s into %s: %w", j.ParentDB, j.ParentTbl, a.p.Table, err)
		}
	}
	return nil
}
