package testbed

import (
	"context"
	"testing"
	"time"
)

// PollEvery is how often Eventually asks again: often enough that a test
// waits little past the moment its condition holds, rarely enough not to
// load a server the test also measures.
const PollEvery = 200 * time.Millisecond

// Poll calls cond every interval until it reports true (Poll returns true)
// or ctx ends (false). For waits whose failure the caller reports itself,
// or that are not failures at all.
func Poll(ctx context.Context, every time.Duration, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(every):
		}
	}
}

// Eventually polls cond until it holds, and fails t if it does not within
// the deadline, with cond's last explanation of why not. Deadlines are
// generous on purpose: the box runs the whole suite on 2 shared cores, and
// a test asserts what happens, never how fast.
func Eventually(t testing.TB, within time.Duration, cond func() (ok bool, why string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	var why string
	if !Poll(ctx, PollEvery, func() bool {
		var ok bool
		ok, why = cond()
		return ok
	}) {
		t.Fatalf("not within %s: %s", within, why)
	}
}
