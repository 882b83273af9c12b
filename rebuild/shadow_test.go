package rebuild

import (
	"testing"

	"github.com/readside/readside/projections"
)

// TestShadowCopiesInBatch: a rebuild's shadow of a projection whose
// fan-out runs in the background copies its parents in its own batches,
// so nothing is left noted in a pending table when the swap comes (the
// swap moves the table, and the shadow's identity is forgotten).
func TestShadowCopiesInBatch(t *testing.T) {
	p := &projections.Projection{Name: "orders_with_region", Table: "orders_with_region", FanOut: projections.FanOutBackground,
		Joins: []*projections.Join{{N: 1, Topic: "rs.shop.customers"}}}
	s := (&Rebuild{p: p}).shadow("orders_with_region__shadow")
	if s.FanOut != projections.FanOutInBatch {
		t.Fatalf("the shadow's fan-out is %s, want in_batch", s.FanOut)
	}
	if p.FanOut != projections.FanOutBackground {
		t.Fatalf("shadow changed the live projection's fan-out to %s", p.FanOut)
	}
}
