package rebuild

import (
	"strings"
	"testing"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// TestBackfill: what a backfill checks first, when it resumes or starts
// over, what it warns about, and what it leaves behind. The sink, broker
// and projector are fakes: the real ones are e2e/backfill_test.go.
func TestBackfill(t *testing.T) {
	tagNote := projections.BackfillTag([]string{"note"})
	cases := []struct {
		why      string
		names    []string
		setup    func(*bed)
		err      string   // "": succeeds
		cols     string   // the columns filled, in declaration order
		runs     []string // the projectors run
		calls    []string // the sink operations, in order
		out, log string   // contained in the operator's output / the log
	}{
		{why: "a fresh backfill records its tag, fills through the backfill sink from its own identity, then forgets it",
			names: []string{"note", "body"}, cols: "body,note",
			runs:  []string{"orders__backfill/orders_read via backfill body,note"},
			calls: []string{"phase orders__backfill=" + projections.BackfillTag([]string{"body", "note"}), "forget orders__backfill", "phase orders__backfill="},
			out:   "backfilling orders_read (body, note): 100.0% (14 of 14 offsets)", log: "backfill: filling columns from the topics"},
		{why: "a rerun of the same columns resumes from its stored offsets (nothing forgotten first)",
			names: []string{"note"}, cols: "note",
			setup: func(b *bed) { b.sink.phases["orders__backfill"] = tagNote },
			runs:  []string{"orders__backfill/orders_read via backfill note"},
			calls: []string{"phase orders__backfill=" + tagNote, "forget orders__backfill", "phase orders__backfill="},
			log:   "resuming a backfill from its stored offsets"},
		{why: "an unfinished backfill of other columns is forgotten first: its offsets say nothing about these",
			names: []string{"note"}, cols: "note",
			setup: func(b *bed) { b.sink.phases["orders__backfill"] = projections.BackfillTag([]string{"body"}) },
			runs:  []string{"orders__backfill/orders_read via backfill note"},
			calls: []string{"forget orders__backfill", "phase orders__backfill=" + tagNote, "forget orders__backfill", "phase orders__backfill="},
			log:   "an unfinished backfill of other columns is abandoned"},
		{why: "a partition retention trimmed is warned about, naming the snapshot that fills its rows",
			names: []string{"note"}, cols: "note",
			setup: func(b *bed) { b.topics.starts = event.Offsets{"rs.shop.orders": {1: 5}} },
			runs:  []string{"orders__backfill/orders_read via backfill note"},
			calls: []string{"phase orders__backfill=" + tagNote, "forget orders__backfill", "phase orders__backfill="},
			out:   "warning: rs.shop.orders partition 1 starts at offset 5 (retention removed what was before): rows whose newest change was there keep NULL in note; `readside snapshot --table shop.orders` republishes every row"},
		{why: "an unfinished rebuild is refused (it fills every column), naming how to finish it",
			names: []string{"note"},
			setup: func(b *bed) { b.sink.phases["orders"] = "filling" },
			err:   "a rebuild of orders is unfinished (phase filling): it fills every column; finish it with readside replay --projection orders --rebuild"},
		{why: "a column the read table lacks on a shard is refused, naming plan --apply and the restart",
			names: []string{"note"},
			setup: func(b *bed) { b.sink.missing = []string{"note"} },
			err:   "read table orders_read has no column note on some shard of sink reads: run readside plan --apply"},
		{why: "a key column is refused before the sink is touched",
			names: []string{"id"}, err: "id is a key column of projections.orders"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			b := newBed(t, newFakeSink([]string{"orders_read"}))
			if c.setup != nil {
				c.setup(b)
			}
			cols, err := b.r.Backfill(t.Context(), c.names)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("Backfill: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("Backfill: error %v, want one containing %q", err, c.err)
			}
			if got := strings.Join(cols, ","); got != c.cols {
				t.Errorf("columns filled %q, want %q", got, c.cols)
			}
			if got, want := strings.Join(b.runs, "; "), strings.Join(c.runs, "; "); got != want {
				t.Errorf("projectors run: %q, want %q", got, want)
			}
			if got, want := strings.Join(b.sink.calls, "; "), strings.Join(c.calls, "; "); got != want {
				t.Errorf("sink operations:\n got %q\nwant %q", got, want)
			}
			if !strings.Contains(b.out.String(), c.out) {
				t.Errorf("output lacks %q:\n%s", c.out, b.out.String())
			}
			if !strings.Contains(b.log.String(), c.log) {
				t.Errorf("log lacks %q:\n%s", c.log, b.log.String())
			}
			if c.err == "" && b.sink.phases["orders__backfill"] != "" {
				t.Errorf("a finished backfill left its tag %q: a later one would resume from offsets it forgot", b.sink.phases["orders__backfill"])
			}
		})
	}
}
