package main

import (
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/httpapi"
)

// TestPrintRebuilds: readside status prints a line per rebuild or
// backfill that readside replay runs in another process, with its phase
// and how far it is, and nothing when none runs.
func TestPrintRebuilds(t *testing.T) {
	for _, c := range []struct {
		why    string
		rs     []httpapi.RebuildStatus
		err    string
		want   []string
		reject []string
	}{
		{"none: nothing printed, not even the heading", nil, "", nil, []string{"rebuilds"}},
		{"a rebuild and a backfill: one line each with kind, phase, percent and offsets",
			[]httpapi.RebuildStatus{
				{Projection: "orders", Kind: "rebuild", Phase: "filling", Applied: 250, End: 1000, Percent: 25, StartedAt: time.Now().Add(-3 * time.Second)},
				{Projection: "users", Kind: "backfill", Phase: "filling", Applied: 5, End: 10, Percent: 50, Error: "sink reads: gone"}}, "",
			[]string{"rebuilds and backfills:", "  rebuild orders: filling, 25.0% (250 of 1000 offsets), started 3", "  backfill users: filling, 50.0% (5 of 10 offsets); error: sink reads: gone"}, nil},
		{"the sinks could not be read: the error under the heading", nil, "projection orders: sink reads: access denied",
			[]string{"rebuilds and backfills:", "error: projection orders: sink reads: access denied"}, nil},
	} {
		var b strings.Builder
		printRebuilds(&b, c.rs, c.err)
		out := b.String()
		if c.want == nil && out != "" {
			t.Errorf("%s: printed %q", c.why, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.why, w, out)
			}
		}
		for _, w := range c.reject {
			if strings.Contains(out, w) {
				t.Errorf("%s: output has %q:\n%s", c.why, w, out)
			}
		}
	}
}
