package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/readside/readside/cdc"
)

// printInitialSnapshot shows the initial load: one line once it is
// complete, and a table per captured table while it runs.
func printInitialSnapshot(w io.Writer, s *cdc.InitialSnapshot) {
	if s == nil {
		return
	}
	took := time.Duration(s.Seconds * float64(time.Second)).Round(100 * time.Millisecond)
	if s.Complete {
		line := fmt.Sprintf("  initial snapshot: complete, %d table(s), %d rows", s.TableCount, s.Rows)
		if s.CompletedAt != nil {
			line += fmt.Sprintf(", in %s (finished %s)", took, s.CompletedAt.Local().Format(time.RFC3339))
		}
		for _, t := range s.Tables {
			if t.State != "done" {
				line += fmt.Sprintf("; %s %s", t.Table, t.State)
			}
		}
		fmt.Fprintln(w, line)
		return
	}
	fmt.Fprintf(w, "  initial snapshot: RUNNING, %d of %d table(s) done, %d rows so far, for %s\n", s.TablesDone, s.TableCount, s.Rows, took)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    TABLE\tSTATE\tROWS\tESTIMATE\tTIME")
	for _, t := range s.Tables {
		est := "-"
		if t.RowsEstimate != nil {
			est = fmt.Sprintf("~%d", *t.RowsEstimate)
		}
		secs := "-"
		if d := time.Duration(t.Seconds * float64(time.Second)); d >= time.Second {
			secs = d.Round(100 * time.Millisecond).String()
		} else if d > 0 {
			secs = d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "    %s\t%s\t%d\t%s\t%s\n", t.Table, t.State, t.Rows, est, secs)
	}
	tw.Flush()
	fmt.Fprintln(w, "    (ESTIMATE: the source's information_schema TABLE_ROWS when the load began; not a count)")
}
