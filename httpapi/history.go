package httpapi

// The lag over the last minutes on the status page: a ring of samples of
// the /status report (one per HistoryEvery, HistoryLen of them), kept in
// the process, drawn server-side as inline SVG. The samples are the
// report's own fields, so the chart and the numbers beside it agree.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HistoryEvery and HistoryLen: the page's charts span the last ten
// minutes, one sample per five seconds.
const (
	HistoryEvery = 5 * time.Second
	HistoryLen   = 120
)

// lagSample is what the charts need of one report.
type lagSample struct {
	At time.Time
	// Source: the tailer's lag in seconds; nil where it is not known.
	Source *float64
	// Projections: each projection's lag by name.
	Projections map[string]projectionLag
}

// projectionLag is one projection's lag in a sample: seconds where its
// projector runs here, offsets always (unless the report had an error).
type projectionLag struct {
	Seconds *float64
	Offsets *int64
}

func sampleOf(r Report) lagSample {
	s := lagSample{At: r.Time, Source: r.Source.LagSeconds, Projections: make(map[string]projectionLag, len(r.Projections))}
	for _, p := range r.Projections {
		var l projectionLag
		l.Seconds = p.LagSeconds
		if p.Error == "" {
			off := p.ConsumerLag
			l.Offsets = &off
		}
		s.Projections[p.Name] = l
	}
	return s
}

// lagHistory is a bounded ring of samples, oldest overwritten first.
type lagHistory struct {
	mu      sync.Mutex
	samples []lagSample
	next    int // where the next sample goes once full
}

func newLagHistory(n int) *lagHistory { return &lagHistory{samples: make([]lagSample, 0, n)} }

// add appends s unless it is the newest sample's report again (Cached
// answered from its cache).
func (h *lagHistory) add(s lagSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.samples); n > 0 && !s.At.After(h.samples[(h.next+n-1)%n].At) {
		return
	}
	if len(h.samples) < cap(h.samples) {
		h.samples = append(h.samples, s)
		return
	}
	h.samples[h.next] = s
	h.next = (h.next + 1) % len(h.samples)
}

// ordered returns the samples oldest first.
func (h *lagHistory) ordered() []lagSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]lagSample, 0, len(h.samples))
	out = append(out, h.samples[h.next:]...)
	return append(out, h.samples[:h.next]...)
}

// RecordHistory samples the report every interval until ctx ends, for
// the charts of the status page. It returns nil: the page going without
// history is no reason to stop the process.
func (c *Collector) RecordHistory(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, every)
		rep := c.Cached(rctx, reportMaxAge)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		c.history.add(sampleOf(rep))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// point is one value of a series at a time.
type point struct {
	at time.Time
	v  float64
}

// chart is a sparkline ready for the template: an SVG polyline over the
// window ending at the newest point.
type chart struct {
	W, H   int
	Points string // "x,y x,y …" for <polyline points>
	// LastX, LastY mark the newest value (a single sample has no line).
	LastX, LastY string
	Max          string // the top of the scale, with its unit
	Samples      int
	Span         string // the time the points cover
}

const chartW, chartH = 180, 36

// sparkline scales pts (oldest first) into a chart: x by time over the
// window ending at the last point, y from 0 to the largest value (at
// least 1 s or 100 offsets): a line at the bottom means no lag.
func sparkline(pts []point, window time.Duration, unit string) chart {
	c := chart{W: chartW, H: chartH, Samples: len(pts)}
	if len(pts) == 0 {
		return c
	}
	end := pts[len(pts)-1].at
	top := 0.0
	for _, p := range pts {
		top = max(top, p.v)
	}
	// The scale has a floor, so that a second of lag or a handful of
	// offsets (normal while writes flow) stays near the bottom rather
	// than filling the chart.
	scale := max(top, 1)
	if unit != "s" {
		scale = max(top, 100)
	}
	const pad = 2.0
	var b strings.Builder
	var x, y float64
	for i, p := range pts {
		x = float64(chartW) - float64(end.Sub(p.at))/float64(window)*float64(chartW)
		x = min(max(x, 0), float64(chartW))
		y = pad + (1-p.v/scale)*(float64(chartH)-2*pad)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(x) + "," + num(y))
	}
	c.Points, c.LastX, c.LastY = b.String(), num(x), num(y)
	c.Max = humanValue(top, unit)
	c.Span = end.Sub(pts[0].at).Round(time.Second).String()
	return c
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// humanValue prints a lag with its unit ("3.2s", "1204 offsets").
func humanValue(v float64, unit string) string {
	if unit == "s" {
		return fmt.Sprintf("%.1fs", v)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// sourceSeries and projectionSeries pick a series out of the samples.
func sourceSeries(samples []lagSample) []point {
	var out []point
	for _, s := range samples {
		if s.Source != nil {
			out = append(out, point{s.At, *s.Source})
		}
	}
	return out
}

// projectionSeries is the projection's lag in seconds where its projector
// runs here, else in offsets; unit says which.
func projectionSeries(samples []lagSample, name string) (pts []point, unit string) {
	var secs, offs []point
	for _, s := range samples {
		l, ok := s.Projections[name]
		if !ok {
			continue
		}
		if l.Seconds != nil {
			secs = append(secs, point{s.At, *l.Seconds})
		}
		if l.Offsets != nil {
			offs = append(offs, point{s.At, float64(*l.Offsets)})
		}
	}
	if len(secs) > 0 {
		return secs, "s"
	}
	return offs, "offsets"
}
