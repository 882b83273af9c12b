package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// The shipped alert rules, run by promtool on series built from
// TestLagBothWays's scrapes: each phase's scrapes resampled every
// promStep, then continued the way they were going (the slope between the
// phase's first and last scrape) for as long as the rules' `for:` needs.
// An idle system's series stay flat at what it exported; a frozen
// source's grow as it measured.

const promStep = 15 * time.Second

// promSeries is one metric's samples, every promStep from the phase start.
type promSeries struct {
	name   string
	labels string
	values []float64
}

// resample maps a phase's scrapes to n samples every promStep: linear
// between scrapes, the phase's own slope past the last one.
func resample(scrapes []lagScrape, value func(lagScrape) float64, n int) []float64 {
	t0 := scrapes[0].at
	first, last := scrapes[0], scrapes[len(scrapes)-1]
	slope := 0.0
	if span := last.at.Sub(first.at).Seconds(); span > 0 {
		slope = (value(last) - value(first)) / span
	}
	out := make([]float64, n)
	for k := range out {
		at := t0.Add(time.Duration(k) * promStep)
		switch {
		case !at.Before(last.at):
			out[k] = value(last) + slope*at.Sub(last.at).Seconds()
		default:
			i := 1
			for scrapes[i].at.Before(at) {
				i++
			}
			a, b := scrapes[i-1], scrapes[i]
			f := at.Sub(a.at).Seconds() / b.at.Sub(a.at).Seconds()
			out[k] = value(a) + f*(value(b)-value(a))
		}
	}
	return out
}

func (r *lagRig) phase(names ...string) []lagScrape {
	var out []lagScrape
	for _, s := range r.scrapes {
		for _, n := range names {
			if s.phase == n {
				out = append(out, s)
			}
		}
	}
	return out
}

// lagSeries are the metrics the lag and stall rules read, for one phase.
func lagSeries(scrapes []lagScrape, n int) []promSeries {
	job := `job="readside",instance="lag-test"`
	proj := job + `,projection="` + lagProjection + `"`
	return []promSeries{
		{"readside_source_lag_seconds", job, resample(scrapes, func(s lagScrape) float64 { return s.source }, n)},
		{"readside_projection_lag_seconds", proj, resample(scrapes, func(s lagScrape) float64 { return s.projection }, n)},
		{"readside_projection_consumer_lag", proj + `,topic="t",partition="0"`, resample(scrapes, func(s lagScrape) float64 { return s.consumerLag }, n)},
		{"readside_projection_applied_rows_total", proj, resample(scrapes, func(s lagScrape) float64 { return s.applied }, n)},
		{"readside_projection_stale_skipped_total", proj, resample(scrapes, func(s lagScrape) float64 { return s.stale }, n)},
	}
}

// firstAbove is the sample index where values first exceed limit (-1: never).
func firstAbove(values []float64, limit float64) int {
	for i, v := range values {
		if v > limit {
			return i
		}
	}
	return -1
}

// promCase is one promtool test: series, and the alerts firing at times.
type promCase struct {
	comment string
	series  []promSeries
	checks  []promCheck
}

type promCheck struct {
	at     time.Duration
	firing []string // ALERTS labels, rendered
}

func (c promCase) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  # %s\n  - interval: %s\n    input_series:\n", c.comment, promStep)
	for _, s := range c.series {
		vals := make([]string, len(s.values))
		for i, v := range s.values {
			vals[i] = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(&b, "      - series: '%s{%s}'\n        values: '%s'\n", s.name, s.labels, strings.Join(vals, " "))
	}
	b.WriteString("    promql_expr_test:\n")
	for _, ch := range c.checks {
		fmt.Fprintf(&b, "      - expr: 'ALERTS{alertstate=\"firing\"}'\n        eval_time: %s\n", ch.at)
		if len(ch.firing) == 0 {
			b.WriteString("        exp_samples: []\n")
			continue
		}
		b.WriteString("        exp_samples:\n")
		for _, l := range ch.firing {
			fmt.Fprintf(&b, "          - labels: 'ALERTS{alertstate=\"firing\",%s}'\n            value: 1\n", l)
		}
	}
	return b.String()
}

// promtool runs deploy/prometheus/alerts.yaml on the scrapes: idle, no
// alert; the source frozen, the source and projection lag alerts fire
// once their `for:` (5m) has passed above 60 s, not before.
func (r *lagRig) promtool(t *testing.T) {
	promtool, err := testbed.Promtool(t.Context())
	if err != nil {
		t.Logf("alert rules not run on the scrapes: %v", err)
		return
	}
	rules, err := filepath.Abs("../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	idle := r.phase("idle")
	const idleSamples = 30 * int(time.Minute/promStep)
	cases := []promCase{{
		comment: fmt.Sprintf("idle and caught up: %d scrapes over %s, continued for 30m", len(idle), idle[len(idle)-1].at.Sub(idle[0].at).Round(time.Second)),
		series:  lagSeries(idle, idleSamples),
		checks:  []promCheck{{at: 10 * time.Minute}, {at: 20 * time.Minute}, {at: 30*time.Minute - promStep}},
	}}

	paused := r.phase("source-paused")
	src := resample(paused, func(s lagScrape) float64 { return s.source }, 200)
	proj := resample(paused, func(s lagScrape) float64 { return s.projection }, 200)
	ks, kp := firstAbove(src, 60), firstAbove(proj, 60)
	if ks < 0 || kp < 0 {
		t.Fatalf("the frozen source's lags do not pass 60s within 50m (%d scrapes): source %v…, projection %v…", len(paused), src[:8], proj[:8])
	}
	forDur := 5 * time.Minute
	step := func(k int) time.Duration { return time.Duration(k) * promStep }
	n := max(ks, kp) + int((forDur+2*time.Minute)/promStep)
	// An alert fires at the first evaluation its condition has held for
	// `for:`; each is checked a step before and a step after that.
	alerts := []struct {
		labels string
		k      int
	}{
		{`alertname="ReadsideSourceLagHigh",severity="warning",job="readside",instance="lag-test"`, ks},
		{`alertname="ReadsideProjectionLagHigh",severity="warning",job="readside",projection="` + lagProjection + `"`, kp},
	}
	var checks []promCheck
	for _, a := range alerts {
		for _, at := range []time.Duration{step(a.k) + forDur - promStep, step(a.k) + forDur + promStep} {
			c := promCheck{at: at}
			for _, b := range alerts {
				if step(b.k)+forDur <= at {
					c.firing = append(c.firing, b.labels)
				}
			}
			checks = append(checks, c)
		}
	}
	cases = append(cases, promCase{
		comment: fmt.Sprintf("source frozen: %d scrapes over %s, continued at their slope", len(paused), paused[len(paused)-1].at.Sub(paused[0].at).Round(time.Second)),
		series:  lagSeries(paused, n),
		checks:  checks,
	})

	var b strings.Builder
	fmt.Fprintf(&b, "rule_files:\n  - %s\nevaluation_interval: %s\ntests:\n", rules, promStep)
	for _, c := range cases {
		b.WriteString(c.yaml())
	}
	path := filepath.Join(t.TempDir(), "lag_alerts_test.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules on the scrapes: %v\n%s\n--- %s:\n%s", err, out, path, b.String())
		return
	}
	for _, c := range cases {
		t.Logf("alert rules pass on %s", c.comment)
	}
}
