package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/cdc"
)

// TestCommittedLine: the periodic summary reports what changed since the
// previous one, from the registry's counters, and is skipped when nothing
// did (an idle daemon logs nothing).
func TestCommittedLine(t *testing.T) {
	reg := prometheus.NewRegistry()
	txns := prometheus.NewCounter(prometheus.CounterOpts{Name: "readside_source_transactions_total"})
	events := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_source_events_total"}, []string{"table", "op"})
	applied := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_applied_rows_total"}, []string{"projection"})
	reg.MustRegister(txns, events, applied)
	p := &progressLog{reg: reg, tailer: &cdc.Tailer{}, projections: []string{"a", "b", "events"}}
	snap := func() progressTotals {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return p.totals(fams)
	}
	prev := snap()
	cases := []struct {
		why  string
		do   func()
		want string // fmt of the attributes, "" for no line
	}{
		{"nothing happened: no line", func() {}, ""},
		{"source and one projection moved: both reported, the idle projection not",
			func() {
				txns.Add(3)
				events.WithLabelValues("d.t", "c").Add(4)
				events.WithLabelValues("d.t", "u").Add(1)
				applied.WithLabelValues("a").Add(5)
			},
			"[since 1m0s source_transactions 3 events 5 projections=[a=[rows=5 lag_seconds=0]]]"},
		{"only a projection moved (a replay): the projection alone",
			func() { applied.WithLabelValues("b").Add(7) },
			"[since 1m0s projections=[b=[rows=7 lag_seconds=0]]]"},
		{"a projection named like the line's own keys stays under projections",
			func() {
				txns.Add(1)
				events.WithLabelValues("d.t", "c").Add(2)
				applied.WithLabelValues("events").Add(9)
			},
			"[since 1m0s source_transactions 1 events 2 projections=[events=[rows=9 lag_seconds=0]]]"},
	}
	for _, c := range cases {
		c.do()
		fams, _ := reg.Gather()
		now := snap()
		got := p.committed(prev, now, fams, time.Minute)
		if s := fmt.Sprint(got); (c.want == "" && got != nil) || (c.want != "" && s != c.want) {
			t.Errorf("%s: got %s, want %q", c.why, s, c.want)
		}
		prev = now
	}
}

// TestProjectionCaughtUp: a projection is caught up when its lag is small
// and what waits in its topics is no more than it applies in catchUpLag
// (at least catchUpRecords): a snapshot's backlog, whose rows carry the
// moment they were read, has a small lag long before it is applied.
func TestProjectionCaughtUp(t *testing.T) {
	var w appliedWindow
	start := time.Unix(1_000_000, 0)
	// 2,500 rows a second for 10 s.
	for s := 0; s <= 10; s++ {
		w.add(start.Add(time.Duration(s)*time.Second), map[string]float64{"p": float64(2500 * s)})
	}
	if got := w.drained("p"); got < 12_000 || got > 13_000 {
		t.Errorf("drained over the last 5 s = %g, want 12,500", got)
	}
	if got := len(w.samples); got > 7 {
		t.Errorf("the window keeps %d samples of 1 s apart, want the last ~5 s", got)
	}
	for _, c := range []struct {
		why                   string
		lag, backlog, drained float64
		want                  bool
	}{
		{"idle and current", 0, 0, 0, true},
		{"a snapshot's backlog: lag small, 290,000 records waiting", 3, 290_000, 12_500, false},
		{"its last records", 60, 9_000, 12_500, false},
		{"its last records, lag back under 5 s", 2, 9_000, 12_500, true},
		{"a fast live stream: more than catchUpRecords waiting, drained in well under 5 s", 1, 30_000, 200_000, true},
		{"a slow projection behind a fast stream", 1, 30_000, 20_000, false},
		{"lag over the bound", 7, 0, 0, false},
	} {
		if got := projectionCaughtUp(c.lag, c.backlog, c.drained); got != c.want {
			t.Errorf("%s: caught up %v, want %v", c.why, got, c.want)
		}
	}
}
