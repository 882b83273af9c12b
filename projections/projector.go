package projections

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/internal/kafkalog"
)

// Projector keeps one projection's read table up to date from its topics
// (its source table's and each joined parent's). Projectors of one
// projection in several processes share the partitions through a consumer
// group; the offsets live in the sink, committed with the rows, and are
// where consumption resumes on every assignment.
type Projector struct {
	p    *Projection
	sink Sink
	o    Options
	log  *slog.Logger
	dlq  *kgo.Client
	pos  positions
	// follow serializes following the source's schema (schemafollow.go).
	follow follower
}

// Options configure a projector.
type Options struct {
	Brokers []string
	// InstanceID, when set, makes the worker a static group member (see
	// config kafka.group_instance_id).
	InstanceID string
	// TopicPrefix names the dead-letter topic (DLQTopic).
	TopicPrefix string
	// MaxMessageBytes is kafka.max_message_bytes: the dead-letter topic
	// holds a rejected record of that size (0: the config default, 1 MiB).
	MaxMessageBytes int
	Metrics         *Metrics // nil: not exported
	// Rejected tells a sink's rejection of a row (bad data: too long, out
	// of range, a constraint) from a failure to reach it; only rejected
	// rows are dead-lettered. nil: nothing is (a failing batch stops).
	Rejected func(error) bool
	Log      *slog.Logger
}

// NewProjector validates and does no I/O.
func NewProjector(p *Projection, sink Sink, o Options) (*Projector, error) {
	if len(o.Brokers) == 0 {
		return nil, errors.New("projector: no Kafka brokers")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.TopicPrefix == "" {
		o.TopicPrefix = "readside"
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 1 << 20
	}
	return &Projector{p: p, sink: sink, o: o, log: o.Log.With("component", "projector", "projection", p.Name)}, nil
}

// Group is the consumer group of a projection's workers.
func Group(p *Projection) string { return "readside-projection-" + p.Name }

// Run consumes until ctx is cancelled (nil) or a batch cannot be applied.
// A replay request for a partition it holds makes it leave the group and
// join again, so the partitions are assigned afresh and resume at the
// requested offsets (projections/replay.go).
func (pr *Projector) Run(ctx context.Context) error {
	if pr.p.OnError == "dlq" {
		if err := pr.openDLQ(ctx); err != nil {
			return err
		}
		defer pr.dlq.Close()
	}
	for {
		rejoin, err := pr.consume(ctx)
		if err != nil || !rejoin || ctx.Err() != nil {
			return err
		}
		pr.log.Info("replay requested for a partition held here: rejoining the group to resume at the requested offsets")
	}
}

// consume runs one group membership; rejoin reports a replay request.
func (pr *Projector) consume(ctx context.Context) (rejoin bool, err error) {
	pr.o.Metrics.started(pr.p)
	owned := newOwned()
	opts := []kgo.Opt{
		kgo.SeedBrokers(pr.o.Brokers...),
		// A worker killed without leaving is noticed within this, not the
		// default 45s: its partitions are not consumed until then.
		kgo.SessionTimeout(10 * time.Second),
		kgo.ConsumerGroup(Group(pr.p)),
		kgo.ConsumeTopics(pr.p.Topics()...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Commit markers come with the records so the consumer lag can
		// count them as read (pollQueue.through); pollQueue drops them.
		kgo.KeepControlRecords(),
		// 256 KiB of each partition per fetch (Kafka's default is 1 MiB):
		// a narrow-row fetch of 6 partitions is then ~12,000 records
		// instead of ~50,000, all of which were decompressed and held at
		// once. Drain peak RSS 173–186 → 104–113 MiB on narrow inserts,
		// rate within the noise (docs/benchmarks.md, tuning log 17).
		kgo.FetchMaxPartitionBytes(256 << 10),
		kgo.DisableAutoCommit(), // offsets are committed in the sink, with the rows
		kgo.RetryBackoffFn(retryBackoff),
		kgo.BlockRebalanceOnPoll(),
		kgo.AdjustFetchOffsetsFn(func(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			if err := pr.takeReplays(ctx, assigned); err != nil {
				return nil, err
			}
			stored, err := pr.sink.Offsets(ctx, pr.p)
			if err != nil {
				return nil, err
			}
			for topic, parts := range assigned {
				for part := range parts {
					if next, ok := stored[topic][part]; ok {
						parts[part] = kgo.NewOffset().At(next)
					} else {
						parts[part] = kgo.NewOffset().AtStart()
					}
				}
			}
			return assigned, nil
		}),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { owned.add(m) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { owned.remove(m) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { owned.remove(m) }),
		kgo.WithLogger(kafkalog.New(pr.log)),
	}
	if pr.o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(pr.o.InstanceID+"-"+pr.p.Name))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	// Leaving the group on Close revokes partitions, which waits for
	// AllowRebalance under BlockRebalanceOnPoll: release it first.
	defer cl.AllowRebalance()
	// A stop lets the batch in flight finish (within stopGrace; the wait
	// deferred below runs before these) instead of cutting it off: a
	// cut-off batch's statements are already at the server, which may
	// still commit them after the client gave up, so whoever acts on "the
	// projector has stopped" (a rebuild forgetting its shadow's offsets, a
	// restart) would otherwise race that commit.
	applyCtx, cutApply := context.WithCancel(context.WithoutCancel(ctx))
	defer cutApply()
	unwatch := context.AfterFunc(ctx, func() { time.AfterFunc(stopGrace, cutApply) })
	defer unwatch()
	// Pipelined: the next batch is polled and decoded while the previous
	// one is applied, so the sink is kept busy. Batches still commit one
	// after another, in poll order.
	var pending chan error
	wait := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending
		pending = nil
		return err
	}
	defer func() { _ = wait() }()
	fail := func(err error) (bool, error) {
		if ctx.Err() != nil {
			return false, nil
		}
		pr.o.Metrics.error(pr.p)
		return false, err
	}
	// A failed apply cancels the poll waiting for more records, so the
	// projector stops at once rather than on the next record.
	pollCtx, applyFailed := context.WithCancel(ctx)
	defer applyFailed()
	lastGC := time.Now()
	var lastCheck time.Time
	var queue pollQueue
	for {
		if time.Since(lastGC) > GCInterval {
			lastGC = time.Now()
			pr.collectTombstones(ctx)
		}
		perJob := pollRecords * max(1, pr.p.ApplyConcurrency)
		// Partitions given up in a rebalance are not applied from the
		// queue any further (harmless if they were: see below).
		queue.keep(owned.has)
		if queue.len() == 0 {
			// Bounded polls: an idle projector still looks for replay
			// requests between them.
			pctx, cancel := context.WithTimeout(pollCtx, replayCheckEvery)
			fetches := cl.PollRecords(pctx, perJob*queuedJobs)
			cancel()
			if ctx.Err() != nil {
				return false, nil
			}
			if pollCtx.Err() != nil {
				return fail(wait())
			}
			pr.queueFetches(&queue, fetches)
		}
		if pending != nil && queue.len() < caughtUpBelow {
			// Caught up: a few records are queued while the previous job
			// is still applied. Cut now, this job would hold only what
			// the last fetch had, and the records arriving during the
			// apply would wait in franz-go's buffer and at the broker for
			// the job after it: about three applies from arrival to
			// commit instead of one and a half. So wait for the apply,
			// then take what came meanwhile: the fetches franz-go holds.
			// It does not wait for one more fetch (this waited up to 5 ms
			// for the next one when the held fetch had records, until
			// session 12): at 38,500 rows/s that wait made the batches
			// fewer but longer, and commit → visible p50 85–123 ms
			// against 60–64 without it (docs/benchmarks.md, tuning log
			// 33). A backlog keeps decoding the next job while the
			// previous one is applied.
			if err := wait(); err != nil {
				return fail(err)
			}
			pr.queueFetches(&queue, cl.PollRecords(nil, perJob*queuedJobs-queue.len()))
			if ctx.Err() != nil {
				return false, nil
			}
		}
		job := pr.prepare(queue.take(perJob))
		if err := wait(); err != nil {
			return fail(err)
		}
		// Replay requests are looked at with nothing in flight; a polled
		// batch not yet applied is simply consumed again after the rejoin
		// (its offsets were never committed).
		if time.Since(lastCheck) >= replayCheckEvery {
			lastCheck = time.Now()
			rejoin, err := pr.replayPending(ctx, owned)
			if err != nil {
				return fail(err)
			}
			if rejoin {
				return true, nil
			}
		}
		// A rebalance may happen now, with job already polled: applying
		// it anyway is harmless — its rows are version-guarded and its
		// offsets only ever move forward, past rows it committed with them.
		cl.AllowRebalance()
		if job == nil {
			continue
		}
		pending = make(chan error, 1)
		go func() {
			err := pr.commit(applyCtx, job)
			if err != nil {
				applyFailed()
			}
			pending <- err
		}()
	}
}

// stopGrace bounds how long a stopped projector waits for the batch in
// flight to commit (see consume); a healthy sink takes well under a second.
const stopGrace = 10 * time.Second

// retryBackoff waits 20 ms before the first retry of a failed request and
// doubles up to 1 s. franz-go's default starts at ~250 ms, and a Kafka
// broker answers the first JoinGroup of a new group with
// COORDINATOR_NOT_AVAILABLE: every first start of a projection spent
// ~300 ms there before reading a record (docs/benchmarks.md, tuning log).
// The jitter keeps many workers from retrying in step.
func retryBackoff(tries int) time.Duration {
	d := 20 * time.Millisecond << min(max(tries-1, 0), 6)
	d = min(d, time.Second)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
