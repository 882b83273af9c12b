package startup

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// ConfigError is a start-up error waiting cannot pass; its message names
// the fix.
type ConfigError struct {
	What string // "source", "kafka", "sink orders"
	Msg  string // the error and the fix
	Err  error
}

func (e *ConfigError) Error() string { return e.What + ": " + e.Msg }
func (e *ConfigError) Unwrap() error { return e.Err }

// Waiter retries a start-up step with capped exponential backoff while its
// error is Transient.
type Waiter struct {
	Log *slog.Logger
	// Report is told what the process waits for and why ("" once it is
	// up), so /healthz can say it.
	Report func(what, reason string)
	// Initial and Max bound the pause between attempts (default 1 s and
	// 30 s); Attempt bounds one attempt (default 10 s), so a host that
	// drops packets cannot hold start-up in one try.
	Initial, Max, Attempt time.Duration
}

// For runs step until it succeeds, its error is Permanent (a *ConfigError
// naming the fix for the connection under key), or ctx ends (ctx's
// error). Each failed attempt logs one WARN; the pauses double, so the log
// slows down to one line per Max.
func (w Waiter) For(ctx context.Context, what, key string, step func(context.Context) error) error {
	initial, maxPause, attempt := w.Initial, w.Max, w.Attempt
	if initial <= 0 {
		initial = time.Second
	}
	if maxPause <= 0 {
		maxPause = 30 * time.Second
	}
	if attempt <= 0 {
		attempt = 10 * time.Second
	}
	pause := initial
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := step(actx)
		cancel()
		if err == nil {
			if n > 1 {
				w.Log.Info("reachable: starting", "waited_for", what, "attempts", n)
			}
			w.report(what, "")
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if Classify(err) == Permanent {
			return &ConfigError{What: what, Msg: Fix(err, key), Err: err}
		}
		reason := fmt.Sprintf("waiting for %s: %v (attempt %d, next in %s)", what, err, n, pause.Round(time.Second))
		w.report(what, reason)
		w.Log.Warn("waiting for "+what+" at start-up: it is unreachable or not ready; retrying", "err", err, "attempt", n, "retry_in", pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, maxPause)
	}
}

func (w Waiter) report(what, reason string) {
	if w.Report != nil {
		w.Report(what, reason)
	}
}
