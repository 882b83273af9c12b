package reshard

import "fmt"

// Step is what a `readside reshard` run does, given where the projection
// is served and what is recorded (Decide).
type Step int

const (
	StepStart   Step = iota // a new reshard from the sink serving it
	StepResume              // the recorded reshard to NEW, from its phase
	StepServed              // already served by NEW: nothing to do
	StepCleanup             // served by NEW: clean up the servers it left
)

// Decide is the step for a run towards sink to, given the sink Resolve
// found serving the projection (served; "" when its servers disagree: a
// cutover in progress or interrupted), the recorded reshard's target sink
// and phase ("" when none), and whether --cleanup was given.
func Decide(projection, served, to, recordedTo, phase string, cleanup bool) (Step, error) {
	active := Active(phase)
	switch {
	case active && recordedTo != to:
		return 0, fmt.Errorf("a reshard of %s to sink %s is in progress (phase %s): finish it first (rerun readside reshard --projection %s --sink %s with its --to), or give that sink", projection, recordedTo, phase, projection, recordedTo)
	case active:
		return StepResume, nil
	case served == "":
		return 0, fmt.Errorf("the routing of %s is unsettled and no reshard to %s is recorded: rerun the reshard that moved it (readside status shows its sink)", projection, to)
	case served != to:
		return StepStart, nil
	case cleanup && recordedTo == to && (phase == PhaseDone || phase == PhaseClean):
		return StepCleanup, nil
	}
	return StepServed, nil
}
