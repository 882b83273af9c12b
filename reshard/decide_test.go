package reshard

import (
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
