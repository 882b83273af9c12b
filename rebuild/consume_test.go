package rebuild

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/projections"
)

// TestRebuildCaughtUp: the rebuild's "done" decision reaches every end
// offset taken at its start, whatever the partitions hold at their end.
func TestRebuildCaughtUp(t *testing.T) {
	type O = event.Offsets
	cases := []struct {
		why         string
		stored      []O
		applied     O
		target      O
		done, total int64
		ok          bool
	}{
		{"a commit marker last: the stored offset stops one short, the position is at the end",
			[]O{{"t": {0: 10}}}, O{"t": {0: 11}}, O{"t": {0: 11}}, 11, 11, true},
		{"the marker not read yet: not done",
			[]O{{"t": {0: 10}}}, O{"t": {0: 10}}, O{"t": {0: 11}}, 10, 11, false},
		{"a partition with nothing new since the shadow stored its offset: the stored offset counts",
			[]O{{"t": {0: 11, 1: 4}}}, O{"t": {1: 4}}, O{"t": {0: 11, 1: 4}}, 15, 15, true},
		{"nothing read and nothing stored on a partition with records: not done",
			[]O{{}}, O{}, O{"t": {0: 3}}, 0, 3, false},
		{"empty partitions are left out of the target: done at once",
			[]O{{}}, O{}, O{}, 0, 0, true},
		{"a shard behind holds the stored position back, the applied position does not",
			[]O{{"t": {0: 11}}, {"t": {0: 7}}}, O{}, O{"t": {0: 11}}, 7, 11, false},
		{"past the target (records arrived meanwhile): done, progress capped at the target",
			[]O{{"t": {0: 20}}}, O{"t": {0: 21}}, O{"t": {0: 11}}, 11, 11, true},
		{"a joined parent's topic counts like the projection's own",
			[]O{{"t": {0: 5}, "p": {0: 2}}}, O{"t": {0: 6}}, O{"t": {0: 6}, "p": {0: 3}}, 8, 9, false},
	}
	for _, c := range cases {
		done, total, ok := CaughtUp(c.stored, c.applied, c.target)
		if done != c.done || total != c.total || ok != c.ok {
			t.Errorf("%s: got %d of %d, caught up %v; want %d of %d, %v", c.why, done, total, ok, c.done, c.total, c.ok)
		}
	}
}

// TestRebuildLiveTarget: after the swap the shadow catches up with the
// highest offset the live projector stored on any shard.
func TestRebuildLiveTarget(t *testing.T) {
	got := liveTarget([]event.Offsets{{"t": {0: 5, 1: 9}}, {"t": {0: 7}}})
	if got["t"][0] != 7 || got["t"][1] != 9 || len(got["t"]) != 2 {
		t.Errorf("got %v, want t/0 7, t/1 9", got)
	}
}

// TestRebuildProgressLines: without a terminal a progress line is printed
// when the progress moved, not again for the same offsets every period (a
// long wait would flood the output), and the final line always.
func TestRebuildProgressLines(t *testing.T) {
	var out strings.Builder
	pg := progress.Line{Out: &out} // Every 0: the period never holds a line back
	steps := []struct {
		why   string
		done  int64
		final bool
		want  int // lines printed so far
	}{
		{"the first check prints", 4, false, 1},
		{"the same offsets again: no line", 4, false, 1},
		{"and again: still none", 4, false, 1},
		{"progress moved: a line", 5, false, 2},
		{"the final report prints even unchanged", 5, true, 3},
	}
	for _, s := range steps {
		pg.Count("filling x", s.done, 5, "offsets", s.final)
		if got := strings.Count(out.String(), "\n"); got != s.want {
			t.Fatalf("%s: %d lines, want %d:\n%s", s.why, got, s.want, out.String())
		}
	}
}

// TestConsumeUntilRounds: a round that took longer than followAfter is
// followed by another to a fresh target, at most rounds in all, so a fill
// under steady writes ends about as far behind as its last round took.
func TestConsumeUntilRounds(t *testing.T) {
	cases := []struct {
		why         string
		rounds      int
		followAfter time.Duration
		targets     int // target lists wanted
	}{
		{"every round long: as many rounds as allowed", 3, 0, 3},
		{"one round allowed (the catch-up, the backfill): its target is never moved", 1, 0, 1},
		{"a round quicker than followAfter is the last", 5, time.Hour, 1},
	}
	for _, c := range cases {
		b := newBed(t, newFakeSink([]string{"orders_read"}))
		b.r.followAfter = c.followAfter
		calls := 0
		target := func(context.Context) (event.Offsets, error) {
			calls++
			return event.Offsets{"rs.shop.orders": {0: 10}}, nil
		}
		if err := b.r.consumeUntil(t.Context(), b.r.p, namedSink{"apply"}, target, c.rounds, "filling x"); err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		if calls != c.targets {
			t.Errorf("%s: %d targets listed, want %d", c.why, calls, c.targets)
		}
	}
}

// steppingProjector applies one more step of its topic each time it is
// asked how far it is.
type steppingProjector struct {
	mu   sync.Mutex
	next int64
}

func (p *steppingProjector) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (p *steppingProjector) Applied() event.Offsets {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	return event.Offsets{"rs.shop.orders": {0: p.next}}
}

// TestConsumeUntilWaitsForTheTarget: the projector runs until it has
// applied up to the target, showing how far it is meanwhile, and is
// stopped then.
func TestConsumeUntilWaitsForTheTarget(t *testing.T) {
	b := newBed(t, newFakeSink([]string{"orders_read"}))
	pr := &steppingProjector{}
	b.r.newProjector = func(*projections.Projection, projections.Sink) (filler, error) { return pr, nil }
	if err := b.r.consumeUntil(t.Context(), b.r.p, namedSink{"apply"}, fixed(event.Offsets{"rs.shop.orders": {0: 4}}), 1, "filling x"); err != nil {
		t.Fatal(err)
	}
	out := b.out.String()
	for _, want := range []string{"filling x: 25.0% (1 of 4 offsets)", "filling x: 75.0% (3 of 4 offsets)", "filling x: 100.0% (4 of 4 offsets)"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	if pr.next != 4 {
		t.Errorf("the projector was asked %d times, want it stopped once it reached the target (4)", pr.next)
	}
}

// TestConsumeUntilCancelled: a cancelled run (SIGINT) ends the wait with
// the cancellation, named with what was being filled.
func TestConsumeUntilCancelled(t *testing.T) {
	b := newBed(t, newFakeSink([]string{"orders_read"}))
	b.applied = nil // never caught up
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := b.r.consumeUntil(ctx, b.r.p, namedSink{"apply"}, fixed(event.Offsets{"rs.shop.orders": {0: 4}}), 1, "filling x")
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "filling x: ") {
		t.Errorf("cancelled: %v, want context.Canceled named with what was filled", err)
	}
}
