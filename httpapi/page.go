package httpapi

// The status page at / is the /status report rendered for people: the
// same Report, so the page and the JSON never disagree on a state. It is
// server-rendered (html/template, embedded), refreshes itself with a meta
// tag and draws its charts as inline SVG from the lag history
// (history.go): no script, no build step.

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"time"
)

// PageRefresh is how often the page reloads itself.
const PageRefresh = 5 * time.Second

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"badge": badgeClass,
	"ago":   ago,
	"secs":  secs,
	"pct":   pct,
	"deref": func(p *int64) int64 { return *p },
}).Parse(pageHTML))

// pageView is what the template renders: the report, and what the page
// adds to it (the charts, the components in order).
type pageView struct {
	R Report
	// Starting: the pipeline is not wired yet (RouteHealth); only health
	// is known.
	Starting bool
	Refresh  int
	// Window is the time the charts' x axis spans.
	Window      string
	Components  []componentView
	SourceChart chart
	Projections []projectionView
	// DeadLetters sums the dead letters of the projections run here;
	// DeadLettersKnown is false when none runs here.
	DeadLetters      int64
	DeadLettersKnown bool
}

type componentView struct{ Name, State string }

type projectionView struct {
	ProjectionStatus
	Chart chart
	// Lag is the lag now in the chart's unit.
	Lag string
}

func newPageView(r Report, samples []lagSample) pageView {
	v := pageView{R: r, Refresh: int(PageRefresh / time.Second)}
	for name, st := range r.Components {
		v.Components = append(v.Components, componentView{name, st})
	}
	sort.Slice(v.Components, func(i, j int) bool { return v.Components[i].Name < v.Components[j].Name })
	window := HistoryEvery * HistoryLen
	v.Window = fmt.Sprintf("%.0f min", window.Minutes())
	v.SourceChart = sparkline(sourceSeries(samples), window, "s")
	for _, p := range r.Projections {
		pts, unit := projectionSeries(samples, p.Name)
		pv := projectionView{ProjectionStatus: p, Chart: sparkline(pts, window, unit)}
		switch {
		case p.LagSeconds != nil:
			pv.Lag = humanValue(*p.LagSeconds, "s")
		case p.Error == "":
			pv.Lag = humanValue(float64(p.ConsumerLag), "offsets")
		default:
			pv.Lag = "unknown"
		}
		if p.DeadLetters != nil {
			v.DeadLetters += p.DeadLetters.Total
			v.DeadLettersKnown = true
		}
		v.Projections = append(v.Projections, pv)
	}
	return v
}

// servePage renders the page from the cached report and the history, the
// report itself as the newest point.
func (c *Collector) servePage(w http.ResponseWriter, r *http.Request) {
	rep := c.Cached(r.Context(), reportMaxAge)
	samples := c.history.ordered()
	if n := len(samples); n == 0 || samples[n-1].At.Before(rep.Time) {
		samples = append(samples, sampleOf(rep))
	}
	writePage(w, newPageView(rep, samples))
}

// serveStartingPage renders the page while start-up waits for the
// servers: the components and what they wait for.
func serveStartingPage(w http.ResponseWriter, h *Health) {
	rep := Report{Time: time.Now().UTC(), From: "daemon", Components: h.Components()}
	var reasons []string
	rep.Healthy, reasons = h.Healthy()
	rep.NotReady = append([]string{"starting"}, reasons...)
	rep.Degraded = h.Degradations()
	v := newPageView(rep, nil)
	v.Starting = true
	writePage(w, v)
}

func writePage(w http.ResponseWriter, v pageView) {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, v); err != nil {
		http.Error(w, "rendering the status page: "+err.Error()+" (the JSON is at /status)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// badgeClass is the colour of a state: ok (green), warn (amber), bad
// (red: a person must act), idle (grey), info (blue). kind says whose
// state it is, as the same word means different things: a component
// "stopped" finished cleanly, a projection "stopped" on an error.
func badgeClass(kind, state string) string {
	classes := map[string]map[string]string{
		"component":  {StateRunning: "ok", StateWaiting: "warn", StateFailed: "bad", StateHalted: "bad", StateStopped: "idle"},
		"projection": {"consuming": "ok", "rebalancing": "warn", "no consumers": "warn", "dead-lettering": "warn", "failed": "bad", "stopped": "bad"},
		"tailer":     {"connected": "ok", "disconnected": "bad", "elsewhere": "idle"},
		"table":      {"done": "ok", "running": "info", "pending": "idle", "failed": "bad", "cancelled": "idle"},
	}
	if c, ok := classes[kind][state]; ok {
		return c
	}
	return "info"
}

// ago says how long before now t was ("12s ago").
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String() + " ago"
}

func secs(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1fs", *f)
}

// pct is done of total in percent, 0 to 100 (0 when total is unknown).
func pct(done, total int64) int64 {
	if total <= 0 {
		return 0
	}
	return min(100, max(0, done*100/total))
}
