package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
	if p.Group == "" || p.DLQTopic == "" {
		return nil, fmt.Errorf("projector: projection %s has no consumer group or dead-letter topic: build it with Compile", p.Name)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 1 << 20
	}
	return &Projector{p: p, sink: sink, o: o, log: o.Log.With("component", "projector", "projection", p.Name)}, nil
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
		kgo.ConsumerGroup(pr.p.Group),
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

// Build maps polled records to a batch: the newest write per read key and
// per parent key, and the next offsets. A record that cannot be mapped is
// returned in bad with the reason (the caller dead-letters it or stops).
func (p *Projection) Build(records []*kgo.Record) (b *Batch, bad []Rejected) {
	b = &Batch{Offsets: Offsets{}, Writes: make([]Write, 0, len(records))}
	var d Decoder
	var plans plans
	// Records come a partition at a time: its next offset is recorded
	// when the run ends, not looked up in the map for every record.
	var run *kgo.Record
	for _, r := range records {
		if run != nil && (r.Partition != run.Partition || r.Topic != run.Topic) {
			b.Offsets.Set(run.Topic, run.Partition, run.Offset+1)
		}
		run = r
		if r.Value == nil { // tombstone: the delete event came before it
			continue
		}
		e, err := d.Decode(r.Value)
		if err == nil {
			err = p.collect(b, r, e, &plans)
			d.recycle(e) // collect keeps copies of what it needs
		}
		if err != nil {
			bad = append(bad, Rejected{Record: r, Reason: err})
		}
	}
	if run != nil {
		b.Offsets.Set(run.Topic, run.Partition, run.Offset+1)
	}
	n := len(b.Writes) + len(b.Parents)
	// In place (the batch's own slice), with what was coalesced away
	// cleared: it would hold its records, and their fetch buffers, while
	// the batch is applied (see prepare).
	kept := coalesce(b.Writes, b.Writes[:0])
	clear(b.Writes[len(kept):])
	b.Writes = kept
	b.Parents = CoalesceParents(b.Parents)
	b.Coalesced = int64(n - len(b.Writes) - len(b.Parents))
	return b, bad
}

func (p *Projection) collect(b *Batch, r *kgo.Record, e Event, ps *plans) error {
	if r.Topic == p.Topic {
		n := len(b.Writes)
		var err error
		if b.Writes, err = p.appendWrites(b.Writes, e, ps); err != nil {
			return err
		}
		for i := n; i < len(b.Writes); i++ {
			b.Writes[i].From = r
		}
	}
	for i, j := range p.Joins {
		if r.Topic != j.Topic {
			continue
		}
		ws, err := p.ParentWrites(i, e)
		if err != nil {
			return err
		}
		for k := range ws {
			ws[k].From = r
		}
		b.Parents = append(b.Parents, ws...)
	}
	if e.SourceTS > 0 && e.SourceTS > b.NewestTS {
		b.NewestTS = e.SourceTS
	}
	b.OldestTS = oldestTS(b.OldestTS, e.SourceTS)
	if b.Marks == nil {
		b.Marks = map[string]map[int32]Mark{}
	}
	if b.Marks[r.Topic] == nil {
		b.Marks[r.Topic] = map[int32]Mark{}
	}
	m := Mark{Version: e.Version, TS: e.SourceTS}
	if e.Source != nil {
		m.GTID = e.Source.GTID
	}
	if m.Version > b.Marks[r.Topic][r.Partition].Version {
		b.Marks[r.Topic][r.Partition] = m
	}
	return nil
}

// Rejected is a record the projection refused, with why.
type Rejected struct {
	Record *kgo.Record
	Reason error
}

// collectTombstones drops tombstones below the topics' horizon (see
// Horizon). Failures are logged and retried next interval: tombstones
// only cost space.
func (pr *Projector) collectTombstones(ctx context.Context) {
	tc, ok := pr.sink.(TombstoneCollector)
	if !ok {
		return
	}
	h, ok, err := Horizon(ctx, pr.o.Brokers, pr.p)
	if err != nil || !ok {
		if err != nil {
			pr.log.Warn("tombstone collection: cannot read the horizon", "err", err)
		}
		return
	}
	n, err := tc.CollectTombstones(ctx, pr.p, h)
	if err != nil {
		pr.log.Warn("tombstone collection failed", "err", err)
		return
	}
	pr.log.Info("tombstones collected", "deleted", n, "horizon_version", h)
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
	for _, recs := range SplitByPartition(records, groups) {
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

// splitFrom is the smallest poll dealt into concurrent transactions. A
// caught-up projector polls a few hundred records at a time: one
// transaction applies them with half the statements and commits of two,
// which on a busy sink server is what its latency is made of, while a
// backlog's polls of thousands still use every connection.
const splitFrom = 1000

// SplitByPartition deals records into at most n groups of whole partitions,
// balanced by record count, each partition's records in their order.
// Groups can be applied concurrently in separate sink transactions: a
// row's changes all travel in one partition (the record key is its
// primary key), so no two groups write the same read row, parent state
// row, offset or watermark — the same reason several processes can share
// a projection's partitions.
func SplitByPartition(records []*kgo.Record, n int) [][]*kgo.Record {
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

// commit applies a prepared batch with its offsets, its partition groups
// concurrently. Under on_error: dlq, records that cannot be mapped and rows
// the sink rejects go to the dead-letter topic (before the offsets that
// pass them are committed, so nothing is lost); under stop, the projector
// stops on them. When one group fails, the others may still commit: each
// carries only its own partitions' offsets, so consumption resumes
// exactly where each one stopped.
func (pr *Projector) commit(ctx context.Context, j *job) error {
	if len(j.bad) > 0 {
		for _, r := range j.bad {
			// Not bad data but a DDL: every later row lacks the column too.
			if err := pr.p.droppedColumn(r.Record.Topic, r.Reason); err != nil {
				return err
			}
		}
		if pr.dlq == nil {
			r := j.bad[0]
			return fmt.Errorf("projection %s: record %s/%d@%d: %w (set on_error: dlq to dead-letter such records and go on)", pr.p.Name, r.Record.Topic, r.Record.Partition, r.Record.Offset, r.Reason)
		}
		if err := pr.deadLetter(ctx, j.bad); err != nil {
			return err
		}
	}
	errs := make([]error, len(j.parts))
	if len(j.parts) == 1 {
		errs[0] = pr.apply(ctx, j.parts[0])
	} else {
		var wg sync.WaitGroup
		for i, b := range j.parts {
			wg.Go(func() { errs[i] = pr.apply(ctx, b) })
		}
		wg.Wait()
	}
	var writes, parents int
	for i, b := range j.parts {
		if errs[i] != nil {
			return errs[i]
		}
		pr.o.Metrics.applied(pr.p, b, time.Since(j.start))
		writes, parents = writes+len(b.Writes), parents+len(b.Parents)
	}
	for _, l := range j.lagAfter {
		pr.o.Metrics.consumerLag(pr.p, l.topic, l.part, l.lag)
	}
	pr.advance(j.lagAfter)
	if j.waiting {
		pr.o.Metrics.done(pr.p)
	}
	if len(j.parts) == 0 {
		return nil
	}
	pr.log.Debug("batch applied", "writes", writes, "parents", parents, "transactions", len(j.parts), "took", time.Since(j.start))
	return nil
}

// apply writes one partition group's batch with its offsets.
func (pr *Projector) apply(ctx context.Context, b *Batch) error {
	// Widening the read table comes first: a row it lets in is no row to
	// dead-letter.
	err := pr.applyFollowing(ctx, b)
	var stop *StopError
	if errors.As(err, &stop) {
		return err
	}
	if err != nil && pr.dlq != nil && pr.o.Rejected != nil && pr.o.Rejected(err) && ctx.Err() == nil {
		err = pr.isolate(ctx, b)
	}
	if err != nil {
		hint := ""
		if pr.dlq == nil && pr.o.Rejected != nil && pr.o.Rejected(err) {
			hint = " (the sink rejects a row: fix the read table or the data, or set on_error: dlq to dead-letter such rows and go on)"
		}
		return fmt.Errorf("projection %s: applying a batch of %d writes and %d parent changes: %w%s", pr.p.Name, len(b.Writes), len(b.Parents), err, hint)
	}
	return nil
}

// isolate finds the rows the sink rejects by applying the batch in halves
// (without offsets: a half applied twice is harmless), dead-letters each
// single rejected write, then commits the offsets alone.
func (pr *Projector) isolate(ctx context.Context, b *Batch) error {
	var bisect func(ws []Write, ps []ParentWrite) error
	bisect = func(ws []Write, ps []ParentWrite) error {
		err := pr.sink.Apply(ctx, pr.p, &Batch{Writes: ws, Parents: ps})
		if err == nil || !pr.o.Rejected(err) || ctx.Err() != nil {
			return err
		}
		switch {
		case len(ws)+len(ps) == 1:
			r := Rejected{Reason: err}
			if len(ws) == 1 {
				r.Record = ws[0].From
			} else {
				r.Record = ps[0].From
			}
			b.Rejected++
			return pr.deadLetter(ctx, []Rejected{r})
		case len(ps) > 0 && len(ws) > 0:
			if err := bisect(nil, ps); err != nil {
				return err
			}
			return bisect(ws, nil)
		case len(ps) > 1:
			if err := bisect(nil, ps[:len(ps)/2]); err != nil {
				return err
			}
			return bisect(nil, ps[len(ps)/2:])
		}
		if err := bisect(ws[:len(ws)/2], nil); err != nil {
			return err
		}
		return bisect(ws[len(ws)/2:], nil)
	}
	if err := bisect(b.Writes, b.Parents); err != nil {
		return err
	}
	return pr.sink.Apply(ctx, pr.p, &Batch{Offsets: b.Offsets, Marks: b.Marks})
}

// deadLetter publishes rejected records to the dead-letter topic and waits
// for the broker to acknowledge them. The record keeps its key and value;
// headers say where it came from and why it was rejected.
func (pr *Projector) deadLetter(ctx context.Context, rs []Rejected) error {
	topic := pr.p.DLQTopic
	var out []*kgo.Record
	for _, r := range rs {
		src := r.Record
		pr.log.Warn("dead-lettering a record", "topic", src.Topic, "partition", src.Partition, "offset", src.Offset, "reason", r.Reason, "dlq", topic)
		out = append(out, &kgo.Record{Topic: topic, Key: src.Key, Value: src.Value, Headers: []kgo.RecordHeader{
			{Key: "readside.error", Value: []byte(r.Reason.Error())},
			{Key: "readside.projection", Value: []byte(pr.p.Name)},
			{Key: "readside.topic", Value: []byte(src.Topic)},
			{Key: "readside.partition", Value: []byte(strconv.Itoa(int(src.Partition)))},
			{Key: "readside.offset", Value: []byte(strconv.FormatInt(src.Offset, 10))},
		}})
	}
	if err := pr.dlq.ProduceSync(ctx, out...).FirstErr(); err != nil {
		return fmt.Errorf("publishing to the dead-letter topic %s: %w", topic, err)
	}
	pr.o.Metrics.deadLettered(pr.p, len(out))
	return nil
}

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
