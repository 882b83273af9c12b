package projector

import (
	"testing"
	"time"
)

func TestRetryBackoff(t *testing.T) {
	// Starts near 20 ms, doubles, stays within 1 s, never negative.
	want := []time.Duration{20, 40, 80, 160, 320, 640, 1000, 1000}
	for i, w := range want {
		w *= time.Millisecond
		for range 50 {
			got := retryBackoff(i + 1)
			if got > w || got < w*4/5 {
				t.Fatalf("retryBackoff(%d) = %s, want within [%s, %s]", i+1, got, w*4/5, w)
			}
		}
	}
	if got := retryBackoff(100); got > time.Second || got <= 0 {
		t.Fatalf("retryBackoff(100) = %s", got)
	}
}
