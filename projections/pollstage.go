package projections

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// caughtUpBelow is the queue length under which the projector counts as
// caught up (see consume): a backlog's polls queue thousands of records.
const caughtUpBelow = pollRecords / 2

// queueFetches queues a poll's records; fetch errors other than the poll's
// own deadline are logged (franz-go retries them).
func (pr *Projector) queueFetches(q *pollQueue, fetches kgo.Fetches) {
	for _, fe := range fetches.Errors() {
		if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
			continue
		}
		pr.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
	}
	q.add(fetches)
}

// job is a polled and mapped batch waiting to be applied: one Batch per
// set of partitions, applied concurrently (apply_concurrency).
type job struct {
	parts []*Batch
	bad   []Rejected
	start time.Time
	// lagAfter is each polled partition's consumer lag once the job
	// commits. The job keeps no polled record: see prepare.
	lagAfter []partitionLag
	// waiting: the job is counted in the projection lag until it commits.
	waiting bool
}

type partitionLag struct {
	topic string
	part  int32
	lag   int64
	// next is the consumer's position there: the offset after what the
	// job holds of the partition, commit markers included.
	next int64
}

// prepare maps a job's records to batches (nil when there are none).
// before and after are the lag of each of its partitions at its first
// record and once it is applied.
func (pr *Projector) prepare(records []*kgo.Record, before, after []partitionLag) *job {
	if len(records) == 0 {
		if len(after) == 0 {
			return nil
		}
		// Only commit markers were read: nothing to apply, but the lag
		// they leave is reported in turn.
		return &job{start: time.Now(), lagAfter: after}
	}
	j := &job{start: time.Now(), lagAfter: after}
	// Until this batch commits, its records are pending too.
	for _, l := range before {
		pr.o.Metrics.consumerLag(pr.p, l.topic, l.part, l.lag)
	}
	stale := new(atomic.Int64)
	var oldest int64
	groups := pr.p.ApplyConcurrency
	if len(records) < splitFrom {
		groups = 1
	}
	for _, recs := range splitByPartition(records, groups) {
		b, bad := pr.p.Build(recs)
		b.Stale = stale
		if pr.dlq == nil {
			// Only dead-lettering needs a write's record. Dropped, the
			// polled records are garbage once the batch is built, not
			// held while it is applied and the next poll is built (drain
			// peak RSS 236 → 203 MiB on wide rows, when values were
			// copies; their text now points into the fetch buffers, see
			// Value).
			for i := range b.Writes {
				b.Writes[i].From = nil
			}
			for i := range b.Parents {
				b.Parents[i].From = nil
			}
		}
		j.parts = append(j.parts, b)
		j.bad = append(j.bad, bad...)
		oldest = oldestTS(oldest, b.OldestTS)
	}
	j.waiting = pr.o.Metrics.waiting(pr.p, oldest, j.start)
	return j
}

// pollRecords is how many records one poll takes per apply transaction:
// large enough that a backlog drains in multi-thousand-row statements
// (the raw upsert rate levels off between 1,000 and 5,000 rows), small
// enough that a batch's memory stays a few MiB on wide rows.
const pollRecords = 5000

// queuedJobs is how many jobs' worth of records one poll may take: enough
// of a fetch to give every job an even share of every partition
// (pollQueue), bounded so a fetch of many partitions is not all decoded
// into memory at once.
const queuedJobs = 2
