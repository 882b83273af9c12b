package rebuild

import (
	"errors"
	"strings"
	"testing"

	"github.com/readside/readside/event"
)

// TestRun: the rebuild's phases, what a rerun after a crash at each point
// does, and its refusals. The sink, broker and projectors are fakes: the
// real ones are e2e/replay_test.go and e2e/rebuild_end_test.go.
func TestRun(t *testing.T) {
	const (
		live   = "orders_read"
		shadow = "orders_read__rebuild"
		old    = "orders_read__old"
		fill   = "orders__rebuild/orders_read__rebuild via apply"
		// The catch-up applies under the live name (its tombstones,
		// floors, join state) from the shadow's offsets.
		catch = "orders offsets orders__rebuild/orders_read via apply"
	)
	cases := []struct {
		why    string
		shards [][]string
		phase  string     // recorded before the run
		setup  func(*bed) // more faults
		err    string     // "": succeeds
		tables string     // every shard's tables after
		runs   []string   // the projectors run, in order
		calls  []string   // the sink operations, in order
		after  string     // the phase recorded after
	}{
		{why: "a fresh rebuild fills the shadow, swaps it in on every shard, catches up and forgets the shadow",
			shards: [][]string{{live}, {live}},
			tables: live + "," + old + " | " + live + "," + old, runs: []string{fill, catch},
			calls: []string{"phase orders=filling", "create " + shadow, "swap 0", "swap 1", "phase orders=catching-up", "forget orders__rebuild", "phase orders="}},
		{why: "an old table from an earlier rebuild refuses the start, naming --drop-old, before anything is recorded",
			shards: [][]string{{live}, {live, old}},
			err:    old + " exists from an earlier rebuild: drop it first (readside replay --projection orders --drop-old)",
			tables: live + " | " + live + "," + old, calls: nil, after: ""},
		{why: "a crash while filling, before any swap: the shadow is filled again (from its stored offsets) and swapped",
			shards: [][]string{{live, shadow}, {live, shadow}}, phase: "filling",
			tables: live + "," + old + " | " + live + "," + old, runs: []string{fill, catch},
			calls: []string{"create " + shadow, "swap 0", "swap 1", "phase orders=catching-up", "forget orders__rebuild", "phase orders="}},
		{why: "a crash between two shards' swaps: the rerun swaps the other shard only, without filling",
			shards: [][]string{{live, old}, {live, shadow}}, phase: "filling",
			tables: live + "," + old + " | " + live + "," + old, runs: []string{catch},
			calls: []string{"swap 1", "phase orders=catching-up", "forget orders__rebuild", "phase orders="}},
		{why: "a crash after every swap: the rerun neither fills nor swaps, it catches up",
			shards: [][]string{{live, old}, {live, old}}, phase: "filling",
			tables: live + "," + old + " | " + live + "," + old, runs: []string{catch},
			calls: []string{"phase orders=catching-up", "forget orders__rebuild", "phase orders="}},
		{why: "a crash while catching up: the rerun catches up again",
			shards: [][]string{{live, old}}, phase: "catching-up",
			tables: live + "," + old, runs: []string{catch},
			calls: []string{"forget orders__rebuild", "phase orders="}},
		{why: "a failed swap names the shard and leaves the phase for the rerun",
			shards: [][]string{{live}, {live}},
			setup:  func(b *bed) { b.sink.failSwap[1] = errors.New("shard 80-: RENAME TABLE: lock wait timeout") },
			err:    "shard 80-: RENAME TABLE", tables: live + "," + old + " | " + live + "," + shadow, runs: []string{fill},
			calls: []string{"phase orders=filling", "create " + shadow, "swap 0"}, after: "filling"},
		{why: "a projector that stops ends the fill with its error, named, and leaves the phase for the rerun",
			shards: [][]string{{live}},
			setup:  func(b *bed) { b.runErr, b.applied = errors.New("sink refused a row"), nil },
			err:    "filling " + shadow + ": sink refused a row", tables: live + "," + shadow, runs: []string{fill},
			calls: []string{"phase orders=filling", "create " + shadow}, after: "filling"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			sink := newFakeSink(c.shards...)
			if c.phase != "" {
				sink.phases["orders"] = c.phase
			}
			b := newBed(t, sink)
			if c.setup != nil {
				c.setup(b)
			}
			err := b.r.Run(t.Context())
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("Run: error %v, want one containing %q", err, c.err)
			}
			if got := sink.shardTables(); got != c.tables {
				t.Errorf("tables %q, want %q", got, c.tables)
			}
			if got, want := strings.Join(b.runs, "; "), strings.Join(c.runs, "; "); got != want {
				t.Errorf("projectors run: %q, want %q", got, want)
			}
			if got, want := strings.Join(sink.calls, "; "), strings.Join(c.calls, "; "); got != want {
				t.Errorf("sink operations:\n got %q\nwant %q", got, want)
			}
			if got := sink.phases["orders"]; got != c.after {
				t.Errorf("phase after: %q, want %q", got, c.after)
			}
		})
	}
}

// TestRunCatchesUpWithTheLiveProjector: after the swap the shadow goes on
// until it has applied what the live projector stored on any shard, not
// just the fill's end offsets: the live projector may have applied those
// records to the table the swap moved away.
func TestRunCatchesUpWithTheLiveProjector(t *testing.T) {
	sink := newFakeSink([]string{"orders_read", "orders_read__old"}, []string{"orders_read", "orders_read__old"})
	sink.phases["orders"] = "catching-up"
	sink.stored["orders"] = []event.Offsets{{"rs.shop.orders": {0: 30}}, {"rs.shop.orders": {0: 25, 1: 9}}}
	b := newBed(t, sink)
	b.applied = event.Offsets{"rs.shop.orders": {0: 30, 1: 9}}
	if err := b.r.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.out.String(), "catching up after the swap: 100.0% (39 of 39 offsets)") {
		t.Errorf("the catch-up's target is not the live projector's highest stored offsets (30 + 9):\n%s", b.out.String())
	}
}

// TestRunRefusesLongNames: the shadow's and the old table's names must fit
// MySQL's 64 characters; the error names the key to shorten, before the
// sink is touched.
func TestRunRefusesLongNames(t *testing.T) {
	sink := newFakeSink([]string{"x"})
	b := newBed(t, sink)
	b.r.p.Table = strings.Repeat("t", 58) // + "__rebuild" is 67
	err := b.r.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "shorten projections.orders.table") {
		t.Fatalf("Run: %v, want the 64-character refusal naming the key", err)
	}
	if len(sink.calls) != 0 || len(b.runs) != 0 {
		t.Errorf("the sink was touched before the refusal: %v, %v", sink.calls, b.runs)
	}
}

// TestDropOld: --drop-old drops the kept table on every shard, and nothing
// else.
func TestDropOld(t *testing.T) {
	sink := newFakeSink([]string{"orders_read", "orders_read__old"}, []string{"orders_read"})
	b := newBed(t, sink)
	if err := b.r.DropOld(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := sink.shardTables(); got != "orders_read | orders_read" {
		t.Errorf("tables after --drop-old: %q", got)
	}
	if got := strings.Join(sink.calls, "; "); got != "drop orders_read__old" {
		t.Errorf("sink operations: %q", got)
	}
}
