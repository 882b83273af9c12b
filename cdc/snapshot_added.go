package cdc

import (
	"slices"
)

// A table added to source.tables after the first start has rows the
// binlog after the checkpoint never shows. The checkpoint therefore names
// the tables whose existing rows are covered (snapshotted, queued for a
// snapshot, or captured since the first start): a captured table missing
// from that list is new. With source.snapshot.mode initial its snapshot is
// queued like the first start's, at the checkpoint's position, so it
// interleaves with the stream by watermarks and takes no lock; the queue
// and its progress travel in the checkpoint, so a crash mid-snapshot
// resumes and a restart after it finds the table covered. With mode never
// the tailer and `readside check` warn until `readside snapshot` asks for
// it.

// coverTables updates cp for the captured tables: on the first start
// (found false) every captured table is covered; later, a captured table
// the checkpoint does not cover is queued for a snapshot when snapshot is
// true (missing ones, absent from the source, are covered without one:
// the binlog shows all their rows if they appear). Tables no longer
// captured are forgotten, so adding one back snapshots it again. A
// checkpoint written before checkpoints named tables covers every
// captured table. It returns the tables left uncovered.
func coverTables(cp Checkpoint, found bool, captured, missing []string, snapshot bool) (Checkpoint, []string) {
	if !found || cp.Tables == nil {
		cp.Tables = slices.Clone(captured)
		slices.Sort(cp.Tables)
		return cp, nil
	}
	var covered, uncovered []string
	for _, name := range captured {
		switch {
		case slices.Contains(cp.Tables, name):
			covered = append(covered, name)
		case slices.Contains(missing, name):
			covered = append(covered, name)
		case snapshot:
			covered = append(covered, name)
			if !slices.ContainsFunc(cp.Snapshots, func(t SnapshotTask) bool { return t.Table == name && t.Where == "" }) {
				cp.Snapshots = append(cp.Snapshots, SnapshotTask{Table: name})
			}
		default:
			uncovered = append(uncovered, name)
		}
	}
	slices.Sort(covered)
	cp.Tables = covered
	return cp, uncovered
}

// UncoveredTables are the captured tables whose existing rows the
// checkpoint cp does not cover: added to source.tables after the first
// start and neither snapshotted nor requested (source.snapshot.mode never).
func UncoveredTables(cp Checkpoint, captured []string) []string {
	_, uncovered := coverTables(cp, true, captured, nil, false)
	return uncovered
}

// cover marks table as covered once a snapshot of it is requested.
func (s *stream) cover(table string) {
	if _, ok := s.captured[table]; ok && !slices.Contains(s.covered, table) {
		s.covered = append(s.covered, table)
		slices.Sort(s.covered)
	}
}
