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
	p := &progressLog{reg: reg, tailer: &cdc.Tailer{}, projections: []string{"a", "b"}}
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
			"[since 1m0s source_transactions 3 events 5 a=[rows=5 lag_seconds=0]]"},
		{"only a projection moved (a replay): the projection alone",
			func() { applied.WithLabelValues("b").Add(7) },
			"[since 1m0s b=[rows=7 lag_seconds=0]]"},
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
