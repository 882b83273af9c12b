package projector

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/projections"
)

// splitFrom is the smallest poll dealt into concurrent transactions. A
// caught-up projector polls a few hundred records at a time: one
// transaction applies them with half the statements and commits of two,
// which on a busy sink server is what its latency is made of, while a
// backlog's polls of thousands still use every connection.
const splitFrom = 1000

// splitByPartition deals records into at most n groups of whole partitions,
// balanced by record count, each partition's records in their order.
// Groups can be applied concurrently in separate sink transactions: a
// row's changes all travel in one partition (the record key is its
// primary key), so no two groups write the same read row, parent state
// row, offset or watermark — the same reason several processes can share
// a projection's partitions.
func splitByPartition(records []*kgo.Record, n int) [][]*kgo.Record {
	type tp struct {
		topic string
		part  int32
	}
	counts := map[tp]int{}
	var order []tp
	for _, r := range records {
		k := tp{r.Topic, r.Partition}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	n = min(n, len(order))
	if n <= 1 {
		return [][]*kgo.Record{records}
	}
	// Largest partitions first, each to the lightest group so far.
	slices.SortStableFunc(order, func(a, b tp) int { return counts[b] - counts[a] })
	group := make(map[tp]int, len(order))
	load := make([]int, n)
	for _, k := range order {
		g := slices.Index(load, slices.Min(load))
		group[k] = g
		load[g] += counts[k]
	}
	out := make([][]*kgo.Record, n)
	for i := range out {
		out[i] = make([]*kgo.Record, 0, load[i])
	}
	for _, r := range records {
		g := group[tp{r.Topic, r.Partition}]
		out[g] = append(out[g], r)
	}
	return out
}

// Records are recs as the projection layer reads them (projections.Build).
func Records(recs []*kgo.Record) []projections.Record {
	out := make([]projections.Record, len(recs))
	for i, r := range recs {
		out[i] = projections.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, KeyMoved: keyMoved(r)}
	}
	return out
}

// keyMoved reports whether r is the create of a Debezium primary key
// change, which names the old key in a header.
func keyMoved(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == "__debezium.oldkey" {
			return true
		}
	}
	return false
}
