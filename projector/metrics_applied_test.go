package projector

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/readside/readside/projections"
)

// TestAppliedCountsContributionsAndChildren: the applied-rows counter
// and the all-dead-lettered gauge see an aggregate projection's
// contributions and a children entry's child states as applied rows.
func TestAppliedCountsContributionsAndChildren(t *testing.T) {
	for _, c := range []struct {
		why  string
		b    *projections.Batch
		want float64
	}{
		{"read rows count, as before", &projections.Batch{Writes: make([]projections.Write, 3)}, 3},
		{"an aggregate projection's batch holds contributions only: they are its progress", &projections.Batch{Contributions: make([]projections.Contribution, 4)}, 4},
		{"child states count beside the parent's own rows", &projections.Batch{Writes: make([]projections.Write, 1), ChildWrites: make([]projections.ChildWrite, 2)}, 3},
	} {
		t.Run(c.why, func(t *testing.T) {
			m := NewMetrics(nil)
			p := &projections.Projection{Name: "p"}
			for range 100 {
				m.deadLettered(p, 1)
			}
			c.b.Stale = new(atomic.Int64)
			m.applied(p, c.b, 0)
			if got := testutil.ToFloat64(m.appliedRows.WithLabelValues("p")); got != c.want {
				t.Errorf("applied rows %v, want %v", got, c.want)
			}
			if got := testutil.ToFloat64(m.allDeadG.WithLabelValues("p")); got != 0 {
				t.Errorf("all dead-lettered %v after rows were applied, want 0", got)
			}
		})
	}
}
