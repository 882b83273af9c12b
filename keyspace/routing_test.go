package keyspace

import (
	"errors"
	"strings"
	"testing"
)

// TestRoutingStep: which sink the routing rows of one sink's shards name,
// and when they are unsettled or contradict each other.
func TestRoutingStep(t *testing.T) {
	b1 := Routing{Generation: 1, Sink: "b", Ranges: []string{"-80", "80-"}}
	a2 := Routing{Generation: 2, Sink: "a", Ranges: []string{"-"}}
	for _, tc := range []struct {
		why       string
		came      uint64
		rows      []Routing
		next      string
		gen       uint64
		unsettled bool
		err       string
	}{
		{why: "no rows anywhere: the config's sink at generation 0", rows: []Routing{{}, {}}, next: "a"},
		{why: "every shard names another sink: follow it", rows: []Routing{b1, b1}, next: "b", gen: 1},
		{why: "a cutover that updated one OLD shard already points on: the next sink decides",
			rows: []Routing{b1, {}}, next: "b", gen: 1},
		{why: "one shard names this sink at generation 2, another is still at 1: a cutover into it under way", rows: []Routing{b1, a2}, next: "a", unsettled: true},
		{why: "rows naming the sink itself at one generation: settled", rows: []Routing{a2, a2}, next: "a", gen: 2},
		{why: "reached by generation 1 but its shards have no row yet (NEW-only servers not cut over)",
			came: 1, rows: []Routing{{}, {}}, unsettled: true},
		{why: "reached by generation 1, one shard cut over and one not", came: 1,
			rows: []Routing{{Generation: 1, Sink: "a"}, {}}, unsettled: true},
		{why: "two sinks at one generation: a corrupt routing table, not a cutover",
			rows: []Routing{b1, {Generation: 1, Sink: "c"}}, err: "name two sinks"},
	} {
		next, gen, err := Step("p", "a", tc.came, tc.rows)
		var unsettled *RoutingUnsettled
		switch {
		case tc.unsettled:
			if !errors.As(err, &unsettled) {
				t.Errorf("%s: got %q %d %v, want RoutingUnsettled", tc.why, next, gen, err)
			}
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || errors.As(err, &unsettled) {
				t.Errorf("%s: got %v, want an error saying %q", tc.why, err, tc.err)
			}
		case err != nil || next != tc.next || gen != tc.gen:
			t.Errorf("%s: got %q %d %v, want %q %d", tc.why, next, gen, err, tc.next, tc.gen)
		}
	}
}

// TestSameRanges: the config must give a sink the ranges its routing rows
// recorded, else readers and readside would route differently.
func TestSameRanges(t *testing.T) {
	rows := []Routing{{Generation: 3, Sink: "b", Ranges: []string{"-80", "80-"}}}
	if err := SameRanges("p", "b", []string{"-80", "80-"}, rows); err != nil {
		t.Errorf("equal ranges refused: %v", err)
	}
	err := SameRanges("p", "b", []string{"-40", "40-"}, rows)
	if err == nil || !strings.Contains(err.Error(), "-80,80-") || !strings.Contains(err.Error(), "-40,40-") || !strings.Contains(err.Error(), "readside reshard") {
		t.Errorf("changed ranges gave %v, want an error showing both and the fix", err)
	}
}

// TestSplitRanges: RangesText and SplitRanges are inverses, "" is none.
func TestSplitRanges(t *testing.T) {
	for _, rs := range [][]string{{"-"}, {"-80", "80-"}, {"-40", "40-80", "80-"}} {
		if got := SplitRanges(RangesText(rs)); strings.Join(got, "|") != strings.Join(rs, "|") {
			t.Errorf("%v came back as %v", rs, got)
		}
	}
	if got := SplitRanges(""); got != nil {
		t.Errorf("empty text gave %v", got)
	}
}

// TestSamePlacement: a process whose declaration places the projection
// otherwise than the reshard that recorded the routing (replicated against
// sharded) must not write through it.
func TestSamePlacement(t *testing.T) {
	const sharded, replicated = false, true
	for _, tc := range []struct {
		why  string
		p    bool // declared replicated
		rows []Routing
		err  string
	}{
		{why: "a reshard of a replicated projection into a sharded one, and a daemon still declaring it replicated",
			p: replicated, rows: []Routing{{Generation: 1, Sink: "b"}, {Generation: 1, Sink: "b"}}, err: "is sharded by its shard_by on sink b at routing generation 1"},
		{why: "the daemon restarted with the config the reshard ran with", p: sharded, rows: []Routing{{Generation: 1, Sink: "b"}}},
		{why: "a replicated projection moved onto more servers, still replicated", p: replicated,
			rows: []Routing{{Generation: 1, Sink: "b", Replicated: true}}},
		{why: "recorded replicated, declared sharded", p: sharded, rows: []Routing{{Generation: 1, Sink: "b", Replicated: true}},
			err: "this process declares it sharded by its shard_by"},
	} {
		err := SamePlacement("p", tc.p, "b", 1, tc.rows)
		var re *RoutingError
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.why, err)
		case tc.err != "" && (!errors.As(err, &re) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want a RoutingError saying %q", tc.why, err, tc.err)
		}
	}
}
