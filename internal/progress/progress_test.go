package progress

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// step is one report at a time after base: a text for Show, or a count
// (unit set) for Count.
type step struct {
	at          time.Duration
	text        string
	done, total int64
	unit        string
	final       bool
}

func run(tty bool, steps []step) string {
	var buf bytes.Buffer
	var at time.Duration
	l := &Line{Out: &buf, Every: 5 * time.Second, TTY: tty, now: func() time.Time { return base.Add(at) }}
	for _, s := range steps {
		at = s.at
		if s.unit != "" {
			l.Count(s.text, s.done, s.total, s.unit, s.final)
		} else {
			l.Show(s.text, s.final)
		}
	}
	return buf.String()
}

func TestLine(t *testing.T) {
	cases := []struct {
		why   string
		tty   bool
		steps []step
		want  string
	}{
		{"not a terminal: the first line, then one per Every, and the final one always", false,
			[]step{{at: 0, text: "a"}, {at: time.Second, text: "b"}, {at: 5 * time.Second, text: "c"}, {at: 6 * time.Second, text: "d", final: true}},
			"2026-01-02T03:04:05Z a\n2026-01-02T03:04:10Z c\n2026-01-02T03:04:11Z d\n"},
		{"not a terminal: the same text again is held back until Still, so a long wait does not repeat itself every period", false,
			[]step{{at: 0, text: "waiting"}, {at: 10 * time.Second, text: "waiting"}, {at: Still, text: "waiting"}},
			"2026-01-02T03:04:05Z waiting\n2026-01-02T03:05:05Z waiting\n"},
		{"after a final line the next task's first line is written at once, not an Every later", false,
			[]step{{at: 0, text: "one", final: true}, {at: time.Second, text: "two"}},
			"2026-01-02T03:04:05Z one\n2026-01-02T03:04:06Z two\n"},
		{"a terminal: every text redrawn in place, a shorter one clears the rest, the final ends the line", true,
			[]step{{at: 0, text: "long text"}, {at: time.Second, text: "short", final: true}},
			"\rlong text\rshort    \n"},
		{"a terminal: redraws closer than 100ms are skipped (a report per chunk is faster than anyone reads), the final never", true,
			[]step{{at: 0, text: "a"}, {at: 50 * time.Millisecond, text: "b"}, {at: 60 * time.Millisecond, text: "c", final: true}},
			"\ra\rc\n"},
	}
	for _, c := range cases {
		if got := run(c.tty, c.steps); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.why, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	cases := []struct {
		why   string
		tty   bool
		steps []step
		want  string
	}{
		{"not a terminal: no rate in the first second, then the rate since the first count and the time left at it", false,
			[]step{{at: 0, text: "filling x", done: 10, total: 100, unit: "offsets"}, {at: 5 * time.Second, text: "filling x", done: 60, total: 100, unit: "offsets"}},
			"2026-01-02T03:04:05Z filling x: 10.0% (10 of 100 offsets)\n2026-01-02T03:04:10Z filling x: 60.0% (60 of 100 offsets), 10 offsets/s, 4s left\n"},
		{"not a terminal: an unchanged count is not repeated every period, the final line always comes, without a time left", false,
			[]step{{at: 0, text: "w", done: 4, total: 5, unit: "rows read"}, {at: 5 * time.Second, text: "w", done: 4, total: 5, unit: "rows read"}, {at: 6 * time.Second, text: "w", done: 5, total: 5, unit: "rows read", final: true}},
			"2026-01-02T03:04:05Z w: 80.0% (4 of 5 rows read)\n2026-01-02T03:04:11Z w: 100.0% (5 of 5 rows read), 0 rows/s\n"},
		{"a new what starts its own rate: the first line of a phase has none", false,
			[]step{{at: 0, text: "a", done: 0, total: 10, unit: "rows"}, {at: 10 * time.Second, text: "b", done: 0, total: 10, unit: "rows"}},
			"2026-01-02T03:04:05Z a: 0.0% (0 of 10 rows)\n2026-01-02T03:04:15Z b: 0.0% (0 of 10 rows)\n"},
		{"a terminal: a bar redrawn in place with the rate, ended by the final", true,
			[]step{{at: 0, text: "copy", done: 0, total: 10, unit: "rows"}, {at: 2 * time.Second, text: "copy", done: 10, total: 10, unit: "rows", final: true}},
			"\rcopy [------------------------------]   0.0% 0/10 rows\rcopy [##############################] 100.0% 10/10 rows, 5 rows/s\n"},
		{"a done above the total (a count that outgrew its estimate) shows 100%, not more", false,
			[]step{{at: 0, text: "c", done: 12, total: 10, unit: "rows", final: true}},
			"2026-01-02T03:04:05Z c: 100.0% (12 of 10 rows)\n"},
	}
	for _, c := range cases {
		if got := run(c.tty, c.steps); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.why, got, c.want)
		}
	}
}

func TestRate(t *testing.T) {
	if r := Rate(50, 2*time.Second); r != 25 {
		t.Errorf("Rate(50, 2s) = %v, want 25", r)
	}
	if r := Rate(50, time.Millisecond); r != 0 {
		t.Errorf("Rate over 1ms = %v, want 0 (too short to say)", r)
	}
}

// TestJSONLines: with a JSON logger and no terminal the lines are JSON
// log lines (log.format json keeps stderr one object a line); on a
// terminal the line is drawn as ever.
func TestJSONLines(t *testing.T) {
	var out, logged bytes.Buffer
	l := Line{Out: &out, JSON: slog.New(slog.NewJSONHandler(&logged, nil))}
	l.Count("filling t", 5, 10, "offsets", false)
	l.Show("done", true)
	if out.Len() != 0 {
		t.Errorf("wrote %q to Out, want every line through the logger", out.String())
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	for _, ln := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil || m["msg"] != "progress" {
			t.Errorf("line %q: not a JSON progress line (%v)", ln, err)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `"progress":"filling t: 50.0% (5 of 10 offsets)"`) || !strings.Contains(lines[1], `"final":true`) {
		t.Errorf("logged %q, want the count and the final line", logged.String())
	}
	out.Reset()
	tty := Line{Out: &out, TTY: true, JSON: slog.New(slog.NewJSONHandler(&logged, nil))}
	tty.Show("drawn", true)
	if !strings.Contains(out.String(), "drawn") {
		t.Errorf("on a terminal wrote %q, want the line drawn", out.String())
	}
}
