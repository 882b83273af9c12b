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

// progressLine is the last progress line printed, and the first report
// (the rate is measured from it).
type progressLine struct {
	at        time.Time
	done      int64
	start     time.Time
	startDone int64
}

// stillEvery is how often an unchanged progress line is printed again, so
// a wait that does not move still shows the command is alive.
const stillEvery = time.Minute

// report draws a progress bar on a terminal, else a line every Every
// when the progress moved (or stillEvery when it did not); final: the
// last report, always printed. The rate is over the time since the first
// report of last.
func (pg Progress) report(what string, done, total int64, last *progressLine, final bool) {
	now := time.Now()
	if last.start.IsZero() {
		last.start, last.startDone = now, done
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	rate := ""
	if el := now.Sub(last.start); el >= time.Second {
		rate = fmt.Sprintf(", %.0f offsets/s", float64(done-last.startDone)/el.Seconds())
	}
	if pg.TTY {
		const width = 30
		n := int(pct / 100 * width)
		fmt.Fprintf(pg.Out, "\r%s [%s%s] %5.1f%% %d/%d offsets%s  ", what, strings.Repeat("#", n), strings.Repeat("-", width-n), pct, done, total, rate)
		if final {
			fmt.Fprintln(pg.Out)
		}
		return
	}
	if !final && !last.at.IsZero() {
		since := now.Sub(last.at)
		if since < pg.Every || (done == last.done && since < stillEvery) {
			return
		}
	}
	fmt.Fprintf(pg.Out, "%s %s: %.1f%% (%d of %d offsets)%s\n", now.Format(time.RFC3339), what, pct, done, total, rate)
	last.at, last.done = now, done
}
