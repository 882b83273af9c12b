package main

import (
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/cdc"
)

// TestPrintInitialSnapshot: the operator reads the load's progress from
// readside status: a table per table while it runs (the estimate marked
// as one), one line once it is complete, naming a table not loaded.
func TestPrintInitialSnapshot(t *testing.T) {
	est := int64(19979)
	done := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)
	for _, c := range []struct {
		why  string
		s    *cdc.InitialSnapshot
		want []string
	}{
		{"no load: nothing printed", nil, nil},
		{"running: the progress line and a row per table with rows, estimate and time",
			&cdc.InitialSnapshot{State: "running", TableCount: 2, TablesDone: 1, Rows: 4870, Seconds: 1.1, Tables: []cdc.TableSnapshot{
				{Table: "d.small", State: "done", Rows: 30, Seconds: 0.004}, {Table: "d.big", State: "running", Rows: 4840, RowsEstimate: &est, Seconds: 1}}},
			[]string{"initial snapshot: RUNNING, 1 of 2 table(s) done, 4870 rows so far, for 1.1s", "d.small  done     30    -         4ms",
				"d.big    running  4840  ~19979    1s", "not a count"}},
		{"complete: one line with the total and the time",
			&cdc.InitialSnapshot{State: "complete", Complete: true, TableCount: 2, TablesDone: 2, Rows: 20030, Seconds: 4.38, CompletedAt: &done},
			[]string{"initial snapshot: complete, 2 table(s), 20030 rows, in 4.4s (finished "}},
		{"complete with a failed table: named",
			&cdc.InitialSnapshot{State: "complete", Complete: true, TableCount: 2, TablesDone: 2, Rows: 30, Tables: []cdc.TableSnapshot{
				{Table: "d.small", State: "done", Rows: 30}, {Table: "d.gone", State: "failed"}}},
			[]string{"initial snapshot: complete, 2 table(s), 30 rows; d.gone failed"}},
	} {
		var b strings.Builder
		printInitialSnapshot(&b, c.s)
		out := b.String()
		if c.want == nil && out != "" {
			t.Errorf("%s: printed %q", c.why, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.why, w, out)
			}
		}
	}
}
