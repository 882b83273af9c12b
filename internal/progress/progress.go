// Package progress shows how far a long command is (replay --rebuild and
// --backfill, reshard, snapshot --wait, verify): one line redrawn in place
// on a terminal, else a timestamped line every Every (log files and CI keep
// a line per period, not a carriage-return smear), and always a final line.
// The commands feed it text (Show) or counts (Count); the rules of when a
// line is written live here only.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// Still is how often an unchanged line is written again when Out is not a
// terminal, so a wait that does not move still shows the command is alive
// without a line every period saying the same.
const Still = time.Minute

// redraw is the least time between two redraws on a terminal: a command
// may report every chunk, faster than anyone reads.
const redraw = 100 * time.Millisecond

// barWidth is the number of cells of the bar Count draws on a terminal.
const barWidth = 30

// Line writes one command's progress to Out. Copy the zero-state Line to
// start another command's; a Line in use belongs to one goroutine.
type Line struct {
	Out   io.Writer
	Every time.Duration // period of the lines when Out is not a terminal
	TTY   bool          // Out is a terminal: one line redrawn in place
	// JSON, when set and Out is not a terminal, takes the lines instead
	// of Out, as INFO lines whose "progress" is the text: under
	// log.format json every line on stderr is one JSON object.
	JSON *slog.Logger
	now  func() time.Time

	last  time.Time // when the last line was written
	key   string    // what the last line said, less what moves with time alone
	width int       // length of the text on the terminal, to clear

	// The rate of Count is over the time since what was first counted.
	what      string
	start     time.Time
	startDone int64
}

// Show writes text as the current progress: on a terminal over the
// previous text; otherwise when Every has passed since the last line and
// the text changed (or Still passed). final always writes and ends the
// line.
func (l *Line) Show(text string, final bool) {
	l.show(text, text, final)
}

// Count shows done of total units of what (unit is a plural noun, its
// first word names the rate: "rows read" gives rows/s): on a terminal a bar,
// else "what: P% (done of total unit)"; both with the rate since what was
// first counted, once a second has passed, and the time left at that rate.
// An unchanged count is written again only after Still.
func (l *Line) Count(what string, done, total int64, unit string, final bool) {
	now := l.clock()
	if what != l.what || l.start.IsZero() {
		l.what, l.start, l.startDone = what, now, done
	}
	pct := 100.0
	if total > 0 {
		pct = min(100, 100*float64(done)/float64(total))
	}
	var tail string
	if el := now.Sub(l.start); el >= time.Second {
		r := float64(done-l.startDone) / el.Seconds()
		tail = fmt.Sprintf(", %.0f %s/s", r, strings.Fields(unit + " x")[0])
		if r > 0 && done < total {
			left := time.Duration(float64(total-done) / r * float64(time.Second))
			tail += ", " + left.Round(time.Second).String() + " left"
		}
	}
	text := fmt.Sprintf("%s: %.1f%% (%d of %d %s)%s", what, pct, done, total, unit, tail)
	if l.TTY {
		n := int(pct / 100 * barWidth)
		text = fmt.Sprintf("%s [%s%s] %5.1f%% %d/%d %s%s", what, strings.Repeat("#", n), strings.Repeat("-", barWidth-n), pct, done, total, unit, tail)
	}
	l.show(text, fmt.Sprintf("%s\x00%d\x00%d", what, done, total), final)
	if final {
		l.what = "" // the next count of what is another task, its rate its own
	}
}

// show writes text under the rules of Show; key is what must change for
// a line before Still.
func (l *Line) show(text, key string, final bool) {
	t := l.clock()
	if l.TTY {
		if !final && !l.last.IsZero() && t.Sub(l.last) < redraw {
			return
		}
		l.last = t
		pad := max(l.width-len(text), 0)
		l.width = len(text)
		fmt.Fprintf(l.Out, "\r%s%s", text, strings.Repeat(" ", pad))
		if final {
			fmt.Fprintln(l.Out)
			l.width, l.last = 0, time.Time{}
		}
		return
	}
	if !final && !l.last.IsZero() {
		since := t.Sub(l.last)
		if since < l.Every || (key == l.key && since < Still) {
			return
		}
	}
	l.last, l.key = t, key
	if final {
		l.last = time.Time{} // what follows a final line is another task: shown at once
	}
	if l.JSON != nil {
		l.JSON.Info("progress", "progress", text, "final", final)
		return
	}
	fmt.Fprintf(l.Out, "%s %s\n", t.Format(time.RFC3339), text)
}

func (l *Line) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// Rate is per second over d, or 0 for too short a time to say.
func Rate(n int64, d time.Duration) float64 {
	if d < 100*time.Millisecond {
		return 0
	}
	return float64(n) / d.Seconds()
}
