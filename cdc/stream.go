package cdc

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// stream is one connection's worth of tailing, from a checkpoint.
type stream struct {
	t          *Tailer
	pub        *publisher
	src        *sourceDB
	cp         Checkpoint // the last checkpoint committed to Kafka
	clock      *Clock
	captured   map[string]string // db.table -> topic
	partitions map[string]int
	excluded   map[string]map[string]bool
	charsets   map[uint64]string
	tables     map[uint64]*table

	// schema is the tracked schema when the binlog does not name columns
	// (nil with binlog_row_metadata=FULL); historyKeys are its entries to
	// write before streaming (a fresh information_schema snapshot).
	schema      *schemaTracker
	historyKeys []string
	// untilNamed: the source is FULL now and schema is kept only for the
	// binlog written before the switch; the first captured table map that
	// names its columns ends it.
	untilNamed bool

	oversized atomic.Pointer[oversizedEvent] // set by the decoder (go-mysql's goroutine)

	gtids mysql.GTIDSet // executed set through the last complete transaction
	file  string        // current binlog file

	// The open source transaction.
	txnGTID   string
	txnBegun  bool // a BEGIN (or a non-standalone GTID) opened it: it ends at XID/COMMIT
	txnEvents int

	// Snapshots: the queue (its head in progress) and the chunk between
	// its watermarks.
	snapshots []SnapshotTask
	chunk     *chunk
	covered   []string // Checkpoint.Tables
	// lastRequest is Checkpoint.LastRequest.
	lastRequest uint64

	// Source transactions completed since the last Kafka commit.
	pendingTxns  int
	pendingPos   Position
	pendingSince time.Time // when the first of them completed
	pendingTS    int64     // source commit time of the last of them

	slab slab // the records' keys and values

	// commitWanted: a commit fell due by time (commit_interval, or an idle
	// source) while the previous one still ran in the background. The
	// stream reads on, holding records, and commits the moment that one
	// is done instead of waiting for it: a transaction read meanwhile
	// then rides in the very next commit rather than the one after.
	commitWanted bool
}

// idleCommitAfter is how long the stream may have no event ready, between
// source transactions, before the tailer commits what is complete.
const idleCommitAfter = 2 * time.Millisecond

// commitPollEvery is how often an idle stream looks at a commit running in
// the background.
const commitPollEvery = 5 * time.Millisecond

func (s *stream) run(ctx context.Context) (err error) {
	syncer := replication.NewBinlogSyncer(s.syncerConfig())
	defer syncer.Close()
	pos := s.cp.Position
	var streamer *replication.BinlogStreamer
	if pos.GTID != "" {
		if s.gtids, err = pos.gtidSet(); err != nil {
			return &FatalError{err}
		}
		streamer, err = syncer.StartSyncGTID(s.gtids.Clone())
	} else {
		streamer, err = syncer.StartSync(mysql.Position{Name: pos.File, Pos: pos.Pos})
	}
	if err != nil {
		return fmt.Errorf("starting binlog stream at %s: %w", pos, err)
	}
	s.file = pos.File
	s.pendingPos = pos
	s.t.state.connected.Store(true)
	defer s.t.state.connected.Store(false)
	defer func() {
		if err != nil {
			// Also waits for a commit still running in the background:
			// the next stream starts from whatever Kafka really holds.
			err = s.pub.abort(context.WithoutCancel(ctx), err)
		}
	}()
	if len(s.historyKeys) > 0 {
		// The snapshot is the schema at the checkpoint: commit both
		// before anything is built on them.
		if err := s.produceHistory(ctx, s.historyKeys); err != nil {
			return err
		}
		if err := s.commitNow(ctx); err != nil {
			return err
		}
	}

	interval := s.t.cfg.Kafka.CommitInterval
	for {
		// Wake up at the commit deadline so an idle source still commits
		// what is complete.
		if err := s.maybeStartChunk(ctx); err != nil {
			return err
		}
		if c := s.pub.inflight; c != nil && c.finished() {
			// A background commit's outcome is taken up even when the
			// source is idle: a failed one restarts the stream from the
			// checkpoint in Kafka at once, not at the next source write.
			if err := s.pub.settle(ctx); err != nil {
				return err
			}
		}
		if s.commitWanted && s.pub.inflight == nil {
			if err := s.maybeCommit(ctx, true); err != nil {
				return err
			}
		}
		var commitAt, deadline time.Time
		var wake context.Context // done when the background commit is
		if c := s.pub.inflight; c != nil && s.commitWanted {
			// The next commit waits only for this one to finish.
			wake = c.done
		} else if s.pendingTxns > 0 {
			commitAt = s.batchStart().Add(interval)
			if !s.txnBegun && s.txnGTID == "" {
				// Between source transactions, a stream with nothing
				// more to read commits at once: latency is the commit's,
				// not commit_interval's, while a backlog (events always
				// ready) still batches up to commit_every.
				if idle := time.Now().Add(idleCommitAfter); idle.Before(commitAt) {
					commitAt = idle
				}
			}
			deadline = commitAt
		}
		if c := s.pub.inflight; c != nil && wake == nil {
			if poll := time.Now().Add(commitPollEvery); deadline.IsZero() || poll.Before(deadline) {
				deadline = poll
			}
		}
		waitCtx, cancel := ctx, context.CancelFunc(func() {})
		switch {
		case wake != nil:
			var cancelWait context.CancelFunc
			waitCtx, cancelWait = context.WithCancel(ctx)
			stopWake := context.AfterFunc(wake, cancelWait)
			cancel = func() { stopWake(); cancelWait() }
		case !deadline.IsZero():
			waitCtx, cancel = context.WithDeadline(ctx, deadline)
		}
		ev, err := streamer.GetEvent(waitCtx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return s.drain(ctx)
			}
			if wake != nil && errors.Is(err, context.Canceled) {
				continue // the background commit is done: commit next
			}
			if errors.Is(err, context.DeadlineExceeded) {
				if !commitAt.IsZero() && !time.Now().Before(commitAt) {
					if err := s.maybeCommit(ctx, true); err != nil {
						return err
					}
				}
				continue
			}
			return s.classifyStreamError(err)
		}
		if err := s.handle(ctx, ev); err != nil {
			return err
		}
	}
}

// drain commits what is complete when the tailer is asked to stop.
func (s *stream) drain(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if s.pendingTxns > 0 && s.txnGTID == "" && !s.txnBegun {
		return s.commitNow(dctx)
	}
	// A part of a source transaction is never committed; a commit still
	// running in the background is waited for.
	return s.pub.abort(dctx, nil)
}
