package main

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Every partition lands whole in one group, in its order, and the groups
// are balanced by records (largest partitions first).
func TestDealByPartition(t *testing.T) {
	var recs []*kgo.Record
	sizes := map[string][]int{"child": {50, 30, 20}, "parent": {25, 5}}
	for topic, parts := range sizes {
		for part, n := range parts {
			for off := range n {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(part), Offset: int64(off)})
			}
		}
	}
	groups := dealByPartition(recs, 2)
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2", len(groups))
	}
	where := map[[2]any]int{}
	total := 0
	for g, rs := range groups {
		last := map[[2]any]int64{}
		for _, r := range rs {
			k := [2]any{r.Topic, r.Partition}
			if h, ok := where[k]; ok && h != g {
				t.Fatalf("%s/%d is in groups %d and %d", r.Topic, r.Partition, h, g)
			}
			where[k] = g
			if o, ok := last[k]; ok && r.Offset != o+1 {
				t.Fatalf("%s/%d out of order: %d after %d", r.Topic, r.Partition, r.Offset, o)
			}
			last[k] = r.Offset
		}
		total += len(rs)
	}
	if total != len(recs) {
		t.Fatalf("dealt %d records of %d", total, len(recs))
	}
	// 50 | 30+25 → then 20 to 50, 5 to 55: 70 and 60.
	if a, b := len(groups[0]), len(groups[1]); max(a, b) != 70 || min(a, b) != 60 {
		t.Fatalf("groups of %d and %d records, want 70 and 60", a, b)
	}
	if got := dealByPartition(recs, 8); len(got) != 5 {
		t.Fatalf("8 connections over 5 partitions: %d groups, want 5", len(got))
	}
}
