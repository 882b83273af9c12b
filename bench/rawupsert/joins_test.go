package main

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDealPartitions: B2 with join statements deals records to its
// connections as the projector deals a poll, so that it measures the
// projector's own transactions: no partition split between connections
// (a row's changes stay in one transaction, in order), the poll's order
// kept, and the same balance (largest partition first to the lightest).
func TestDealPartitions(t *testing.T) {
	var recs []*kgo.Record
	// Partitions of 50, 30, 20, 10, 5 records on one topic and 7 on
	// another, interleaved as a poll returns them.
	sizes := []struct {
		topic string
		n     []int
	}{{"a", []int{50, 30, 20, 10, 5}}, {"b", []int{7}}}
	for i := range 50 {
		for _, s := range sizes {
			for p, n := range s.n {
				if i < n {
					recs = append(recs, &kgo.Record{Topic: s.topic, Partition: int32(p), Offset: int64(i)})
				}
			}
		}
	}
	for _, c := range []struct {
		n    int
		want []int
		why  string
	}{
		{0, []int{122}, "no connection count: one connection"},
		{1, []int{122}, "one connection takes the poll as it is"},
		{2, []int{60, 62}, "50→0, 30→1, 20→1, 10→0, 7→1, 5→1"},
		{20, []int{50, 30, 20, 10, 7, 5}, "more connections than partitions: one partition each"},
	} {
		conns := dealPartitions(recs, c.n)
		var got []int
		owner, pos := map[string]int{}, map[*kgo.Record]int{}
		for i, r := range recs {
			pos[r] = i
		}
		for ci, rs := range conns {
			got = append(got, len(rs))
			for i, r := range rs {
				k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
				if o, ok := owner[k]; ok && o != ci {
					t.Errorf("n=%d: partition %s on connections %d and %d", c.n, k, o, ci)
				}
				owner[k] = ci
				if i > 0 && pos[r] < pos[rs[i-1]] {
					t.Errorf("n=%d: connection %d's records out of the poll's order", c.n, ci)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: n=%d dealt %v records per connection, want %v", c.why, c.n, got, c.want)
		}
	}
}
