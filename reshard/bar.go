package reshard

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Bar is where and how a reshard shows how far each phase is: one bar
// redrawn in place on a terminal, else a line every Every.
type Bar struct {
	Out   io.Writer
	Every time.Duration
	TTY   bool
	last  time.Time
	what  string
}

// draw shows done of total units of what, begun at started, with the
// time left at the rate so far; final ends the line.
func (b *Bar) draw(what string, done, total int64, unit string, started time.Time, final bool) {
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	left := ""
	if el := time.Since(started); done > 0 && done < total && el > time.Second {
		rest := time.Duration(float64(el) * float64(total-done) / float64(done))
		left = ", " + rest.Round(time.Second).String() + " left"
	}
	if b.TTY {
		const width = 30
		n := min(int(pct/100*width), width)
		fmt.Fprintf(b.Out, "\r%s [%s%s] %5.1f%% %d/%d %s%s  ", what, strings.Repeat("#", n), strings.Repeat("-", width-n), pct, done, total, unit, left)
		if final {
			fmt.Fprintln(b.Out)
		}
		return
	}
	if !final && what == b.what && time.Since(b.last) < b.Every {
		return
	}
	b.what, b.last = what, time.Now()
	fmt.Fprintf(b.Out, "%s %s: %.1f%% (%d of %d %s%s)\n", time.Now().Format(time.RFC3339), what, pct, done, total, unit, left)
}
