package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/reshard"
)

func ptr[T any](v T) *T { return &v }

// TestSparkline: the chart's points for the series the page draws.
func TestSparkline(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	window := 100 * time.Second
	cases := []struct {
		why        string
		pts        []point
		points     string
		last       [2]string
		max, span  string
		noSamples  bool
		unitOffset bool
	}{
		{why: "no samples: nothing to draw", noSamples: true},
		{why: "one sample: a dot at the right edge", pts: []point{{at(0), 2}}, points: "180.0,2.0", last: [2]string{"180.0", "2.0"}, max: "2.0s", span: "0s"},
		{why: "all zero: a flat line at the bottom, not a divide by zero", pts: []point{{at(0), 0}, {at(50), 0}, {at(100), 0}},
			points: "0.0,34.0 90.0,34.0 180.0,34.0", last: [2]string{"180.0", "34.0"}, max: "0.0s", span: "1m40s"},
		{why: "scaled to the largest value: half of it is half way up", pts: []point{{at(50), 4}, {at(100), 2}},
			points: "90.0,2.0 180.0,18.0", last: [2]string{"180.0", "18.0"}, max: "4.0s", span: "50s"},
		{why: "older than the window: pinned to the left edge, not drawn outside", pts: []point{{at(0), 1}, {at(200), 1}},
			points: "0.0,2.0 180.0,2.0", last: [2]string{"180.0", "2.0"}, max: "1.0s", span: "3m20s"},
		{why: "offsets are counted, not seconds", pts: []point{{at(0), 1204}}, points: "180.0,2.0", last: [2]string{"180.0", "2.0"}, max: "1204 offsets", span: "0s", unitOffset: true},
		{why: "under a second: low on the scale of at least 1s, not at the top", pts: []point{{at(0), 0.5}}, points: "180.0,18.0", last: [2]string{"180.0", "18.0"}, max: "0.5s", span: "0s"},
		{why: "a few offsets: low on the scale of at least 100", pts: []point{{at(0), 50}}, points: "180.0,18.0", last: [2]string{"180.0", "18.0"}, max: "50 offsets", span: "0s", unitOffset: true},
	}
	for _, c := range cases {
		unit := "s"
		if c.unitOffset {
			unit = "offsets"
		}
		got := sparkline(c.pts, window, unit)
		if c.noSamples {
			if got.Samples != 0 || got.Points != "" {
				t.Errorf("%s: %+v, want no samples", c.why, got)
			}
			continue
		}
		if got.Points != c.points || got.LastX != c.last[0] || got.LastY != c.last[1] || got.Max != c.max || got.Span != c.span {
			t.Errorf("%s:\n got points %q last %s,%s max %q span %q\nwant points %q last %s,%s max %q span %q",
				c.why, got.Points, got.LastX, got.LastY, got.Max, got.Span, c.points, c.last[0], c.last[1], c.max, c.span)
		}
	}
}

// TestLagHistory: the ring keeps the newest samples, oldest first.
func TestLagHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		why  string
		add  []int // seconds after t0, in the order added
		want []int
	}{
		{"empty: no samples", nil, nil},
		{"not full: all, in order", []int{0, 1}, []int{0, 1}},
		{"full: all, in order", []int{0, 1, 2}, []int{0, 1, 2}},
		{"wrapped: the oldest overwritten, still oldest first", []int{0, 1, 2, 3, 4}, []int{2, 3, 4}},
		{"the same report again (from the cache): kept once", []int{0, 1, 1, 2, 2}, []int{0, 1, 2}},
		{"wrapped, then the same report again: kept once", []int{0, 1, 2, 3, 3}, []int{1, 2, 3}},
	}
	for _, c := range cases {
		h := newLagHistory(3)
		for _, s := range c.add {
			h.add(lagSample{At: t0.Add(time.Duration(s) * time.Second)})
		}
		var got []int
		for _, s := range h.ordered() {
			got = append(got, int(s.At.Sub(t0)/time.Second))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}

// renderPage renders the page of r with samples, as a string.
func renderPage(t *testing.T, r Report, samples []lagSample) string {
	t.Helper()
	rec := httptest.NewRecorder()
	writePage(rec, newPageView(r, samples))
	if rec.Code != http.StatusOK {
		t.Fatalf("rendering: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// healthyReport is a daemon's report with one projection consuming.
func healthyReport() Report {
	now := time.Now().UTC()
	return Report{Time: now, From: "daemon", Healthy: true, Ready: true,
		Components: map[string]string{"tailer": StateRunning, "projector orders": StateRunning},
		Source:     SourceStatus{Tailer: "connected", LagSeconds: ptr(0.4), LastHeardSeconds: ptr(0.2)},
		Projections: []ProjectionStatus{{Name: "orders", Topic: "t.orders", State: "consuming", Members: 1, ConsumerLag: 3, LagSeconds: ptr(1.5),
			DeadLetters: &projector.DeadLetterStatus{Total: 7, LastMinute: 2}}},
	}
}

// TestPageShows: what the page shows for each kind of report. The page
// renders the report's own states; these cases check each part of the
// report reaches the page, and that red (class "badge bad") appears only
// where a person must act.
func TestPageShows(t *testing.T) {
	type tweak func(r *Report)
	stopped := func(r *Report) {
		r.Components["projector orders"] = StateHalted
		r.Projections[0].State, r.Projections[0].StopReason, r.Projections[0].Fix = "stopped", "column <extra> is gone", "remove it & SIGHUP"
		r.Degraded = []Degradation{{Projection: "orders", State: "stopped", Reason: "column <extra> is gone", Fix: "remove it & SIGHUP", Since: time.Now()}}
	}
	cases := []struct {
		why    string
		tweak  tweak
		want   []string
		reject []string
	}{
		{"healthy: the states, lags, dead letters, a chart; nothing red, no stopped section", nil,
			[]string{`<span class="badge ok">healthy</span>`, `<span class="badge ok">consuming</span>`, `<td>projector orders</td>`, "1.5s", "dead letters: 7", "(2 in the last minute)", "<polyline points=", `http-equiv="refresh" content="5"`},
			[]string{"badge bad", `id="stopped"`, "DEGRADED", `id="rebuilds"`}},
		{"a stopped projection: its section with name, reason and fix (escaped), red badges", stopped,
			[]string{`<section id="stopped">`, `<span class="proj-name">orders</span> <span class="badge bad">stopped</span>`, "column &lt;extra&gt; is gone", "remove it &amp; SIGHUP", "DEGRADED: 1 projection(s)", `<span class="badge bad">stopped on error</span>`},
			nil},
		{"dead-lettering every row: amber, not red", func(r *Report) {
			r.Projections[0].State = "dead-lettering"
			r.Degraded = []Degradation{{Projection: "orders", State: "dead-lettering", Reason: "all rows", Fix: "look at the dead-letter topic"}}
		}, []string{`<span class="badge warn">dead-lettering</span>`, "look at the dead-letter topic"}, []string{`<span class="badge bad">dead-lettering`}},
		{"a failed component: unhealthy, red", func(r *Report) {
			r.Healthy, r.Ready = false, false
			r.Components["tailer"] = StateFailed
			r.NotReady = []string{"tailer failed: binlog gone"}
		}, []string{`<span class="badge bad">UNHEALTHY</span>`, `<span class="badge bad">failed</span>`, "tailer failed: binlog gone"}, nil},
		{"the initial snapshot: per table progress against the estimate", func(r *Report) {
			r.Source.InitialSnapshot = &cdc.InitialSnapshot{State: "running", First: true, TableCount: 2, TablesDone: 1, Rows: 150,
				Tables: []cdc.TableSnapshot{{Table: "db.a", State: "done", Rows: 100, RowsEstimate: ptr[int64](100)}, {Table: "db.b", State: "running", Rows: 50, RowsEstimate: ptr[int64](200)}}}
		}, []string{`id="snapshot"`, "1 of 2 table(s), 150 rows", "width: 25%", "width: 100%"}, nil},
		{"an empty table's snapshot done: 100%, not 0% of an estimate of 0", func(r *Report) {
			r.Source.InitialSnapshot = &cdc.InitialSnapshot{State: "done", First: true, TableCount: 1, TablesDone: 1,
				Tables: []cdc.TableSnapshot{{Table: "db.empty", State: "done", RowsEstimate: ptr[int64](0)}}}
		}, []string{"width: 100%", "</span> 100%"}, []string{"</span> 0%"}},
		{"a failed snapshot request: its error and fix", func(r *Report) {
			r.Source.SnapshotFailures = []cdc.SnapshotFailure{{Request: 4, Table: "db.a", Error: "no such column", Fix: "correct the where", FailedAt: time.Now()}}
		}, []string{"request 4: db.a", "no such column", "correct the where"}, nil},
		{"a reshard: phase and fill progress", func(r *Report) {
			r.Reshards = []reshard.Status{{Projection: "orders", FromSink: "reads", ToSink: "reads2", ToRanges: "-80,80-", Phase: "fill", RowsCopied: 30, RowsTotal: 120, FillRate: 900, UpdatedAt: time.Now()}}
		}, []string{`id="reshards"`, "30 of 120", "width: 25%", "900 rows/s", `<span class="badge info">fill</span>`}, nil},
		{"a rebuild and a backfill run by readside replay in another process: kind, phase, offsets and percent, an error under its row", func(r *Report) {
			r.Rebuilds = []RebuildStatus{
				{Projection: "orders", Kind: "rebuild", Phase: "catching-up", Applied: 300, End: 400, Percent: 75, StartedAt: time.Now()},
				{Projection: "users", Kind: "backfill", Phase: "filling", Applied: 10, End: 80, Percent: 12.5, Error: "sink reads: <gone>"}}
		}, []string{`id="rebuilds"`, "<td>rebuild</td>", `<span class="badge info">catching-up</span>`, "300 of 400", "width: 75.0%", "<td>backfill</td>", "width: 12.5%", "sink reads: &lt;gone&gt;"}, nil},
		{"rebuilds not readable: the error, in the rebuilds section", func(r *Report) {
			r.RebuildsError = "projection orders: sink reads: access denied"
		}, []string{`id="rebuilds"`, "access denied"}, []string{"<td>rebuild</td>"}},
		{"a consistent sink: each shard's frontier", func(r *Report) {
			r.Sinks = []SinkStatus{{Name: "cons", Consistency: "transaction", Frontiers: []FrontierStatus{
				{Shard: "cons/-80", CheckpointOffset: 12, GTID: "0-1-42", Transactions: 42, Commits: 9, AppliedAt: ptr(time.Now())},
				{Shard: "cons/80-", CheckpointOffset: -1}}}}
		}, []string{`id="frontiers"`, "<code>0-1-42</code>", "cons/80-", "nothing committed yet"}, nil},
	}
	for _, c := range cases {
		r := healthyReport()
		if c.tweak != nil {
			c.tweak(&r)
		}
		samples := []lagSample{sampleOf(r)}
		samples[0].At = r.Time.Add(-time.Minute)
		page := renderPage(t, r, append(samples, sampleOf(r)))
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the page lacks %q", c.why, w)
			}
		}
		for _, w := range c.reject {
			if strings.Contains(page, w) {
				t.Errorf("%s: the page has %q", c.why, w)
			}
		}
	}
}

// TestPageRoute: / is the page and only /: other paths stay 404, and the
// page answers during start-up too.
func TestPageRoute(t *testing.T) {
	h := NewHealth()
	h.Waiting("source", "waiting for source: connection refused")
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.RouteHealth(h)
	get := func(path string) (int, string, string) {
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
	}
	cases := []struct {
		why      string
		path     string
		code     int
		ctype    string
		contains string
	}{
		{"the page during start-up: what it waits for", "/", 200, "text/html; charset=utf-8", "waiting for source: connection refused"},
		{"an unknown path is not the page", "/nope", 404, "", ""},
		{"/healthz is still JSON", "/healthz", 503, "application/json", `"healthy": false`},
	}
	for _, c := range cases {
		code, ctype, body := get(c.path)
		if code != c.code || (c.ctype != "" && ctype != c.ctype) || !strings.Contains(body, c.contains) {
			t.Errorf("%s: GET %s: %d %s, want %d %s containing %q:\n%s", c.why, c.path, code, ctype, c.code, c.ctype, c.contains, body)
		}
	}
	// Once routed: / alone is the page, the rest 404 (no report needed).
	col, err := NewCollector(Options{Brokers: []string{"127.0.0.1:1"}}, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	s.Route(prometheus.NewRegistry(), col, h)
	if code, _, _ := get("/favicon.ico"); code != http.StatusNotFound {
		t.Errorf("GET /favicon.ico once routed: %d, want 404 (/ must not answer every path)", code)
	}
}

// TestRecordHistory: the sampler adds a sample per new report (the
// report is cached for reportMaxAge, so ticks faster than that add it
// once) and returns nil once its context ends.
func TestRecordHistory(t *testing.T) {
	col, err := NewCollector(Options{Brokers: []string{"127.0.0.1:1"}}, nil, NewHealth())
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- col.RecordHistory(ctx, 20*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(col.history.ordered()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RecordHistory after its context ended: %v, want nil", err)
	}
	samples := col.history.ordered()
	if len(samples) < 2 {
		t.Fatalf("%d samples after ten seconds at one per 20ms, want at least 2", len(samples))
	}
	for i := 1; i < len(samples); i++ {
		if !samples[i].At.After(samples[i-1].At) {
			t.Errorf("sample %d at %s is not after the one before (%s): a cached report must not be added twice", i, samples[i].At, samples[i-1].At)
		}
	}
}
