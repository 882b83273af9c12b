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
