package cdc

import (
	"fmt"
	"testing"
)

// coverTables decides which captured tables get their existing rows
// snapshotted at start: a wrong answer either loses a new table's rows or
// re-snapshots a table on every restart.
func TestCoverTables(t *testing.T) {
	task := func(names ...string) []SnapshotTask {
		var out []SnapshotTask
		for _, n := range names {
			out = append(out, SnapshotTask{Table: n})
		}
		return out
	}
	for _, c := range []struct {
		why           string
		cp            Checkpoint
		found         bool
		captured      []string
		missing       []string
		snapshot      bool
		wantTables    []string
		wantTasks     []SnapshotTask
		wantUncovered []string
	}{
		{"first start: every captured table is covered (the initial snapshot is queued elsewhere)",
			Checkpoint{}, false, []string{"d.b", "d.a"}, nil, true, []string{"d.a", "d.b"}, nil, nil},
		{"checkpoint from before tables were recorded: nothing is re-snapshotted",
			Checkpoint{}, true, []string{"d.a", "d.b"}, nil, true, []string{"d.a", "d.b"}, nil, nil},
		{"a table added since: snapshotted with mode initial",
			Checkpoint{Tables: []string{"d.a"}}, true, []string{"d.a", "d.b"}, nil, true, []string{"d.a", "d.b"}, task("d.b"), nil},
		{"a table added since, mode never: left uncovered for the warning",
			Checkpoint{Tables: []string{"d.a"}}, true, []string{"d.a", "d.b"}, nil, false, []string{"d.a"}, nil, []string{"d.b"}},
		{"restart after the new table's snapshot: not redone",
			Checkpoint{Tables: []string{"d.a", "d.b"}}, true, []string{"d.a", "d.b"}, nil, true, []string{"d.a", "d.b"}, nil, nil},
		{"crash mid-snapshot of the new table: its task (with progress) is kept, not queued twice",
			Checkpoint{Tables: []string{"d.a", "d.b"}, Snapshots: []SnapshotTask{{Table: "d.b", After: [][]byte{[]byte("7")}, Rows: 7}}}, true,
			[]string{"d.a", "d.b"}, nil, true, []string{"d.a", "d.b"}, []SnapshotTask{{Table: "d.b", After: [][]byte{[]byte("7")}, Rows: 7}}, nil},
		{"a snapshot of the added table already queued (a request written by hand before it was captured): not queued twice",
			Checkpoint{Tables: []string{"d.a"}, Snapshots: []SnapshotTask{{ID: 3, Table: "d.b"}}}, true, []string{"d.a", "d.b"}, nil, true,
			[]string{"d.a", "d.b"}, []SnapshotTask{{ID: 3, Table: "d.b"}}, nil},
		{"an added table absent from the source: the binlog will show all its rows",
			Checkpoint{Tables: []string{"d.a"}}, true, []string{"d.a", "d.b"}, []string{"d.b"}, true, []string{"d.a", "d.b"}, nil, nil},
		{"a table no longer captured is forgotten, so adding it back snapshots it",
			Checkpoint{Tables: []string{"d.a", "d.b"}}, true, []string{"d.a"}, nil, true, []string{"d.a"}, nil, nil},
	} {
		cp, uncovered := coverTables(c.cp, c.found, c.captured, c.missing, c.snapshot)
		if fmt.Sprint(cp.Tables) != fmt.Sprint(c.wantTables) || fmt.Sprint(cp.Snapshots) != fmt.Sprint(c.wantTasks) || fmt.Sprint(uncovered) != fmt.Sprint(c.wantUncovered) {
			t.Errorf("%s: tables %v, tasks %v, uncovered %v; want %v, %v, %v", c.why, cp.Tables, cp.Snapshots, uncovered, c.wantTables, c.wantTasks, c.wantUncovered)
		}
	}
}
