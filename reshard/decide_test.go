package reshard

import (
	"github.com/readside/readside/projections"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		why                           string
		served, to, recordedTo, phase string
		cleanup                       bool
		want                          Step
		wantErr                       string
	}{
		{why: "nothing recorded, served elsewhere: a new reshard", served: "old", to: "new", want: StepStart},
		{why: "killed while filling: the rerun resumes", served: "old", to: "new", recordedTo: "new", phase: PhaseFilling, want: StepResume},
		{why: "killed while catching up: resumes", served: "old", to: "new", recordedTo: "new", phase: PhaseCatchingUp, want: StepResume},
		{why: "killed mid-cutover: servers disagree, the rerun finishes it", served: "", to: "new", recordedTo: "new", phase: PhaseCutover, want: StepResume},
		{why: "killed after the last server moved but before done was recorded: resume records it", served: "new", to: "new", recordedTo: "new", phase: PhaseCutover, want: StepResume},
		{why: "done: a rerun says so and exits 0", served: "new", to: "new", recordedTo: "new", phase: PhaseDone, want: StepServed},
		{why: "done, --cleanup: clean", served: "new", to: "new", recordedTo: "new", phase: PhaseDone, cleanup: true, want: StepCleanup},
		{why: "a cleanup killed halfway resumes", served: "new", to: "new", recordedTo: "new", phase: PhaseClean, cleanup: true, want: StepCleanup},
		{why: "served by NEW since the config says so (no reshard): nothing to clean", served: "new", to: "new", cleanup: true, want: StepServed},
		{why: "a finished reshard elsewhere does not block a new one", served: "mid", to: "new", recordedTo: "mid", phase: PhaseDone, want: StepStart},
		{why: "another reshard in progress is refused, naming it", served: "old", to: "new", recordedTo: "other", phase: PhaseFilling, wantErr: "to sink other is in progress"},
		{why: "unsettled routing without a recorded cutover: refused", served: "", to: "new", wantErr: "unsettled"},
	} {
		got, err := Decide("p", tc.served, tc.to, tc.recordedTo, tc.phase, tc.cleanup)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: err = %v, want one saying %q", tc.why, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s: Decide = %v, %v; want %v", tc.why, got, err, tc.want)
		}
	}
}

func TestCaughtUp(t *testing.T) {
	// A partition's position is the further of the lowest stored offset
	// and what the running projector applied.
	target := offs("t", 0, 10, "t", 1, 5)
	for _, tc := range []struct {
		why     string
		stored  []map[int32]int64
		applied map[int32]int64
		ok      bool
	}{
		{"every shard stored past the target", []map[int32]int64{{0: 10, 1: 5}, {0: 12, 1: 6}}, nil, true},
		{"one shard behind on a partition holds it back", []map[int32]int64{{0: 10, 1: 5}, {0: 9, 1: 6}}, nil, false},
		{"applied covers a partition whose end is a commit marker", []map[int32]int64{{0: 9, 1: 5}}, map[int32]int64{0: 10}, true},
		{"a shard with nothing stored is at 0", []map[int32]int64{{0: 10, 1: 5}, {}}, nil, false},
	} {
		var stored []map[string]map[int32]int64
		for _, s := range tc.stored {
			stored = append(stored, map[string]map[int32]int64{"t": s})
		}
		st := make([]projOffsets, len(stored))
		for i := range stored {
			st[i] = stored[i]
		}
		_, _, ok := caughtUp(st, projOffsets{"t": tc.applied}, target)
		if ok != tc.ok {
			t.Errorf("%s: caughtUp = %v, want %v", tc.why, ok, tc.ok)
		}
	}
}

type projOffsets = projections.Offsets

func offs(kv ...any) projections.Offsets {
	o := projections.Offsets{}
	for i := 0; i < len(kv); i += 3 {
		o.Set(kv[i].(string), int32(kv[i+1].(int)), int64(kv[i+2].(int)))
	}
	return o
}
