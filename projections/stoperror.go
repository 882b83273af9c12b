package projections

import "fmt"

// StopError stops one projection, not the process: what it cannot go on
// with (Reason) and what the user does about it (Fix). Retrying cannot
// help, so a supervisor records it for status and waits for a restart or
// SIGHUP after the fix.
type StopError struct {
	Projection string
	Reason     error
	Fix        string
}

func (e *StopError) Error() string {
	return fmt.Sprintf("projection %s stopped: %v; fix: %s", e.Projection, e.Reason, e.Fix)
}

func (e *StopError) Unwrap() error { return e.Reason }
