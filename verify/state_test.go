package verify

import (
	"testing"
	"time"
)

// TestScanLineFormat: a percentage only against an estimate, never 100
// before the scan is through and 100 when it is, whatever the estimate
// said (InnoDB's row estimate is often off by a third); no rate before
// there was time to measure one.
func TestScanLineFormat(t *testing.T) {
	for _, tc := range []struct {
		name           string
		estimate, rows int64
		through        bool
		want           string
	}{
		{"no estimate", 0, 843, false, "p: 843 rows, 1 chunks differ, 2 keys to re-check"},
		{"no estimate, through", 0, 843, true, "p: 843 rows, 1 chunks differ, 2 keys to re-check"},
		{"half", 1000, 500, false, "p: 500 rows (~50%), 1 chunks differ, 2 keys to re-check"},
		{"estimate low", 1000, 1300, false, "p: 1300 rows (~99%), 1 chunks differ, 2 keys to re-check"},
		{"estimate high, through", 4000, 1375, true, "p: 1375 rows (100%), 1 chunks differ, 2 keys to re-check"},
	} {
		p := &scanLine{name: "p", estimate: tc.estimate, start: time.Now(), rows: tc.rows, differing: 1, suspects: 2}
		if got := p.format(tc.through); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	p := &scanLine{name: "p", start: time.Now().Add(-2 * time.Second), rows: 1000}
	if got, want := p.format(true), "p: 1000 rows, 500 rows/s, 0 chunks differ, 0 keys to re-check"; got != want {
		t.Errorf("after 2 s: %q, want %q", got, want)
	}
}
