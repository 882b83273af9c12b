package projector

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pollQueue holds polled records per partition and deals them into jobs
// that take from every partition at once.
//
// Why: a Kafka fetch returns up to fetch.max.partition.bytes of each
// partition, one partition after another, and a poll of N records takes
// them in that order — on a backlog of narrow rows, a poll of 10,000 can
// be 8,551 records of one partition and 1,449 of the next. Concurrent
// apply deals whole partitions to transactions (splitByPartition), so
// such a poll would run as one big transaction next to a tiny one, at the
// speed of one connection. Taking the whole fetch and cutting it into
// jobs with an even share of every partition keeps each job's
// transactions the same size. Every partition's records still go out in
// order, and jobs commit one after another.
type pollQueue struct {
	parts []*queuedPartition // in the order first seen
	n     int
}

type queuedPartition struct {
	topic string
	part  int32
	recs  []*kgo.Record
	// hw is the partition's high watermark at the fetch its last record
	// came from: how far behind the projection is once they are applied.
	hw int64
	// through is the offset after the last record fetched, control
	// records included: a Kafka transaction ends with a commit marker
	// (the high watermark is one past it), which the consumer reads but
	// the projection has nothing to apply of. Caught up means through
	// reached hw, not the last data record.
	through int64
	// report: a fetch of control records only moved through; the lag it
	// shows is reported with the next job even with no record to apply.
	report bool
}

func (q *pollQueue) len() int { return q.n }

// add queues a poll's records.
func (q *pollQueue) add(fetches kgo.Fetches) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		i := slices.IndexFunc(q.parts, func(p *queuedPartition) bool { return p.part == fp.Partition && p.topic == fp.Topic })
		if i < 0 {
			q.parts = append(q.parts, &queuedPartition{topic: fp.Topic, part: fp.Partition})
			i = len(q.parts) - 1
		}
		p := q.parts[i]
		n := len(p.recs)
		for _, r := range fp.Records {
			if !r.Attrs.IsControl() { // the consumer keeps them (see through)
				p.recs = append(p.recs, r)
			}
		}
		p.hw = fp.HighWatermark
		p.through = fp.Records[len(fp.Records)-1].Offset + 1
		p.report = true
		q.n += len(p.recs) - n
	})
}

// take removes about n records for one job: the queue is cut into equal
// jobs of at most n records, so a fetch a little over n is not followed
// by a tiny job. Each partition gives an even share (partitions with
// fewer records give all they have, and the rest is shared out among the
// others). Records come out partition by partition, each in order; before
// is each taken partition's lag at its first record (behind by these too),
// after its lag once they are applied.
//
// A partition whose fetches held only control records gives no record but
// its after, so the lag it shows (usually 0: the commit marker was all
// that was left) is reported in order with the jobs before it.
func (q *pollQueue) take(n int) (recs []*kgo.Record, before, after []partitionLag) {
	if len(q.parts) == 0 {
		return nil, nil, nil
	}
	jobs := max(1, (q.n+n-1)/n)
	want := (q.n + jobs - 1) / jobs
	// Water-filling: smallest partitions first, each takes min(what it
	// has, an even share of what is still wanted).
	order := slices.Clone(q.parts)
	slices.SortStableFunc(order, func(a, b *queuedPartition) int { return len(a.recs) - len(b.recs) })
	quota := make(map[*queuedPartition]int, len(order))
	left := want
	for i, p := range order {
		share := (left + len(order) - i - 1) / (len(order) - i)
		k := min(len(p.recs), share)
		quota[p] = k
		left -= k
	}
	recs = make([]*kgo.Record, 0, want)
	kept := q.parts[:0]
	for _, p := range q.parts {
		k := quota[p]
		if k > 0 {
			taken := p.recs[:k]
			recs = append(recs, taken...)
			next := taken[k-1].Offset + 1
			if k == len(p.recs) {
				next = max(next, p.through)
			}
			before = append(before, partitionLag{p.topic, p.part, p.hw - taken[0].Offset, taken[0].Offset})
			after = append(after, partitionLag{p.topic, p.part, p.hw - next, next})
			// Drop the references as they go so applied records (and
			// their fetch buffers) can be collected.
			clear(p.recs[:k])
			p.recs = p.recs[k:]
			q.n -= k
			p.report = false
		} else if len(p.recs) == 0 && p.report {
			after = append(after, partitionLag{p.topic, p.part, p.hw - p.through, p.through})
			p.report = false
		}
		if len(p.recs) > 0 {
			kept = append(kept, p)
		}
	}
	clear(q.parts[len(kept):])
	q.parts = kept
	return recs, before, after
}

// keep drops the queued records of every partition owns reports false.
func (q *pollQueue) keep(owns func(topic string, part int32) bool) {
	q.parts = slices.DeleteFunc(q.parts, func(p *queuedPartition) bool {
		if owns(p.topic, p.part) {
			return false
		}
		q.n -= len(p.recs)
		return true
	})
}
