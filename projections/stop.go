package projections

import (
	"errors"
	"fmt"
)

// StopError is why a projection cannot go on, and what the user does about
// it. A projector (or the code it calls) returns one when it knows the fix
// — a config key to edit, a command to run — so the daemon can show it in
// /status and `readside status` next to the reason; the daemon stops that
// projection alone and keeps the rest running.
type StopError struct {
	Projection string
	Reason     error
	// Fix is what the user does, in full: "remove projections.x.columns.y,
	// run readside plan --apply, then SIGHUP". Empty: GenericFix.
	Fix string
}

// GenericFix is the fix of an error that carries none.
const GenericFix = "fix the cause, then send SIGHUP or restart readside to resume this projection (its applied offsets are in the sink: nothing is lost)"

func (e *StopError) Error() string {
	if e.Fix == "" {
		return fmt.Sprintf("projection %s stopped: %v", e.Projection, e.Reason)
	}
	return fmt.Sprintf("projection %s stopped: %v (fix: %s)", e.Projection, e.Reason, e.Fix)
}

func (e *StopError) Unwrap() error { return e.Reason }

// FixOf is the fix a stopped projection's error carries: a StopError's Fix,
// else fallback (which may be empty: GenericFix then).
func FixOf(err error, fallback string) string {
	var se *StopError
	if errors.As(err, &se) && se.Fix != "" {
		return se.Fix
	}
	if fallback != "" {
		return fallback
	}
	return GenericFix
}
