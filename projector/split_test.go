package projector

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSplitByPartition: concurrent apply transactions must never share a
// partition (two transactions writing one row, offset or watermark could
// commit out of order), must keep each partition's order, and should be
// balanced by records.
func TestSplitByPartition(t *testing.T) {
	var recs []*kgo.Record
	// Partition sizes 50, 30, 20, 10, 5 on one topic, 7 on another,
	// interleaved the way a poll returns them.
	sizes := map[string][]int{"a": {50, 30, 20, 10, 5}, "b": {7}}
	for i := 0; i < 50; i++ {
		for topic, parts := range sizes {
			for p, n := range parts {
				if i < n {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Offset: int64(i)})
				}
			}
		}
	}
	for _, n := range []int{0, 1, 2, 3, 6, 20} {
		groups := splitByPartition(recs, n)
		want := min(max(n, 1), 6)
		if len(groups) != want {
			t.Fatalf("n=%d: %d groups, want %d", n, len(groups), want)
		}
		owner := map[string]int{}
		next := map[string]int64{}
		total := 0
		for g, rs := range groups {
			if len(rs) == 0 {
				t.Fatalf("n=%d: group %d is empty", n, g)
			}
			for _, r := range rs {
				k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
				if o, ok := owner[k]; ok && o != g {
					t.Fatalf("n=%d: partition %s in groups %d and %d", n, k, o, g)
				}
				owner[k] = g
				if r.Offset != next[k] {
					t.Fatalf("n=%d: partition %s offset %d out of order (want %d)", n, k, r.Offset, next[k])
				}
				next[k]++
				total++
			}
		}
		if total != len(recs) {
			t.Fatalf("n=%d: %d records in groups, %d polled", n, total, len(recs))
		}
		if n == 2 {
			// Largest first to the lighter group: 50→g0, 30→g1, 20→g1
			// (50), 10→g0 (60), 7→g1 (57), 5→g1 (62).
			if a, b := len(groups[0]), len(groups[1]); a != 60 || b != 62 {
				t.Fatalf("n=2: groups of %d and %d records, want 60 and 62", a, b)
			}
		}
	}
}

// TestCutInOrder: a lane's pieces are applied one after another, each
// with its partitions' offsets, so every piece must hold, per partition,
// the records right after the previous piece's (no record lost, none
// twice, none out of order), and the pieces should be about equal.
func TestCutInOrder(t *testing.T) {
	// Two partitions interleaved as a poll returns them, 7 and 4 records.
	var recs []*kgo.Record
	for i := range 7 {
		recs = append(recs, &kgo.Record{Partition: 0, Offset: int64(i)})
		if i < 4 {
			recs = append(recs, &kgo.Record{Partition: 1, Offset: int64(i)})
		}
	}
	cases := []struct {
		why   string
		recs  []*kgo.Record
		n     int
		sizes []int
	}{
		{"one piece is the lane as it is", recs, 1, []int{11}},
		{"0 is taken as one piece", recs, 0, []int{11}},
		{"two pieces split the records evenly", recs, 2, []int{5, 6}},
		{"three pieces differ by at most one record", recs, 3, []int{3, 4, 4}},
		{"no more pieces than records: no empty transaction", recs[:2], 5, []int{1, 1}},
		{"no records, no piece with records", nil, 2, []int{}},
	}
	for _, c := range cases {
		pieces := cutInOrder(c.recs, c.n)
		var sizes []int
		next := map[int32]int64{}
		for _, p := range pieces {
			if len(p) == 0 {
				continue
			}
			sizes = append(sizes, len(p))
			for _, r := range p {
				if r.Offset != next[r.Partition] {
					t.Fatalf("%s: partition %d offset %d out of order (want %d)", c.why, r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
			}
		}
		if fmt.Sprint(sizes) != fmt.Sprint(c.sizes) && !(len(sizes) == 0 && len(c.sizes) == 0) {
			t.Errorf("%s: pieces of %v records, want %v", c.why, sizes, c.sizes)
		}
		if total := int(next[0] + next[1]); total != len(c.recs) {
			t.Errorf("%s: %d records in pieces, %d in the lane", c.why, total, len(c.recs))
		}
	}
}
