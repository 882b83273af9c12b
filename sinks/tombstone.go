package sinks

// Tombstones: a delete's version, kept after its row is gone, so that an
// older upsert arriving late or replayed never brings the row back; and
// a truncation's version, the floor under which every row is gone.

import (
	"context"
	"fmt"
	"strings"

	"github.com/readside/readside/projections"
)

// CollectTombstones deletes, on every shard, p's tombstones below horizon:
// no replay can bring back an event older than horizon (the oldest
// version still in the topics), and any event at or above it is newer
// than those deletes anyway, so they no longer decide anything.
func (s *Sharded) CollectTombstones(ctx context.Context, p *projections.Projection, horizon uint64) (int64, error) {
	var total int64
	for _, sh := range s.Shards {
		n, err := sh.CollectTombstones(ctx, p, horizon)
		total += n
		if err != nil {
			return total, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return total, nil
}

// CollectTombstones deletes p's tombstones below horizon on this server.
func (s *MySQL) CollectTombstones(ctx context.Context, p *projections.Projection, horizon uint64) (int64, error) {
	var total int64
	for {
		res, err := s.db.ExecContext(ctx, "DELETE FROM `_readside_tombstones` WHERE projection = ? AND version < ? LIMIT 5000", p.Name, horizon)
		if err != nil {
			return total, fmt.Errorf("collecting tombstones of %s: %w", p.Name, err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < 5000 {
			return total, nil
		}
	}
}

// tombstoneStatements are p's statements that record deletes' versions,
// look them up for a batch's keys (the first lookup of a batch also
// reading the truncation floor), and delete rows below a delete's
// version.
func tombstoneStatements(p *projections.Projection, d dialect) (record, lookup, firstLookup, deleteRows multiRow) {
	record = multiRow{
		head: "INSERT INTO `_readside_tombstones` (projection, key_text, version) VALUES ",
		row:  "(?, ?, ?)",
		sep:  ", ",
		tail: d.onDuplicate() + "version = GREATEST(version, " + d.newRow("version") + ")",
	}
	lookup = multiRow{
		head: "SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (",
		row:  "?",
		sep:  ", ",
		tail: ")",
	}
	firstLookup = lookup
	firstLookup.tail += " UNION ALL SELECT NULL, version FROM `_readside_truncations` WHERE projection = ?"
	var where []string
	for _, k := range p.Key {
		where = append(where, q(k)+" = ?")
	}
	deleteRows = multiRow{
		head: "DELETE FROM " + q(p.Table) + " WHERE ",
		row:  "(" + strings.Join(where, " AND ") + " AND `_rs_version` < ?)",
		sep:  " OR ",
	}
	return record, lookup, firstLookup, deleteRows
}

// truncationStatements are p's statements that record a truncation's
// version (of the read table, or of a join's parent), delete the read
// rows below it, read it back, and share-lock it (shareTruncation).
func truncationStatements(p *projections.Projection, d dialect) (record, deleteRows, floor, share string) {
	record = "INSERT INTO `_readside_truncations` (projection, version) VALUES (?, ?)" +
		d.onDuplicate() + "version = GREATEST(version, " + d.newRow("version") + ")"
	deleteRows = "DELETE FROM " + q(p.Table) + " WHERE _rs_version < ?"
	floor = "SELECT version FROM `_readside_truncations` WHERE projection = ?"
	// A duplicate key takes a shared lock on the existing row; an absent
	// row is created at version 0 (a floor of none), so that there is a
	// row to lock even before the first truncation.
	share = "INSERT IGNORE INTO `_readside_truncations` (projection, version) VALUES (?, 0)"
	return record, deleteRows, floor, share
}

// shareTruncation takes a shared lock on truncation row name before the
// batch reads its floor and writes below it. A truncation reaches one
// partition of a Debezium connector's topic (readside's tailer writes
// one into every partition), while the batch of another partition, in a
// concurrent transaction, writes rows from before it: without the lock
// the truncating transaction records its floor and deletes the rows
// below it, passing over the other's uncommitted rows, which commit
// afterwards below the floor for good. With it, whichever comes second
// waits for the other's commit: the truncation then deletes the rows,
// or the batch reads the new floor and drops them.
func (a *applier) shareTruncation(name string) error {
	return a.exec(a.st.shareTruncation, name)
}

// lookupChunk is the most keys per tombstone lookup: the server sorts an
// IN list of constants once and searches it, so a whole batch's keys fit
// in one round trip.
const lookupChunk = 5000

// afterFloorRead, when set (tests only), runs once a batch has read its
// truncation floor and before it writes its rows: the moment another
// transaction's truncation must not pass.
var afterFloorRead func()

// floorRead is where a batch has read its truncation floor (afterFloorRead).
func floorRead() {
	if afterFloorRead != nil {
		afterFloorRead()
	}
}

// dropShadowed removes upserts a newer (or equal) delete or truncate
// already covers: a late or replayed upsert never resurrects a row. The
// truncation floor comes with the first tombstone lookup (one round trip
// less per batch).
func (a *applier) dropShadowed(ups []projections.Write) ([]projections.Write, error) {
	if err := a.shareTruncation(a.p.Name); err != nil {
		return nil, err
	}
	var floor uint64
	tomb := map[string]uint64{}
	for _, sp := range cut(len(ups), lookupChunk, func(i int) int { return len(ups[i].Key) + 9 }, a.limit) {
		start, part := sp[0], ups[sp[0]:sp[1]]
		args := []any{a.p.Name}
		for _, w := range part {
			args = append(args, []byte(w.Key))
		}
		lookup := &a.st.tombstoneLookup
		if start == 0 {
			lookup = &a.st.firstLookup
			args = append(args, a.p.Name)
		}
		rows, err := a.query(lookup.text(len(part)), args...)
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
	floorRead()
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
		if err := a.exec(a.st.tombstones.text(len(part)), args...); err != nil {
			return fmt.Errorf("recording tombstones of %s: %w", p.Table, err)
		}
	}
	// Then the rows, one statement per chunk: each delete removes its key
	// only below its own version.
	for _, sp := range spans(len(dels), func(i int) int { return valueBytes(dels[i].Values) }, a.limit) {
		part := dels[sp[0]:sp[1]]
		var args []any
		for _, w := range part {
			args = appendValues(args, w.Values)
			args = append(args, w.Version)
		}
		if err := a.exec(a.st.deleteRows.text(len(part)), args...); err != nil {
			return fmt.Errorf("deleting from %s: %w", p.Table, err)
		}
	}
	return nil
}
