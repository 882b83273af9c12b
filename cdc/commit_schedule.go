package cdc

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/readside/readside/config"
)

// When the stream commits its Kafka transaction. A commit happens only
// between source transactions (a checkpoint is always a transaction
// boundary) and when the batch is full (kafka.commit_every records), old
// (kafka.commit_interval) or the source has nothing more to send. At most
// one commit runs at a time, in the background (publisher.commitAsync): a
// commit due by time while one runs is deferred until that one is over,
// while one due by size waits for it, which bounds what a backlog holds
// (except while a snapshot's chunks are read: decide).

// snapshotDeferFactor bounds a snapshot's deferred commit: the next
// transaction grows to at most this many times kafka.commit_every records
// while the running one flushes.
const snapshotDeferFactor = 2

// idleCommitAfter is how long the stream may have no event ready, between
// source transactions, before the tailer commits what is complete.
const idleCommitAfter = 2 * time.Millisecond

// commitScheduler owns the source side of the next Kafka commit: the
// source transactions completed since the last one, and whether a commit
// is owed.
type commitScheduler struct {
	every    int           // kafka.commit_every
	interval time.Duration // kafka.commit_interval

	txns  int       // source transactions completed since the last commit
	pos   Position  // the binlog position after the last of them
	since time.Time // when the first of them completed
	ts    int64     // source commit time of the last of them

	// wanted: a commit fell due by time (commit_interval, or an idle
	// source) while the previous one still ran in the background. The
	// stream reads on, holding records, and commits the moment that one
	// is done instead of waiting for it: a transaction read meanwhile
	// then rides in the very next commit rather than the one after.
	wanted bool
}

func newCommitScheduler(k config.Kafka) commitScheduler {
	return commitScheduler{every: k.CommitEvery, interval: k.CommitInterval}
}

// batchState is what the scheduler needs to know of the rest of the
// stream: the publisher's side of the next commit and the open source
// transaction.
type batchState struct {
	records      int       // produced for the next commit (publisher.batch)
	firstRecord  time.Time // when the first of them was produced
	commitActive bool      // a previous commit still runs in the background
	inTxn        bool      // a source transaction is open
	behind       bool      // orphans past the resumed cut are not published again yet
	snapshotting bool      // a snapshot's chunks are being read and published
}

// commitVerdict is what the scheduler decides.
type commitVerdict int

const (
	commitNotDue   commitVerdict = iota // not due, or not allowed inside a source transaction
	commitDeferred                      // due by time while the previous commit runs: when it is over
	commitDue                           // commit now (waiting for a running one first)
)

// completed records the end of a source transaction at file:offset,
// committed on the source at ts. Offset 0 (an event without one, on a GTID
// source whose set is the position) keeps the last known file/offset:
// resuming at 0 would replay the file.
func (c *commitScheduler) completed(now time.Time, file string, offset uint32, ts int64) {
	if c.txns == 0 {
		c.since = now
	}
	c.txns++
	if offset != 0 {
		c.pos.File, c.pos.Pos = file, offset
	}
	c.ts = ts
}

// decide says whether the next commit is due. deadline: a commit time
// passed (commit_interval, an idle source) or the stream stops.
func (c *commitScheduler) decide(now time.Time, b batchState, deadline bool) commitVerdict {
	if c.txns == 0 || b.inTxn || b.behind {
		return commitNotDue
	}
	full := b.records >= c.every
	if !full && !deadline && !c.wanted && now.Sub(c.batchStart(b)) < c.interval {
		return commitNotDue
	}
	if b.commitActive && (!full || (b.snapshotting && b.records < snapshotDeferFactor*c.every)) {
		// A snapshot's chunks come faster than Kafka takes them: waiting
		// for the running commit would leave the stream idle while it
		// flushes, and the producer idle while the stream then fills the
		// next batch. Deferred, the stream goes on encoding into the held
		// records, and the next transaction carries everything read
		// during this commit, so each flush and EndTxn covers more rows —
		// up to snapshotDeferFactor batches, past which it waits: the
		// records held and those in flight are the tailer's memory.
		return commitDeferred
	}
	return commitDue
}

// commitAt is when the next commit falls due by time; zero when it waits
// for nothing but the running commit (deferred) or nothing is complete.
func (c *commitScheduler) commitAt(now time.Time, b batchState) time.Time {
	if c.txns == 0 || b.behind || (c.wanted && b.commitActive) {
		return time.Time{}
	}
	at := c.batchStart(b).Add(c.interval)
	if !b.inTxn {
		// Between source transactions, a stream with nothing more to read
		// commits at once: latency is the commit's, not commit_interval's,
		// while a backlog (events always ready) still batches up to
		// commit_every.
		if idle := now.Add(idleCommitAfter); idle.Before(at) {
			at = idle
		}
	}
	return at
}

// batchStart is when the work of the next Kafka commit began: its first
// produced record, or its first complete source transaction when nothing
// was produced (transactions on tables readside does not capture still
// move the checkpoint).
func (c *commitScheduler) batchStart(b batchState) time.Time {
	if b.records > 0 && b.firstRecord.Before(c.since) {
		return b.firstRecord
	}
	return c.since
}

// committed starts the next batch once a commit of everything complete is
// under way.
func (c *commitScheduler) committed() { c.txns, c.wanted = 0, false }

// batch is the stream's batchState now.
func (s *stream) batch() batchState {
	records, first := s.pub.batch()
	return batchState{records: records, firstRecord: first, commitActive: s.pub.commitRunning(), inTxn: s.inTxn(), behind: s.behind(),
		snapshotting: s.reader != nil}
}

// behind reports events committed past the resumed checkpoint's cut that
// the stream has not published again yet (publisher.startPublished).
func (s *stream) behind() bool { return s.orphans > s.clock.Last() }

// inTxn reports an open source transaction.
func (s *stream) inTxn() bool { return s.txnBegun || s.txnGTID != "" }

// maybeCommit commits when the scheduler says the commit is due.
func (s *stream) maybeCommit(ctx context.Context, deadline bool) error {
	switch s.sched.decide(time.Now(), s.batch(), deadline) {
	case commitDeferred:
		s.sched.wanted = true
	case commitDue:
		return s.commit(ctx)
	}
	return nil
}

// commit commits what is complete in the background (the stream reads on
// meanwhile; publisher.commitAsync).
func (s *stream) commit(ctx context.Context) error {
	cp := s.checkpoint()
	needsFrom := s.sched.ts
	// The buffers of every record produced so far, all of them in this
	// commit: once it committed, franz-go is done with each (promises
	// called before Flush returns), so they are handed back for reuse.
	chunks, recs := s.slab.seal(), s.recs.seal()
	err := s.pub.commitAsync(ctx, cp, func(took time.Duration) {
		s.slab.recycle(chunks)
		s.recs.recycle(recs)
		s.t.metrics.commitLatency.Observe(took.Seconds())
		s.t.committed(cp)
		s.t.markPublished(needsFrom)
		if needsFrom > s.t.needsFrom.Load() {
			s.t.needsFrom.Store(needsFrom)
		}
	})
	if err != nil {
		return err
	}
	s.cp = cp
	s.sched.committed()
	return nil
}

// commitNow commits what is complete and waits for it.
func (s *stream) commitNow(ctx context.Context) error {
	if err := s.commit(ctx); err != nil {
		return err
	}
	return s.pub.settle(ctx)
}

// checkpoint is the position after the last complete source transaction.
func (s *stream) checkpoint() Checkpoint {
	pos := s.sched.pos
	pos.Flavor = s.src.flavor
	if s.gtids != nil {
		pos.GTID = s.gtids.String()
	}
	sourceTS := s.sched.ts
	if sourceTS == 0 {
		sourceTS = s.cp.SourceTS // nothing completed since the stream started
	}
	return Checkpoint{Position: pos, LastVersion: s.clock.Last(), WrittenAt: s.t.now().UTC(), Snapshots: slices.Clone(s.snapshots), Tables: slices.Clone(s.covered), Keys: maps.Clone(s.keyCols), LastRequest: s.lastRequest, Finished: slices.Clone(s.finished), InitialLoad: s.t.load.record(), SchemaHistory: s.schema != nil,
		ServerID: s.src.serverID, ServerUUID: s.src.serverUUID, SourceTS: sourceTS, Transactions: s.cp.Transactions + uint64(s.sched.txns)}
}
