package main

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The chart of the end-to-end step (bench/results/latest.png), drawn with
// the standard library's image packages and x/image's fixed 7×13 font (no
// plotting library): latency percentiles per offered rate, and throughput
// and RSS over time through the latency steps, the sink outage and the
// catch-up.

var (
	white  = color.RGBA{255, 255, 255, 255}
	black  = color.RGBA{0, 0, 0, 255}
	grey   = color.RGBA{110, 110, 110, 255}
	grid   = color.RGBA{228, 228, 228, 255}
	band   = color.RGBA{244, 244, 250, 255}
	down   = color.RGBA{255, 222, 222, 255}
	blue   = color.RGBA{31, 119, 180, 255}
	green  = color.RGBA{44, 160, 44, 255}
	orange = color.RGBA{255, 127, 14, 255}
	red    = color.RGBA{214, 39, 40, 255}
	purple = color.RGBA{148, 103, 189, 255}
)

type canvas struct{ *image.RGBA }

func (c canvas) fill(r image.Rectangle, col color.Color) {
	draw.Draw(c.RGBA, r, &image.Uniform{col}, image.Point{}, draw.Src)
}

// dot is a square of side w centred on (x, y).
func (c canvas) dot(x, y, w int, col color.Color) {
	c.fill(image.Rect(x-w/2, y-w/2, x-w/2+w, y-w/2+w), col)
}

// line draws from (x0, y0) to (x1, y1), w pixels wide; dash > 0 draws
// dash pixels on, dash off.
func (c canvas) line(x0, y0, x1, y1 float64, w, dash int, col color.Color) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0)))
	for i := 0; i <= n; i++ {
		if dash > 0 && (i/dash)%2 == 1 {
			continue
		}
		t := 0.0
		if n > 0 {
			t = float64(i) / float64(n)
		}
		c.dot(int(math.Round(x0+t*(x1-x0))), int(math.Round(y0+t*(y1-y0))), w, col)
	}
}

// text draws s with its top-left at (x, y), scaled by an integer factor.
func (c canvas) text(x, y int, s string, col color.Color, scale int) {
	face := basicfont.Face7x13
	w := font.MeasureString(face, s).Ceil()
	tmp := image.NewRGBA(image.Rect(0, 0, w, 13))
	d := &font.Drawer{Dst: tmp, Src: &image.Uniform{col}, Face: face, Dot: fixed.P(0, 11)}
	d.DrawString(s)
	for py := range 13 {
		for px := range w {
			if _, _, _, a := tmp.At(px, py).RGBA(); a > 0 {
				c.fill(image.Rect(x+px*scale, y+py*scale, x+(px+1)*scale, y+(py+1)*scale), col)
			}
		}
	}
}

func textWidth(s string, scale int) int {
	return font.MeasureString(basicfont.Face7x13, s).Ceil() * scale
}

// axis maps data values to pixels, linearly or on a log10 scale.
type axis struct {
	lo, hi   float64
	p0, p1   int // pixels of lo and hi
	log      bool
	ticks    []float64
	labelFor func(float64) string
}

func (a axis) px(v float64) float64 {
	f := func(x float64) float64 { return x }
	if a.log {
		f = math.Log10
		v = math.Max(v, a.lo)
	}
	return float64(a.p0) + (f(v)-f(a.lo))/(f(a.hi)-f(a.lo))*float64(a.p1-a.p0)
}

// niceTicks are round steps from 0 covering hi.
func niceTicks(hi float64, n int) (float64, []float64) {
	if hi <= 0 {
		hi = 1
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(hi/step) * step
	var t []float64
	for v := 0.0; v <= top+step/2; v += step {
		t = append(t, v)
	}
	return top, t
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
}

// frame draws the plot area's grid, ticks and labels for x and y.
func (c canvas) frame(r image.Rectangle, x, y axis, title, xlabel, ylabel string) {
	c.text(r.Min.X, r.Min.Y-44, title, black, 2)
	c.text(r.Min.X-60, r.Min.Y-17, ylabel, grey, 1)
	c.text(r.Max.X-textWidth(xlabel, 1), r.Max.Y+24, xlabel, grey, 1)
	for _, v := range y.ticks {
		py := int(y.px(v))
		c.line(float64(r.Min.X), float64(py), float64(r.Max.X), float64(py), 1, 0, grid)
		l := y.labelFor(v)
		c.text(r.Min.X-8-textWidth(l, 1), py-7, l, black, 1)
	}
	for _, v := range x.ticks {
		px := int(x.px(v))
		c.line(float64(px), float64(r.Min.Y), float64(px), float64(r.Max.Y), 1, 0, grid)
		c.line(float64(px), float64(r.Max.Y), float64(px), float64(r.Max.Y+5), 1, 0, black)
		l := x.labelFor(v)
		c.text(px-textWidth(l, 1)/2, r.Max.Y+8, l, black, 1)
	}
	c.line(float64(r.Min.X), float64(r.Max.Y), float64(r.Max.X), float64(r.Max.Y), 1, 0, black)
	c.line(float64(r.Min.X), float64(r.Min.Y), float64(r.Min.X), float64(r.Max.Y), 1, 0, black)
}

type legendItem struct {
	label string
	col   color.Color
	dash  int // 0 solid, > 0 dashed, < 0 a shaded box
}

// legend draws entries in a row from (x, y).
func (c canvas) legend(x, y int, items []legendItem) {
	for _, it := range items {
		if it.dash < 0 { // a shaded area
			c.fill(image.Rect(x, y, x+26, y+13), it.col)
		} else {
			c.line(float64(x), float64(y+6), float64(x+26), float64(y+6), 3, it.dash, it.col)
		}
		c.text(x+32, y, it.label, black, 1)
		x += 32 + textWidth(it.label, 1) + 22
	}
}

// writeChart draws latest.png from the end-to-end step's results.
func writeChart(path string, e *e2eResult) error {
	const W, H = 1400, 1100
	c := canvas{image.NewRGBA(image.Rect(0, 0, W, H))}
	c.fill(c.Bounds(), white)
	c.latencyPanel(image.Rect(110, 70, W-60, 430), e)
	c.throughputPanel(image.Rect(110, 600, W-110, H-90), e)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, c.RGBA); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// latencyPanel: commit → ack (dashed) and commit → visible (solid),
// p50/p95/p99/max against the offered rate, on a log scale.
func (c canvas) latencyPanel(r image.Rectangle, e *e2eResult) {
	if len(e.Latency) == 0 {
		c.text(r.Min.X, r.Min.Y, "no latency steps in this run", black, 2)
		return
	}
	maxRate, maxMS, minMS := 0.0, 1.0, math.Inf(1)
	for _, s := range e.Latency {
		maxRate = math.Max(maxRate, s.OfferedPerS)
		maxMS = math.Max(maxMS, math.Max(s.Maxms, s.Ack.Maxms))
		for _, v := range []float64{s.P50ms, s.Ack.P50ms} {
			if v > 0 {
				minMS = math.Min(minMS, v)
			}
		}
	}
	top, xt := niceTicks(maxRate*1.05, 8)
	x := axis{lo: 0, hi: top, p0: r.Min.X, p1: r.Max.X, ticks: xt, labelFor: human}
	ylo := math.Pow(10, math.Floor(math.Log10(math.Max(minMS, 0.1))))
	yhi := math.Pow(10, math.Ceil(math.Log10(maxMS)))
	var yt []float64
	for v := ylo; v <= yhi*1.001; v *= 10 {
		yt = append(yt, v)
	}
	y := axis{lo: ylo, hi: yhi, p0: r.Max.Y, p1: r.Min.Y, log: true, ticks: yt, labelFor: func(v float64) string { return human(v) }}
	// Minor ticks at 2 and 5 × each decade.
	for _, v := range yt[:len(yt)-1] {
		for _, m := range []float64{2, 5} {
			py := y.px(v * m)
			c.line(float64(r.Min.X), py, float64(r.Max.X), py, 1, 3, grid)
			l := human(v * m)
			c.text(r.Min.X-8-textWidth(l, 1), int(py)-7, l, grey, 1)
		}
	}
	c.frame(r, x, y, "Latency by offered rate (open-loop inserts; log scale)", "offered rows/s", "ms")
	cols := []color.Color{blue, green, orange, red}
	names := []string{"p50", "p95", "p99", "max"}
	series := func(get func(latencyStep) [4]float64, dash int) {
		for k := range 4 {
			var px, py float64
			for i, s := range e.Latency {
				v := get(s)[k]
				nx, ny := x.px(s.OfferedPerS), y.px(v)
				if i > 0 {
					c.line(px, py, nx, ny, 2, dash, cols[k])
				}
				c.dot(int(nx), int(ny), 7, cols[k])
				px, py = nx, ny
			}
		}
	}
	series(func(s latencyStep) [4]float64 { return [4]float64{s.Ack.P50ms, s.Ack.P95ms, s.Ack.P99ms, s.Ack.Maxms} }, 6)
	series(func(s latencyStep) [4]float64 { return [4]float64{s.P50ms, s.P95ms, s.P99ms, s.Maxms} }, 0)
	for _, s := range e.Latency {
		l := fmt.Sprintf("%.0f%%", s.Fraction*100)
		c.text(int(x.px(s.OfferedPerS))-textWidth(l, 1)/2, r.Min.Y+4, l, grey, 1)
	}
	var items []legendItem
	for k := range 4 {
		items = append(items, legendItem{"commit->visible " + names[k], cols[k], 0})
	}
	c.legend(r.Min.X, r.Max.Y+44, items)
	items = items[:0]
	for k := range 4 {
		items = append(items, legendItem{"commit->broker ack " + names[k], cols[k], 6})
	}
	c.legend(r.Min.X, r.Max.Y+64, items)
}

// throughputPanel: rows/s offered to the source, events/s published and
// rows/s applied over time, readside's RSS on the right axis, the phases
// shaded (the sink outage in red).
func (c canvas) throughputPanel(r image.Rectangle, e *e2eResult) {
	if len(e.Samples) < 2 {
		c.text(r.Min.X, r.Min.Y, "no samples in this run", black, 2)
		return
	}
	tEnd := e.Samples[len(e.Samples)-1].T
	type pt struct{ t, v float64 }
	// rate differentiates a cumulative series over windows of at least 1 s.
	rate := func(n int, t func(int) float64, v func(int) float64) []pt {
		var out []pt
		j := 0
		for i := 1; i < n; i++ {
			if t(i)-t(j) < 1 && i < n-1 {
				continue
			}
			if dt := t(i) - t(j); dt > 0 {
				out = append(out, pt{(t(i) + t(j)) / 2, (v(i) - v(j)) / dt})
			}
			j = i
		}
		return out
	}
	S, M := e.Samples, e.Metrics
	offered := rate(len(S), func(i int) float64 { return S[i].T }, func(i int) float64 { return float64(S[i].Source) })
	published := rate(len(M), func(i int) float64 { return M[i].T }, func(i int) float64 { return M[i].Published })
	applied := rate(len(M), func(i int) float64 { return M[i].T }, func(i int) float64 { return M[i].Applied })
	// The y axis covers the 98th percentile of the rates with room to
	// spare: the backlog drain runs several times faster than the live
	// load and would squash everything else; higher points are clipped.
	var all []float64
	peak := 0.0
	for _, s := range [][]pt{offered, published, applied} {
		for _, p := range s {
			all = append(all, p.v)
			peak = math.Max(peak, p.v)
		}
	}
	slices.Sort(all)
	maxV, maxRSS := 1.0, 1.0
	if len(all) > 0 {
		maxV = math.Max(1, math.Min(peak, 1.3*all[len(all)*98/100]))
	}
	for _, s := range S {
		maxRSS = math.Max(maxRSS, s.RSSMiB)
	}
	xTop, xt := niceTicks(tEnd, 12)
	x := axis{lo: 0, hi: xTop, p0: r.Min.X, p1: r.Max.X, ticks: xt, labelFor: human}
	yTop, yt := niceTicks(maxV*1.05, 6)
	y := axis{lo: 0, hi: yTop, p0: r.Max.Y, p1: r.Min.Y, ticks: yt, labelFor: human}
	rTop, rt := niceTicks(maxRSS*1.05, 6)
	ry := axis{lo: 0, hi: rTop, p0: r.Max.Y, p1: r.Min.Y, ticks: rt}
	// Phases first, under everything.
	for i, ph := range e.Phases {
		col := band
		if ph.Name == "sink down" {
			col = down
		} else if i%2 == 1 {
			col = white
		}
		c.fill(image.Rect(int(x.px(ph.T0)), r.Min.Y, int(x.px(ph.T1)), r.Max.Y), col)
	}
	// Labels after every band, on alternating rows so neighbours do not collide.
	for i, ph := range e.Phases {
		w := textWidth(ph.Name, 1)
		c.text(int(x.px((ph.T0+ph.T1)/2))-w/2, r.Min.Y+4+(i%2)*15, ph.Name, grey, 1)
	}
	c.frame(r, x, y, "Throughput over time: backlog drain, latency steps, sink outage, catch-up", "seconds since readside started", "rows/s")
	if peak > yTop {
		c.text(r.Min.X+8, r.Min.Y+36, fmt.Sprintf("clipped at the top; peak %s/s", human(math.Round(peak/100)*100)), grey, 1)
	}
	for _, v := range rt {
		l := human(v)
		c.text(r.Max.X+8, int(ry.px(v))-7, l, purple, 1)
	}
	c.text(r.Max.X+8, r.Min.Y-17, "RSS MiB", purple, 1)
	plot := func(s []pt, yy axis, col color.Color, w, dash int) {
		clip := func(v float64) float64 { return yy.px(math.Min(v, yy.hi)) }
		for i := 1; i < len(s); i++ {
			c.line(x.px(s[i-1].t), clip(s[i-1].v), x.px(s[i].t), clip(s[i].v), w, dash, col)
		}
	}
	var rss []pt
	for _, s := range S {
		rss = append(rss, pt{s.T, s.RSSMiB})
	}
	plot(rss, ry, purple, 1, 0)
	plot(offered, y, grey, 2, 0)
	plot(published, y, blue, 2, 0)
	plot(applied, y, green, 2, 4)
	c.legend(r.Min.X, r.Max.Y+44, []legendItem{
		{"offered: rows/s written to the source", grey, 0},
		{"published: events/s (tailer)", blue, 0},
		{"applied: rows/s (projector)", green, 4},
		{"readside RSS (right axis)", purple, 0},
		{"sink down", down, -1},
	})
}

// redrawChart draws latest.png again from a latest.json (-chart-from).
func redrawChart(jsonPath, dir string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	if res.EndToEnd == nil {
		return fmt.Errorf("%s has no end-to-end step to chart", jsonPath)
	}
	return writeChart(filepath.Join(dir, "latest.png"), res.EndToEnd)
}
