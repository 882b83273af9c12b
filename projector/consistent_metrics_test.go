package projector

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/readside/readside/projections"
)

// TestCommitPhasesObserved: a commit is timed in each of its phases and
// its cut's age is observed, except for a cut written without a time;
// a tailer clock ahead of the applier's gives an age of 0, not a
// negative one.
func TestCommitPhasesObserved(t *testing.T) {
	now := time.Now()
	if got := cutAge(now.Add(-250*time.Millisecond), now); got != 250*time.Millisecond {
		t.Errorf("cutAge of a cut written 250 ms ago = %v", got)
	}
	if got := cutAge(now.Add(time.Second), now); got != 0 {
		t.Errorf("cutAge of a cut from a clock 1 s ahead = %v, want 0", got)
	}
	if got := cutAge(time.Time{}, now); got >= 0 {
		t.Errorf("cutAge of a cut without a time = %v, want < 0 (not observed)", got)
	}

	reg := prometheus.NewRegistry()
	m := NewConsistentMetrics(reg)
	prev := projections.Frontier{Checkpoint: 4, Transactions: 10}
	f := projections.Frontier{Checkpoint: 9, Transactions: 12}
	m.committed("reads", f, prev, 5, 300*time.Millisecond, commitPhases{previous: 20 * time.Millisecond, apply: 120 * time.Millisecond, finish: 180 * time.Millisecond, cutAge: 30 * time.Millisecond})
	m.committed("reads", f, prev, 5, 300*time.Millisecond, commitPhases{previous: 0, apply: 100 * time.Millisecond, finish: 200 * time.Millisecond, cutAge: -1})
	if n := testutil.CollectAndCount(m.phases, "readside_sink_commit_phase_seconds"); n != 3 {
		t.Errorf("%d phase series, want previous, apply and finish", n)
	}
	for phase, want := range map[string]float64{"previous": 0.020, "apply": 0.220, "finish": 0.380} {
		h := m.phases.WithLabelValues("reads", phase).(prometheus.Histogram)
		if got := histogramSum(t, h); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("phase %s summed %v s, want %v", phase, got, want)
		}
	}
	if got := histogramCount(t, m.cutAge.WithLabelValues("reads").(prometheus.Histogram)); got != 1 {
		t.Errorf("cut ages observed %d, want 1 (the cut without a time is not)", got)
	}
}

func histogramSum(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	return histogramOf(t, h).GetSampleSum()
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	return histogramOf(t, h).GetSampleCount()
}

func histogramOf(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
