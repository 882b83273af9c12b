package testbed

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeT records a Fatalf instead of failing the real test, and ends its
// goroutine the way testing.T does.
type fakeT struct {
	testing.TB
	fatal string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventually(t *testing.T) {
	cases := []struct {
		why       string
		trueAt    int // the call that first reports true; 0: never
		wantCalls int // 0: at least two, the exact count depending on the clock
		wantFatal string
	}{
		{"a condition that holds at once is asked once and passes", 1, 1, ""},
		{"a condition that holds later is asked until it does: the wait is real", 3, 3, ""},
		{"a condition that never holds fails, naming the deadline and its last reason", 0, 0, "not within 1s: not yet (call "},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			f := &fakeT{TB: t}
			calls := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				Eventually(f, time.Second, func() (bool, string) {
					calls++
					return c.trueAt > 0 && calls >= c.trueAt, fmt.Sprintf("not yet (call %d)", calls)
				})
			}()
			<-done
			if c.wantCalls > 0 && calls != c.wantCalls || c.wantCalls == 0 && calls < 2 {
				t.Errorf("cond called %d times, want %d (0: at least 2)", calls, c.wantCalls)
			}
			if c.wantFatal == "" && f.fatal != "" || !strings.Contains(f.fatal, c.wantFatal) {
				t.Errorf("Fatalf %q, want %q", f.fatal, c.wantFatal)
			}
			if c.wantFatal != "" && !strings.Contains(f.fatal, fmt.Sprintf("(call %d)", calls)) {
				t.Errorf("Fatalf %q does not give the last call's reason (call %d)", f.fatal, calls)
			}
		})
	}
}
