package projector

import (
	"testing"
	"time"
)

// TestDeadLetterTracker: when a projection counts as dead-lettering every
// row, and what the last minute shows.
func TestDeadLetterTracker(t *testing.T) {
	type op struct {
		dead, applied int
		after         time.Duration // clock advance before the op
	}
	cases := []struct {
		why        string
		ops        []op
		all        bool
		lastMinute int64
		applied    int64
	}{
		{"nothing happened: not broken", nil, false, 0, 0},
		{"a few rejected rows among applied ones: not broken", []op{{dead: 3}, {applied: 500}, {dead: 2}}, false, 5, 500},
		{"one short of the threshold: not yet", []op{{dead: AllDeadLetteredAfter - 1}}, false, AllDeadLetteredAfter - 1, 0},
		{"the threshold reached with nothing applied: broken", []op{{dead: 60}, {dead: 40}}, true, 100, 0},
		{"an applied row ends the streak", []op{{dead: 150}, {applied: 1}}, false, 150, 1},
		{"rows applied earlier do not excuse a streak since", []op{{applied: 1000}, {dead: 120}}, true, 120, 1000},
		{"empty batches (markers only) do not end a streak", []op{{dead: 100}, {applied: 0}}, true, 100, 0},
		{"the last minute forgets older counts, the streak does not", []op{{dead: 100}, {dead: 5, after: 2 * time.Minute}}, true, 5, 0},
	}
	for _, c := range cases {
		now := time.Unix(1_700_000_000, 0)
		tr := newDeadLetterTracker(func() time.Time { return now })
		for _, o := range c.ops {
			now = now.Add(o.after)
			if o.dead > 0 {
				tr.deadLettered("p", o.dead)
			}
			tr.applied("p", o.applied)
		}
		st := tr.status("p")
		if st.All != c.all || st.LastMinute != c.lastMinute || st.AppliedLastMinute != c.applied {
			t.Errorf("%s: %+v, want all=%v last minute %d dead, %d applied", c.why, st, c.all, c.lastMinute, c.applied)
		}
	}
}
