package main

import (
	"math"
	"strings"
	"testing"
)

// TestCompareModes: each transactional variant is set against its own
// base of the same run, and only when that base ran.
func TestCompareModes(t *testing.T) {
	withLatency := func(live, p99, rss float64) *workloadLatency {
		return &workloadLatency{Live: liveCapacity{PerS: live}, Steps: []latencyStep{{OfferedPerS: 500, P99ms: p99}}, PeakRSS: rss}
	}
	row := workloadResult{Workload: workload{Name: "lines"}, Projector: rate{PerS: 1000, PeakRSSMiB: 50}, Tailer: rate{PerS: 4000}, Latency: withLatency(1000, 100, 60)}
	txn := workloadResult{Workload: workload{Name: "lines_txn", Base: "lines", Consistency: "transaction"}, Projector: rate{PerS: 800, PeakRSSMiB: 70}, Tailer: rate{PerS: 2000}, Latency: withLatency(900, 150, 80)}
	other := workloadResult{Workload: workload{Name: "stats"}, Projector: rate{PerS: 9999}}
	noLatency := txn
	noLatency.Latency = nil
	joinTxn := workloadResult{Workload: workload{Name: "region_txn", Base: "region", Consistency: "transaction", InBatch: true}, Projector: rate{PerS: 600}, Tailer: rate{PerS: 1}}
	joinRow := workloadResult{Workload: workload{Name: "region"}, Projector: rate{PerS: 1000}, Tailer: rate{PerS: 1}}
	joinTwin := workloadResult{Workload: workload{Name: "region_inbatch", Base: "region", InBatch: true}, Projector: rate{PerS: 500}, Tailer: rate{PerS: 1}}
	for _, c := range []struct {
		why  string
		ws   []workloadResult
		want []modeComparison
	}{
		{"a variant against its base, whatever the order and whoever else ran", []workloadResult{txn, other, row},
			[]modeComparison{{Workload: "lines_txn", Base: "lines", RowDrain: 1000, TxnDrain: 800, DrainRatio: 0.8, RowTailer: 4000, TxnTailer: 2000, TailerRatio: 0.5,
				RowLive: 1000, TxnLive: 900, Offered: 500, RowP99: 100, TxnP99: 150, P99Ratio: 1.5, RowDrainRSS: 50, TxnDrainRSS: 70, RowLiveRSS: 60, TxnLiveRSS: 80}}},
		{"no base in the run: nothing to set it against", []workloadResult{txn, other}, nil},
		{"row workloads alone are not compared", []workloadResult{row, other}, nil},
		{"a join in_batch against its in_batch twin when that ran, not the background base", []workloadResult{joinRow, joinTwin, joinTxn},
			[]modeComparison{{Workload: "region_txn", Base: "region_inbatch", RowDrain: 500, TxnDrain: 600, DrainRatio: 1.2, RowTailer: 1, TxnTailer: 1, TailerRatio: 1}}},
		{"without the twin, against the base", []workloadResult{joinRow, joinTxn},
			[]modeComparison{{Workload: "region_txn", Base: "region", RowDrain: 1000, TxnDrain: 600, DrainRatio: 0.6, RowTailer: 1, TxnTailer: 1, TailerRatio: 1}}},
		{"no latency step (-skip-e2e): the drains only", []workloadResult{row, noLatency},
			[]modeComparison{{Workload: "lines_txn", Base: "lines", RowDrain: 1000, TxnDrain: 800, DrainRatio: 0.8, RowTailer: 4000, TxnTailer: 2000, TailerRatio: 0.5, RowDrainRSS: 50, TxnDrainRSS: 70}}},
	} {
		got := compareModes(c.ws)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d comparisons %+v, want %d", c.why, len(got), got, len(c.want))
			continue
		}
		for i := range got {
			g, w := got[i], c.want[i]
			if math.Abs(g.DrainRatio-w.DrainRatio) > 1e-9 || math.Abs(g.P99Ratio-w.P99Ratio) > 1e-9 {
				t.Errorf("%s: ratios %v / %v, want %v / %v", c.why, g.DrainRatio, g.P99Ratio, w.DrainRatio, w.P99Ratio)
			}
			g.DrainRatio, g.P99Ratio, w.DrainRatio, w.P99Ratio = 0, 0, 0, 0
			if g != w {
				t.Errorf("%s:\n got %+v\nwant %+v", c.why, g, w)
			}
		}
	}
}

// TestVariantsWriteTheirBaseStream: a variant's generators are seeded
// from its base's name, so both modes apply the very same changes; and
// each variant of the default list has its base there, so a full run
// compares them.
func TestVariantsWriteTheirBaseStream(t *testing.T) {
	names := map[string]workload{}
	for _, w := range workloads(false) {
		names[w.Name] = w
	}
	variants := 0
	for _, w := range workloads(false) {
		if w.Base == "" {
			if w.stream().Name != w.Name {
				t.Errorf("%s: a workload without base writes %s's stream", w.Name, w.stream().Name)
			}
			continue
		}
		variants++
		base, ok := names[w.Base]
		if !ok {
			t.Errorf("%s: its base %s is not a workload", w.Name, w.Base)
			continue
		}
		s := w.stream()
		if s.Name != base.Name || s.Kind != base.Kind || s.Events != base.Events || s.Preload != base.Preload || s.Updates != base.Updates || s.Zipf != base.Zipf {
			t.Errorf("%s: stream %+v differs from its base's %+v", w.Name, s, base)
		}
		if w.transactional() && !strings.HasSuffix(w.Name, "_txn") {
			t.Errorf("%s: a transactional variant is named …_txn", w.Name)
		}
	}
	if variants < 3 {
		t.Errorf("%d variants; the join, the aggregate and the children each need a transactional one", variants)
	}
}

// TestVisibleQuery: in transaction mode a row is visible at the first
// logged commit at or after its upsert, in row mode at its upsert.
func TestVisibleQuery(t *testing.T) {
	row, txn := visibleQuery("r_t", false), visibleQuery("r_t", true)
	if !strings.HasPrefix(row, "SELECT "+visibleUS+" - _bench_stamped_us FROM `r_t`") {
		t.Errorf("row mode: %s", row)
	}
	if !strings.Contains(txn, "MIN(f.at_us) FROM `_bench_frontier_log` f WHERE f.at_us >= "+visibleUS) || !strings.Contains(txn, "FROM `r_t` WHERE _bench_stamped_us BETWEEN ? AND ?") {
		t.Errorf("transaction mode: %s", txn)
	}
}
