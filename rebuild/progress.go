package rebuild

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress is where and how a fill reports how far it is.
type Progress struct {
	Out   io.Writer     // the operator's terminal or log (stderr)
	Every time.Duration // period of the progress lines when Out is not a terminal
	TTY   bool          // Out is a terminal: one bar redrawn in place
}

// progressLine is the last progress line printed.
type progressLine struct {
	at   time.Time
	done int64
}

// stillEvery is how often an unchanged progress line is printed again, so
// a wait that does not move still shows the command is alive.
const stillEvery = time.Minute

// report draws a progress bar on a terminal, else a line every Every
// when the progress moved (or stillEvery when it did not); last nil: the
// final report.
func (pg Progress) report(what string, done, total int64, last *progressLine) {
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	if pg.TTY {
		const width = 30
		n := int(pct / 100 * width)
		fmt.Fprintf(pg.Out, "\r%s [%s%s] %5.1f%% %d/%d offsets", what, strings.Repeat("#", n), strings.Repeat("-", width-n), pct, done, total)
		if last == nil {
			fmt.Fprintln(pg.Out)
		}
		return
	}
	if last != nil && !last.at.IsZero() {
		since := time.Since(last.at)
		if since < pg.Every || (done == last.done && since < stillEvery) {
			return
		}
	}
	fmt.Fprintf(pg.Out, "%s %s: %.1f%% (%d of %d offsets)\n", time.Now().Format(time.RFC3339), what, pct, done, total)
	if last != nil {
		*last = progressLine{at: time.Now(), done: done}
	}
}
