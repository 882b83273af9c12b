// Package progress shows how far a long command is, as verify, reshard and
// replay --rebuild do: one line redrawn in place on a terminal, else a
// timestamped line every Every (log files and CI keep a line per period,
// not a carriage-return smear), and always a final line.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Line writes one command's progress to Out. The zero value of last and
// width is ready; a Line is used by one goroutine.
type Line struct {
	Out   io.Writer
	Every time.Duration // period of the lines when Out is not a terminal
	TTY   bool          // Out is a terminal: one line redrawn in place
	now   func() time.Time
	last  time.Time
	width int
}

// Show writes text as the current progress: on a terminal over the
// previous text; otherwise when Every has passed since the last line
// written. final always writes and ends the line.
func (l *Line) Show(text string, final bool) {
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	if l.TTY {
		pad := max(l.width-len(text), 0)
		l.width = len(text)
		fmt.Fprintf(l.Out, "\r%s%s", text, strings.Repeat(" ", pad))
		if final {
			fmt.Fprintln(l.Out)
			l.width = 0
		}
		return
	}
	t := now()
	if !final && !l.last.IsZero() && t.Sub(l.last) < l.Every {
		return
	}
	l.last = t
	fmt.Fprintf(l.Out, "%s %s\n", t.Format(time.RFC3339), text)
}

// Rate is per second over d, or 0 for too short a time to say.
func Rate(n int64, d time.Duration) float64 {
	if d < 100*time.Millisecond {
		return 0
	}
	return float64(n) / d.Seconds()
}
