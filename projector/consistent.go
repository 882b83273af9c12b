package projector

// The applier of a transaction-consistent sink
// (docs/design/consistent-sinks.md). One per sink replaces the sink's
// per-projection projectors: it reads every partition of every topic the
// sink's projections need, and the tailer's checkpoints, whose `published`
// offsets cut the topics at a source transaction boundary. A commit takes
// the newest cut it may, has every projection build its writes from the
// records below the cut, applies them chunk by chunk into one open
// transaction per shard, and commits them with the frontier that names
// the cut. Nothing of a cut is visible before its commit, and a cut is
// never split.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/kafkalog"
	"github.com/readside/readside/projections"
)

// ApplierOptions configure an Applier.
type ApplierOptions struct {
	Brokers []string
	// CheckpointTopic and TailerID: the tailer's checkpoints are the
	// records keyed TailerID (its transactional id) there.
	CheckpointTopic, TailerID string
	// Group is the consumer group whose one member holding the checkpoint
	// topic's partition is the active applier of the sink.
	Group string
	// InstanceID, when set, makes the applier a static group member (see
	// config kafka.group_instance_id): restarted after a crash, it takes
	// its partition back at once instead of after the session timeout.
	InstanceID string
	// ChunkRecords is how many records are mapped and written at a time
	// into the open transactions (0: pollRecords).
	ChunkRecords int
	// CommitRecords bounds how many records one commit takes when several
	// cuts are waiting (0: defaultCommitRecords); one cut is never split,
	// however large.
	CommitRecords int64
	// Retryable tells a transient failure (the sink away, a deadlock, a
	// frontier another applier moved), after which the applier starts
	// again from the stored frontiers, from one that stops it.
	Retryable func(error) bool
	// AtOnce tells a failure after which the commit starts again without
	// waiting, since its next attempt cannot fail the same way (a wrong
	// guess that an inserted row's key was new: the attempt reads every
	// key, sinks.RetryAtOnce). nil: none.
	AtOnce  func(error) bool
	Metrics *ConsistentMetrics // nil: not exported
	// Lag keeps readside_projection_lag_seconds of the sink's
	// projections (nil: not kept): from a commit's start, its cut's
	// source time waits until a commit lands at or past it, so a sink
	// whose commits fail or stall shows its projections falling behind.
	Lag *Metrics
	Log *slog.Logger
}

// defaultCommitRecords: a backlog is applied in commits of about this many
// records, so that one failure does not throw away all of it and readers
// see progress.
const defaultCommitRecords = 200_000

// Applier keeps the read tables of every projection of one
// transaction-consistent sink.
type Applier struct {
	sink   string
	ps     []*projections.Projection
	to     projections.ConsistentSink
	o      ApplierOptions
	log    *slog.Logger
	topics []string
	// names are the projections' names, sorted (the frontier records them).
	names []string
	// reads: the projections that read each topic.
	reads map[string][]*projections.Projection
	// followers follow the source's schema for each projection
	// (schemafollow.go) and collect its tombstones (gc.go), between
	// commits.
	followers map[*projections.Projection]*Projector
	lastGC    time.Time
	// caughtUp: the caught-up line was logged (once a run, as a row-mode
	// projection's).
	caughtUp bool
}

// NewApplier validates and does no I/O.
func NewApplier(sink string, ps []*projections.Projection, to projections.ConsistentSink, o ApplierOptions) (*Applier, error) {
	if len(o.Brokers) == 0 || o.CheckpointTopic == "" || o.TailerID == "" || o.Group == "" {
		return nil, errors.New("applier: brokers, checkpoint topic, tailer id and group are required")
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("applier of sink %s: no projection", sink)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.ChunkRecords <= 0 {
		o.ChunkRecords = pollRecords
	}
	if o.CommitRecords <= 0 {
		o.CommitRecords = defaultCommitRecords
	}
	if o.Retryable == nil {
		o.Retryable = func(error) bool { return false }
	}
	if o.AtOnce == nil {
		o.AtOnce = func(error) bool { return false }
	}
	a := &Applier{sink: sink, ps: ps, to: to, o: o, reads: map[string][]*projections.Projection{},
		log: o.Log.With("component", "applier", "sink", sink), followers: map[*projections.Projection]*Projector{}}
	for _, p := range ps {
		var sink projections.Sink
		if s, ok := to.(projections.Sink); ok {
			sink = s
		}
		a.followers[p] = &Projector{p: p, sink: sink, o: Options{Brokers: o.Brokers}, log: a.log.With("projection", p.Name)}
		for _, t := range p.Topics() {
			if len(a.reads[t]) == 0 {
				a.topics = append(a.topics, t)
			}
			if !slices.Contains(a.reads[t], p) {
				a.reads[t] = append(a.reads[t], p)
			}
		}
	}
	slices.Sort(a.topics)
	for _, p := range a.ps {
		a.names = append(a.names, p.Name)
	}
	slices.Sort(a.names)
	return a, nil
}

// Run applies cuts until ctx is cancelled (nil) or a commit fails for a
// reason that retrying cannot cure. After a transient failure it starts
// again from the frontiers stored in the sink.
func (a *Applier) Run(ctx context.Context) error {
	a.o.Metrics.started(a.sink)
	for _, p := range a.ps {
		a.o.Lag.started(p)
	}
	backoff := 100 * time.Millisecond
	atOnce := 0 // sessions started again at once since the last commit
	for {
		committed, err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if committed {
			backoff, atOnce = 100*time.Millisecond, 0
		}
		if errors.Is(err, errShapesFollowed) {
			// A new table shape, compared between two commits: no failure.
			continue
		}
		if err != nil {
			// Whatever ended the session rolled its open commit back.
			a.o.Metrics.failed(a.sink)
		}
		if err != nil && a.o.AtOnce(err) && atOnce < len(a.ps) {
			// Each projection's wrong guess makes its next attempts read
			// every key, so this happens at most once per projection
			// before a commit; beyond that the backoff applies.
			atOnce++
			// Said at INFO: a large commit rolled back is minutes of a
			// frontier standing still, which an operator must be able
			// to tell from a stuck applier.
			a.log.Info("consistent commit rolled back and started again at once: a contribution guessed new was stored (a key reused after a delete or a truncation); the projection now reads every key", "err", err)
			continue
		}
		if err != nil && !a.o.Retryable(err) && !errors.Is(err, errMembershipLost) && !errors.Is(err, errTopicsMissing) && !errors.Is(err, errSchemaFollowed) {
			return fmt.Errorf("sink %s (consistency: transaction): %w", a.sink, err)
		}
		a.log.Warn("consistent commit interrupted; starting again from the stored frontier", "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

var (
	errMembershipLost = errors.New("the checkpoint topic's partition was taken over by another applier of this sink")
	errTopicsMissing  = errors.New("a topic of the sink's projections does not exist yet (the tailer creates it on its start)")
)

// session is one run from the stored frontiers: it lasts as long as this
// process holds the group's partition and every commit succeeds.
func (a *Applier) session(ctx context.Context) (committed bool, err error) {
	fronts, err := a.to.Frontiers(ctx)
	if err != nil {
		return false, err
	}
	if err := a.addedProjections(fronts); err != nil {
		return false, err
	}
	s := newApplySession(a, fronts)
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cuts, err := a.cutReader(sctx, s, cancel)
	if err != nil {
		return false, err
	}
	feedCtx, stopFeed := context.WithCancel(sctx)
	feed := newCutFeed(feedCtx, cuts, a.o.TailerID)
	defer func() {
		// The feed polls cuts until it has stopped.
		stopFeed()
		<-feed.done
		cuts.Close()
	}()
	var data *kgo.Client
	// last is the commit whose COMMIT may still be running while the
	// next one's records are read and mapped.
	var last *landing
	defer func() {
		if last != nil {
			<-last.done
			committed = committed || last.err == nil
		}
		if data != nil {
			data.Close()
		}
	}()
	// landed waits for the last commit and reports its outcome.
	landed := func() error {
		if last == nil {
			return nil
		}
		<-last.done
		err := last.err
		if err == nil {
			committed = true
		}
		last = nil
		return err
	}
	for {
		if a.gcDue() {
			// Tombstones are collected between commits, not beside one.
			if err := landed(); err != nil {
				return committed, cause(sctx, a.followSchema(sctx, err))
			}
			a.collectTombstones(sctx)
		}
		target, err := s.nextTarget(sctx, feed, func() error {
			if err := landed(); err != nil {
				return err
			}
			if feed.drained() {
				a.noteCaughtUp(s.applied)
			}
			return nil
		})
		if err != nil {
			return committed, cause(sctx, a.followSchema(sctx, err))
		}
		if data == nil {
			if data, err = a.dataReader(sctx, s); err != nil {
				return committed, err
			}
		}
		l, err := a.commit(sctx, s, data, target, landed)
		if err != nil {
			return committed, cause(sctx, err)
		}
		last = l
	}
}

// noteCaughtUp logs, once, that the sink's read tables are current: the
// applier found no cut to commit after its last commit landed at
// frontier f, which is past the initial load. (A row-mode projection's
// line comes from its lag, cmd/readside/progress.go; a consistent sink's
// projections have none of their own.)
func (a *Applier) noteCaughtUp(f projections.Frontier) {
	if a.caughtUp || f.Checkpoint < 0 || f.Loading {
		return
	}
	a.caughtUp = true
	a.log.Info("caught up: the sink's read tables are current with the topics", "gtid", f.GTID, "projections", a.names)
}

// addedProjections refuses a projection added to a sink that has
// committed without it: the applier goes on from the frontier, so its read
// table would get only the source's changes after that point — none of
// the rows before — beside read tables that hold the whole source, a
// state the source never had, for good. A frontier that records no
// projections (none committed yet, or written by a version that did not
// record them) takes every projection.
func (a *Applier) addedProjections(fronts []projections.Frontier) error {
	for _, f := range fronts {
		if f.Checkpoint < 0 || len(f.Projections) == 0 {
			continue
		}
		var added []string
		for _, p := range a.ps {
			if _, found := slices.BinarySearch(f.Projections, p.Name); !found {
				added = append(added, p.Name)
			}
		}
		if len(added) == 0 {
			continue
		}
		return &projections.StopError{Projection: "sink:" + a.sink,
			Reason: fmt.Errorf("projection(s) %s added to sink %s (consistency: transaction), whose read tables are at the source's gtid %s without them: "+
				"the applier goes on from there, so their read tables would hold none of the rows from before it", strings.Join(added, ", "), a.sink, f.GTID),
			Fix: "fill the sink again with every projection: stop readside, drop every table of the sink's database on every shard (readside " +
				"creates its own again), then start readside: it fills them from the topics, whole transactions at a time (topics that no longer " +
				"hold the whole history need readside snapshot --table <db.table> for each table the projections read, too); or put the new " +
				"projections on a sink of their own, or remove them (docs/operations.md, \"Transaction-consistent sinks\")"}
	}
	return nil
}

// gcDue reports the tombstones' collection due (on the interval).
func (a *Applier) gcDue() bool {
	if a.lastGC.IsZero() {
		a.lastGC = time.Now()
	}
	return time.Since(a.lastGC) >= defaultGCInterval
}

// collectTombstones drops every projection's tombstones below its topics'
// horizon (gc.go), between commits.
func (a *Applier) collectTombstones(ctx context.Context) {
	a.lastGC = time.Now()
	for _, p := range a.ps {
		a.followers[p].collectTombstones(ctx)
	}
}

// cause is why ctx ended when it did (a lost membership), else err.
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}

// cutReader is the group member that reads the tailer's checkpoints from
// the one after the lowest frontier on. Losing the partition ends the
// session: another process is the active applier now.
func (a *Applier) cutReader(ctx context.Context, s *applySession, lost context.CancelCauseFunc) (*kgo.Client, error) {
	start := s.lowest()
	revoked := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		if len(m[a.o.CheckpointTopic]) > 0 {
			lost(errMembershipLost)
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(a.o.Brokers...),
		kgo.ConsumerGroup(a.o.Group),
		kgo.ConsumeTopics(a.o.CheckpointTopic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit(), // where to resume is the frontier, in the sink
		kgo.SessionTimeout(10 * time.Second),
		kgo.RetryBackoffFn(retryBackoff),
		kgo.AdjustFetchOffsetsFn(func(_ context.Context, m map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			for _, parts := range m {
				for part := range parts {
					if start < 0 {
						parts[part] = kgo.NewOffset().AtStart()
					} else {
						parts[part] = kgo.NewOffset().At(start + 1)
					}
				}
			}
			return m, nil
		}),
		kgo.OnPartitionsRevoked(revoked),
		kgo.OnPartitionsLost(revoked),
		kgo.WithLogger(kafkalog.New(a.log)),
	}
	if a.o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(a.o.InstanceID+"-sink-"+a.sink))
	}
	return kgo.NewClient(opts...)
}

// dataReader reads every partition of the sink's topics, each from the
// lowest frontier's next offset (its start when the frontier has none).
func (a *Applier) dataReader(ctx context.Context, s *applySession) (*kgo.Client, error) {
	parts, err := partitionsOf(ctx, a.o.Brokers, a.topics)
	if err != nil {
		return nil, err
	}
	assign := map[string]map[int32]kgo.Offset{}
	fresh := map[string][]int32{}
	for _, t := range a.topics {
		n, ok := parts[t]
		if !ok {
			return nil, fmt.Errorf("%w: %s", errTopicsMissing, t)
		}
		for p := range int32(n) {
			if _, ok := s.next[t][p]; !ok {
				fresh[t] = append(fresh[t], p)
			}
			s.addPart(assign, topicPart{t, p})
		}
	}
	tables := map[string]string{}
	for _, p := range a.ps {
		maps.Copy(tables, p.TopicTables())
	}
	warnTrimmedHistory(ctx, a.o.Brokers, a.log, tables, fresh)
	return kgo.NewClient(
		kgo.SeedBrokers(a.o.Brokers...),
		kgo.ConsumePartitions(assign),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		noReset,
		// Commit markers tell how far a partition was read when its last
		// record below the cut is one.
		kgo.KeepControlRecords(),
		kgo.FetchMaxPartitionBytes(256<<10),
		kgo.RetryBackoffFn(retryBackoff),
		kgo.WithLogger(kafkalog.New(a.log)),
	)
}

// landing is a commit whose COMMIT runs in the background: the next
// commit reads and maps its first records meanwhile, and opens its own
// transaction only once done is closed (err nil: committed).
type landing struct {
	done chan struct{}
	err  error
}

// commit applies everything below target's cut in one consistent commit,
// whose COMMIT it leaves running (the landing). landed waits for the
// commit before it: the new transaction opens only after that one ended,
// so commits land in order, and a failed one fails this one too. The
// session moves to the new frontier at once: if the COMMIT fails, the
// session ends and the next starts from the frontiers stored.
func (a *Applier) commit(ctx context.Context, s *applySession, data *kgo.Client, target cutAt, landed func() error) (*landing, error) {
	start := time.Now()
	phases := commitPhases{cutAge: cutAge(target.cut.WrittenAt, start)}
	waitsFrom := target.cut.SourceTS
	if waitsFrom <= 0 {
		waitsFrom = start.Unix()
	}
	for _, p := range a.ps {
		a.o.Lag.waiting(p, waitsFrom, start)
	}
	progress := beginProgress(a.sink, target.cut.Position.GTID, s.records(target))
	begin := func() (projections.SinkCommit, error) {
		waitFrom := time.Now()
		if err := landed(); err != nil {
			return nil, err
		}
		phases.previous = time.Since(waitFrom)
		return a.to.BeginCommit(ctx, s.from, target.offset)
	}
	c, rows, err := a.fill(ctx, s, data, begin, target, progress)
	phases.apply = time.Since(start)
	if err != nil {
		progress.end(a.sink)
		if c != nil {
			c.Rollback()
		}
		return nil, a.followSchema(ctx, err)
	}
	next := event.Offsets{}
	for t, parts := range s.next {
		for p, off := range parts {
			next.Set(t, p, off)
		}
	}
	for t, parts := range target.cut.Published {
		if len(a.reads[t]) == 0 {
			continue
		}
		for p, off := range parts {
			if off > next[t][p] {
				next.Set(t, p, off)
			}
		}
	}
	f := projections.Frontier{Checkpoint: target.offset, Flavor: target.cut.Position.Flavor, GTID: target.cut.Position.GTID, File: target.cut.Position.File,
		Pos: target.cut.Position.Pos, SourceTS: target.cut.SourceTS, CutWrittenAt: target.cut.WrittenAt,
		Transactions: target.cut.Transactions, Loading: target.cut.Loading(), Next: next}
	if !s.covered {
		// The frontier records which projections it covers
		// (addedProjections reads them) until a commit every shard takes
		// part in wrote them: a shard at or past a commit's cut takes no
		// part in it.
		f.Projections = a.names
		s.covered = slices.Max(s.from) < target.offset
	}
	l := &landing{done: make(chan struct{})}
	prev := s.applied
	go func() {
		defer close(l.done)
		defer progress.end(a.sink)
		finishFrom := time.Now()
		if err := c.Commit(f); err != nil {
			// followSchema runs in the session, where no mapping
			// runs beside it.
			l.err = err
			return
		}
		phases.finish = time.Since(finishFrom)
		a.o.Metrics.committed(a.sink, f, prev, rows, time.Since(start), phases)
		for _, p := range a.ps {
			a.o.Lag.doneThrough(p, waitsFrom)
		}
		if prev.Checkpoint < 0 {
			a.log.Info("first consistent commit", "gtid", f.GTID, "rows", rows, "took", time.Since(start))
		}
	}()
	s.committed(f)
	return l, nil
}

// fill reads every partition up to the cut and writes what it reads into
// c, a chunk at a time; records past the cut wait in the session for the
// next commit. rows is how many records it applied. A chunk is mapped
// (decoded, built into every projection's batch) while the one before it
// is written, so the sink's round trips and the decoding overlap.
//
// The writer opens the transaction (begin) while the first chunk is read
// and mapped, which is how reading and mapping overlap the last commit's
// COMMIT. c is the transaction begin opened (nil: none).
func (a *Applier) fill(ctx context.Context, s *applySession, data *kgo.Client, begin func() (projections.SinkCommit, error), target cutAt, progress *commitProgress) (c projections.SinkCommit, rows int, err error) {
	g, gctx := errgroup.WithContext(ctx)
	type mappedChunk struct {
		batches []projectionBatch
		records int
	}
	work := make(chan mappedChunk, 1)
	g.Go(func() error {
		var err error
		if c, err = begin(); err != nil {
			return err
		}
		for mc := range work {
			for _, pb := range mc.batches {
				if err := c.Apply(pb.p, pb.b); err != nil {
					return &applyError{p: pb.p, err: err}
				}
			}
			progress.records.Add(int64(mc.records))
		}
		return nil
	})
	rows, err = a.read(gctx, s, data, target, func(chunk []*kgo.Record) error {
		batches, err := a.mapChunk(chunk)
		if err != nil {
			return err
		}
		select {
		case work <- mappedChunk{batches, len(chunk)}:
			return nil
		case <-gctx.Done():
			return gctx.Err()
		}
	})
	close(work)
	if werr := g.Wait(); werr != nil {
		// The writer's failure is the cause; the reader only saw its
		// context end.
		return c, rows, werr
	}
	return c, rows, err
}

// read hands every record below the cut to apply, in chunks of at most
// ChunkRecords, in each partition's order; records past it wait in the
// session, their partitions paused, for the next commit.
func (a *Applier) read(ctx context.Context, s *applySession, data *kgo.Client, target cutAt, apply func([]*kgo.Record) error) (rows int, err error) {
	need := target.cut.Published
	below := func(k topicPart) int64 { return need[k.topic][k.part] }
	s.cover(data, need)
	data.ResumeFetchPartitions(s.paused)
	s.paused = map[string][]int32{}
	var chunk []*kgo.Record
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		rows += len(chunk)
		// A new slice each time: the one handed over is mapped while
		// this one fills.
		full := chunk
		chunk = nil
		return apply(full)
	}
	take := func(r *kgo.Record) error {
		if chunk == nil {
			chunk = make([]*kgo.Record, 0, a.o.ChunkRecords)
		}
		chunk = append(chunk, r)
		if len(chunk) >= a.o.ChunkRecords {
			return flush()
		}
		return nil
	}
	still, err := s.release(below, take)
	if err != nil {
		return rows, err
	}
	for _, k := range still {
		s.pause(data, k)
	}
	for !s.reached(below) {
		fetches := data.PollRecords(ctx, a.o.ChunkRecords)
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) {
				continue
			}
			k := topicPart{fe.Topic, fe.Partition}
			next, known := s.next[k.topic][k.part]
			if !known {
				next = -1
			}
			resetTo, lost, ok := outOfRange(ctx, data, fe, next)
			if ok && lost == nil {
				a.log.Warn("the partition ends before the position read (the topic was created again, or the broker lost its last records): reading it again from an offset it holds",
					"topic", fe.Topic, "partition", fe.Partition, "offset", resetTo)
				data.SetOffsets(map[string]map[int32]kgo.EpochOffset{k.topic: {k.part: {Epoch: -1, Offset: resetTo}}})
				s.pos[k] = resetTo
				continue
			}
			if err := lost; err != nil {
				return rows, &projections.StopError{Projection: "sink:" + a.sink, Reason: err,
					Fix: "rebuild the sink from the source: stop readside, drop every table of the sink's database on every shard (readside creates its own " +
						"again), start readside, then run readside snapshot --table <db.table> for every table its projections read; keep the topics' retention " +
						"above the longest time a sink may stay behind (docs/operations.md, \"Records gone from Kafka\")"}
			}
			a.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
		}
		var terr error
		fetches.EachRecord(func(r *kgo.Record) {
			switch s.admit(r, below) {
			case admitTake:
				if terr == nil {
					terr = take(r)
				}
			case admitHold:
				s.pause(data, topicPart{r.Topic, r.Partition})
			}
		})
		if terr != nil {
			return rows, terr
		}
	}
	return rows, flush()
}

// projectionBatch is one projection's batch of a chunk.
type projectionBatch struct {
	p *projections.Projection
	b *projections.Batch
}

// mapChunk has every projection build its batch from the chunk's records
// of its topics.
func (a *Applier) mapChunk(chunk []*kgo.Record) ([]projectionBatch, error) {
	var out []projectionBatch
	for _, p := range a.ps {
		var recs []*kgo.Record
		for _, r := range chunk {
			if slices.Contains(a.reads[r.Topic], p) {
				recs = append(recs, r)
			}
		}
		if len(recs) == 0 {
			continue
		}
		b, bad := p.Build(Records(recs))
		if shapes := a.followers[p].unseenShapes(b); len(shapes) > 0 {
			// Compared between transactions (an ALTER would wait for this
			// commit's locks): the commit starts again (followSchema).
			return nil, &newShapes{p: p, shapes: shapes}
		}
		if len(bad) > 0 {
			r := bad[0].Record
			return nil, &projections.StopError{Projection: p.Name,
				Reason: fmt.Errorf("the record at %s/%d offset %d cannot be mapped: %v", r.Topic, r.Partition, r.Offset, bad[0].Reason),
				Fix:    "a transaction-consistent sink stops rather than skip a change: fix the projection (readside check) or the source row, then restart"}
		}
		// Nothing is dead-lettered here: the records are garbage once
		// the batch is built.
		for i := range b.Writes {
			b.Writes[i].From = nil
		}
		for i := range b.Parents {
			b.Parents[i].From = nil
		}
		out = append(out, projectionBatch{p: p, b: b})
	}
	return out, nil
}

// applyError is a projection's batch the sink refused.
type applyError struct {
	p   *projections.Projection
	err error
}

func (e *applyError) Error() string { return e.err.Error() }
func (e *applyError) Unwrap() error { return e.err }

// errSchemaFollowed: a read table was altered to follow the source's
// schema after the sink refused a value; the commit starts again.
var errSchemaFollowed = errors.New("a read table was altered to follow the source's schema")

// newShapes: projection p's batch brings table shapes its tables were not
// compared with (Projector.followShapes).
type newShapes struct {
	p      *projections.Projection
	shapes []*event.Schema
}

func (e *newShapes) Error() string {
	return fmt.Sprintf("projection %s: a new table shape to compare the read tables with", e.p.Name)
}

// errShapesFollowed: new table shapes were compared and followed between
// commits; the session starts again from the stored frontier at once.
var errShapesFollowed = errors.New("the read tables were compared with new table shapes")

// followSchema answers a commit that failed with err, rolled back: for new
// table shapes, it compares the read tables with them (followShapes) and
// returns errShapesFollowed; when the
// sink refused a value a widened read column would take, it runs the
// ALTERs (between transactions, since DDL commits implicitly in MySQL) and
// returns errSchemaFollowed so the commit starts again; else err.
// Statements are sent together, so a refusal can surface with a later
// statement — another projection's, or the COMMIT: the projection the
// error names is only the first suspect, and when its read table already
// matches the source every projection's is compared
// (TestConsistentSinkFollowsSchema: a refused transfers row surfaced with
// the next projection's join query).
func (a *Applier) followSchema(ctx context.Context, err error) error {
	var ns *newShapes
	if errors.As(err, &ns) {
		if ferr := a.followers[ns.p].followShapes(ctx, ns.shapes); ferr != nil {
			return ferr
		}
		return errShapesFollowed
	}
	sf, ok := a.to.(projections.SchemaFollower)
	if !ok || !sf.SchemaRejection(err) {
		return err
	}
	var suspects [][]*projections.Projection
	var ae *applyError
	if errors.As(err, &ae) {
		suspects = append(suspects, []*projections.Projection{ae.p})
	}
	suspects = append(suspects, a.ps)
	for _, ps := range suspects {
		followed := false
		for _, p := range ps {
			pr := a.followers[p]
			retry, ferr := pr.followSchema(ctx, sf, pr.follow.altered, err)
			if ferr != nil {
				return ferr
			}
			followed = followed || retry
		}
		if followed {
			return errSchemaFollowed
		}
	}
	return err
}
