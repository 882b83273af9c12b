package progress

import (
	"bytes"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type step struct {
		at    time.Duration
		text  string
		final bool
	}
	cases := []struct {
		why   string
		tty   bool
		steps []step
		want  string
	}{
		{"not a terminal: the first line, then one per Every, and the final one always", false,
			[]step{{0, "a", false}, {time.Second, "b", false}, {5 * time.Second, "c", false}, {6 * time.Second, "d", true}},
			"2026-01-02T03:04:05Z a\n2026-01-02T03:04:10Z c\n2026-01-02T03:04:11Z d\n"},
		{"a terminal: every text redrawn in place, a shorter one clears the rest, the final ends the line", true,
			[]step{{0, "long text", false}, {time.Second, "short", true}},
			"\rlong text\rshort    \n"},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		var at time.Duration
		l := &Line{Out: &buf, Every: 5 * time.Second, TTY: c.tty, now: func() time.Time { return base.Add(at) }}
		for _, s := range c.steps {
			at = s.at
			l.Show(s.text, s.final)
		}
		if got := buf.String(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.why, got, c.want)
		}
	}
	if r := Rate(50, 2*time.Second); r != 25 {
		t.Errorf("Rate(50, 2s) = %v, want 25", r)
	}
	if r := Rate(50, time.Millisecond); r != 0 {
		t.Errorf("Rate over 1ms = %v, want 0 (too short to say)", r)
	}
}
