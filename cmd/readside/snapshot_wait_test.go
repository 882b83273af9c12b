package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/internal/progress"
)

// TestSnapshotWaitStep: what --wait shows for each state of its request in
// the tailer's checkpoint, and that only a finished one ends the wait
// (a failed or cancelled one needs the source and is covered end to end).
func TestSnapshotWaitStep(t *testing.T) {
	est := int64(1000)
	cases := []struct {
		why   string
		cp    cdc.Checkpoint
		found bool
		done  bool
		line  string // on stderr
		out   string // on stdout
	}{
		{"no checkpoint yet: the tailer has not started", cdc.Checkpoint{}, false, false, "requested; waiting for the tailer to read it from the binlog", ""},
		{"the tailer has not read the request from the binlog", cdc.Checkpoint{LastRequest: 6}, true, false, "requested; waiting for the tailer to read it from the binlog", ""},
		{"read, behind another snapshot", cdc.Checkpoint{LastRequest: 7, Snapshots: []cdc.SnapshotTask{{ID: 3, Table: "s.o"}, {ID: 7, Table: "s.t"}}}, true, false, "queued behind 1 snapshot(s)", ""},
		{"running: rows of the estimate", cdc.Checkpoint{LastRequest: 7, Snapshots: []cdc.SnapshotTask{{ID: 7, Table: "s.t", Rows: 250}}}, true, false, "running, 250 of ~1000 rows (25%)", ""},
		{"finished: the tailer's total and time",
			cdc.Checkpoint{LastRequest: 8, Finished: []cdc.SnapshotFinished{{ID: 6, Table: "s.t", Rows: 5}, {ID: 7, Table: "s.t", Rows: 1000, Seconds: 2}}}, true, true,
			"done, 1000 of ~1000 rows (100%), 500 rows/s", "snapshot of s.t done: 1000 rows in 2s (500 rows/s)\n"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		w := &snapshotWait{table: "s.t", req: cdc.SnapshotRequested{ID: 7, Estimate: &est}, line: progress.Line{Out: &stderr}}
		done, code := w.step(t.Context(), c.cp, c.found, &stdout, &stderr)
		if done != c.done || (done && code != exitOK) {
			t.Errorf("%s: done %v (exit %d), want %v", c.why, done, code, c.done)
		}
		if !strings.Contains(stderr.String(), "snapshot of s.t (request 7): "+c.line) {
			t.Errorf("%s: stderr %q, want %q", c.why, stderr.String(), c.line)
		}
		if stdout.String() != c.out {
			t.Errorf("%s: stdout %q, want %q", c.why, stdout.String(), c.out)
		}
	}
}
