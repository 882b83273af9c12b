package projector

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/projections"
)

// caughtUpBelow is the queue length under which the projector counts as
// caught up (see pollStage.nextJob): a backlog's polls queue thousands of
// records.
const caughtUpBelow = pollRecords / 2

// pollStage polls the group member and maps its records into jobs for the
// apply stage, one job ahead of it. It owns what a membership does
// between jobs: collecting tombstones on their interval, looking for
// replay requests, and letting a rebalance run.
type pollStage struct {
	pr     *Projector
	cl     *kgo.Client
	owned  *owned
	apply  *applyStage
	queue  pollQueue
	perJob int
	// lastGC and lastCheck are when tombstones were last collected and
	// replay requests last looked for.
	lastGC, lastCheck time.Time
}

func newPollStage(pr *Projector, cl *kgo.Client, owned *owned, apply *applyStage) *pollStage {
	return &pollStage{pr: pr, cl: cl, owned: owned, apply: apply,
		perJob: pollRecords * max(1, pr.p.ApplyConcurrency), lastGC: time.Now()}
}

// run hands jobs to the apply stage until ctx is cancelled (a stop, or
// the apply stage failing), a replay request names a partition held here
// (errRejoin), or looking for one fails.
func (s *pollStage) run(ctx context.Context) error {
	defer s.apply.stop()
	for {
		if time.Since(s.lastGC) > s.pr.o.GCInterval {
			s.lastGC = time.Now()
			s.pr.collectTombstones(ctx)
		}
		j, err := s.nextJob(ctx)
		if err != nil {
			return err
		}
		if err := s.apply.wait(); err != nil {
			return err
		}
		if err := s.checkReplays(ctx); err != nil {
			return err
		}
		// A rebalance may happen now, with j already polled: applying it
		// anyway is harmless — its rows are version-guarded and its
		// offsets only ever move forward, past rows it committed with them.
		s.cl.AllowRebalance()
		if j == nil {
			continue
		}
		if err := s.apply.submit(ctx, j); err != nil {
			return err
		}
	}
}

// nextJob polls when nothing is queued and maps the next job (nil when
// the poll brought no record and no lag to report). It is mapped while
// the job before it is still applied, so the sink is kept busy.
func (s *pollStage) nextJob(ctx context.Context) (*job, error) {
	// Partitions given up in a rebalance are not applied from the queue
	// any further (harmless if they were: see run).
	s.queue.keep(s.owned.has)
	if s.queue.len() == 0 {
		// Bounded polls: an idle projector still looks for replay
		// requests between them.
		pctx, cancel := context.WithTimeout(ctx, replayCheckEvery)
		fetches := s.cl.PollRecords(pctx, s.perJob*queuedJobs)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := s.pr.queueFetches(ctx, s.cl, &s.queue, fetches); err != nil {
			return nil, err
		}
	}
	if s.apply.busy && s.queue.len() < caughtUpBelow {
		// Caught up: a few records are queued while the previous job is
		// still applied. Cut now, this job would hold only what the last
		// fetch had, and the records arriving during the apply would
		// wait in franz-go's buffer and at the broker for the job after
		// it: about three applies from arrival to commit instead of one
		// and a half. So wait for the apply, then take what came
		// meanwhile: the fetches franz-go holds, without waiting for one
		// more (at 38,500 rows/s such a wait made the batches fewer but
		// longer: commit → visible p50 85–123 ms against 60–64,
		// bench/results/history/tuning-log.md, entry 33). A backlog keeps mapping the
		// next job while the previous one is applied.
		if err := s.apply.wait(); err != nil {
			return nil, err
		}
		//lint:ignore SA1012 franz-go polls without blocking when the context is nil: only what is already buffered.
		if err := s.pr.queueFetches(ctx, s.cl, &s.queue, s.cl.PollRecords(nil, s.perJob*queuedJobs-s.queue.len())); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	recs, before, after := s.queue.take(s.perJob)
	if err := s.pr.loadSchemas(ctx, recs); err != nil {
		return nil, err
	}
	return s.pr.prepare(ctx, recs, before, after)
}

// checkReplays looks for replay requests on its interval, with no job in
// flight: a polled job not yet applied is simply consumed again after the
// rejoin (its offsets were never committed). errRejoin: one names a
// partition held here.
func (s *pollStage) checkReplays(ctx context.Context) error {
	if time.Since(s.lastCheck) < replayCheckEvery {
		return nil
	}
	s.lastCheck = time.Now()
	rejoin, err := s.pr.replayPending(ctx, s.owned)
	if err != nil {
		return err
	}
	if rejoin {
		return errRejoin
	}
	return nil
}

// queueFetches queues a poll's records; fetch errors other than the poll's
// own deadline are logged (franz-go retries them), except an offset out
// of range, which outOfRange decides: read again from an offset the
// partition holds, or stop the projection when records it needs are gone.
func (pr *Projector) queueFetches(ctx context.Context, cl *kgo.Client, q *pollQueue, fetches kgo.Fetches) error {
	for _, fe := range fetches.Errors() {
		if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
			continue
		}
		if !errors.Is(fe.Err, kerr.OffsetOutOfRange) {
			pr.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
			continue
		}
		next := int64(-1)
		if stored, err := pr.sink.Offsets(ctx, pr.p); err == nil {
			if n, ok := stored[fe.Topic][fe.Partition]; ok {
				next = n
			}
		}
		resetTo, lost, _ := outOfRange(ctx, cl, fe, next)
		if lost == nil {
			pr.log.Warn("the partition ends before the position read (the topic was created again, or the broker lost its last records): reading it again from an offset it holds",
				"topic", fe.Topic, "partition", fe.Partition, "offset", resetTo)
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{fe.Topic: {fe.Partition: {Epoch: -1, Offset: resetTo}}})
			continue
		}
		return &projections.StopError{Projection: pr.p.Name, Reason: lost,
			Fix: fmt.Sprintf("readside replay --projection %[1]s --from earliest (it goes on from what Kafka holds; the request waits while the projection is stopped), send SIGHUP or restart readside, "+
				"then readside verify --projection %[1]s --repair (the rows the lost records changed, compared with the source and repaired); "+
				"keep the topics' retention above the longest time a projection may stay behind (docs/operations.md, \"Records gone from Kafka\")", pr.p.Name)}
	}
	q.add(fetches)
	return nil
}

// job is a polled and mapped batch waiting to be applied: one Batch per
// set of partitions, applied concurrently (apply_concurrency).
type job struct {
	parts []*projections.Batch
	bad   []projections.Rejected
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
func (pr *Projector) prepare(ctx context.Context, records []*kgo.Record, before, after []partitionLag) (*job, error) {
	if len(records) == 0 {
		if len(after) == 0 {
			return nil, nil
		}
		// Only commit markers were read: nothing to apply, but the lag
		// they leave is reported in turn.
		return &job{start: time.Now(), lagAfter: after}, nil
	}
	j := &job{start: time.Now(), lagAfter: after}
	// Until this batch commits, its records are pending too.
	for _, l := range before {
		pr.o.Metrics.consumerLag(pr.p, l.topic, l.part, l.lag)
	}
	stale := new(atomic.Int64)
	var behind int64
	for _, l := range after {
		behind += l.lag
	}
	var oldest int64
	groups := pr.p.ApplyConcurrency
	if len(records) < splitFrom {
		groups = 1
	}
	split := splitByPartition(records, groups)
	bs := make([]*projections.Batch, len(split))
	bads := make([][]projections.Rejected, len(split))
	for i, recs := range split {
		bs[i], bads[i] = pr.p.Build(Records(recs))
	}
	if shapes := pr.unseenShapes(bs...); len(shapes) > 0 {
		// A DDL since the tables were last compared (or the first
		// batches): follow it, then map again with the expressions typed
		// against it.
		if err := pr.followShapes(ctx, shapes); err != nil {
			return nil, err
		}
		for i, recs := range split {
			bs[i], bads[i] = pr.p.Build(Records(recs))
		}
	}
	for i, b := range bs {
		bad := bads[i]
		b.Stale = stale
		b.CaughtUp = behind < caughtUpBelow
		if b.SnapshotAgain != "" {
			pr.log.Warn("the Debezium connector snapshotted this table again (lost or reset offsets, snapshot.mode always or when_needed, a blocking snapshot signal): "+
				"rows deleted after its last streamed change and before this snapshot have no delete record and stay in the read table; "+
				"fix: rebuild the projection from the new snapshot (readside replay --rebuild, docs/debezium.md)",
				"projection", pr.p.Name, "at", b.SnapshotAgain)
		}
		if pr.dlq == nil {
			// Only dead-lettering needs a write's record. Dropped, the
			// polled records are garbage once the batch is built, not
			// held while it is applied and the next poll is built.
			for i := range b.Writes {
				b.Writes[i].From = nil
			}
			for i := range b.Parents {
				b.Parents[i].From = nil
			}
		}
		j.parts = append(j.parts, b)
		j.bad = append(j.bad, bad...)
		oldest = projections.OlderTS(oldest, b.OldestTS)
	}
	j.waiting = pr.o.Metrics.waiting(pr.p, oldest, j.start)
	return j, nil
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
