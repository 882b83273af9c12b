package projector

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// TestCutAdmission: across three cuts, a commit takes exactly the records
// below its cut, each partition's in order; what a fetch brought past the
// cut waits for the next commit (and everything after it in its partition
// too, even below a later cut); a commit marker only moves the position.
func TestCutAdmission(t *testing.T) {
	a := &Applier{o: ApplierOptions{TailerID: "t"}}
	s := newApplySession(a, []projections.Frontier{{Checkpoint: -1}})
	k := topicPart{"p.shop.orders", 0}
	s.parts = []topicPart{k}
	rec := func(off int64) *kgo.Record { return &kgo.Record{Topic: k.topic, Partition: k.part, Offset: off} }
	marker := func(off int64) *kgo.Record {
		r := rec(off)
		r.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Control: true, Transactional: true})
		return r
	}
	cut := func(off int64) func(topicPart) int64 {
		c := event.Offsets{}
		c.Set(k.topic, k.part, off)
		return func(k topicPart) int64 { return c[k.topic][k.part] }
	}
	var taken []int64
	take := func(r *kgo.Record) error { taken = append(taken, r.Offset); return nil }
	fetch := func(below func(topicPart) int64, rs ...*kgo.Record) {
		for _, r := range rs {
			if s.admit(r, below) == admitTake {
				take(r)
			}
		}
	}

	// Cut 1 at 5: records 0–4 and the marker at 5; 6 and 7 came with the
	// same fetch.
	c1 := cut(5)
	fetch(c1, rec(0), rec(1), rec(2), rec(3), rec(4), marker(5), rec(6), rec(7))
	if !s.reached(c1) {
		t.Fatal("cut 1: not reached after reading past it")
	}
	if want := []int64{0, 1, 2, 3, 4}; !slices.Equal(taken, want) {
		t.Fatalf("cut 1 took %v, want %v", taken, want)
	}
	// Cut 2 at 7: the held 6 goes first; 7 stays held, and so does 8,
	// fetched now, though a later cut will cover it.
	taken = nil
	c2 := cut(7)
	still, _ := s.release(c2, take)
	if len(still) != 1 || still[0] != k {
		t.Fatalf("cut 2: partitions still holding records %v, want [%v]", still, k)
	}
	fetch(c2, rec(8))
	if want := []int64{6}; !slices.Equal(taken, want) {
		t.Fatalf("cut 2 took %v, want %v", taken, want)
	}
	// Cut 3 at 10: 7 and 8 from the session, then 9, in order.
	taken = nil
	c3 := cut(10)
	if still, _ := s.release(c3, take); len(still) != 0 {
		t.Fatalf("cut 3: partitions still holding records %v", still)
	}
	if s.reached(c3) {
		t.Fatal("cut 3 reached before record 9 was read")
	}
	fetch(c3, rec(9))
	if want := []int64{7, 8, 9}; !slices.Equal(taken, want) || !s.reached(c3) {
		t.Fatalf("cut 3 took %v (reached %v), want %v", taken, s.reached(c3), want)
	}
}
