package cdc

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"golang.org/x/sync/errgroup"
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
	collations map[uint64]string // collation id -> name
	tables     map[uint64]*table
	keys       map[string][]string // source.keys: db.table -> key columns
	// rowEnds: the system-versioned captured tables, db.table -> the
	// name of the ROW END column (system_versioning.go).
	rowEnds map[string]string

	// guard follows the unique indexes of the source.keys tables through
	// DDL (nil without source.keys; source_keys.go).
	guard *keyGuard

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
	txnGTID  string
	txnBegun bool // a BEGIN (or a non-standalone GTID) opened it: it ends at XID/COMMIT
	// xa: the open transaction is an XA transaction's first part (XA
	// START to its prepare, or to XA COMMIT ... ONE PHASE); its rows must
	// not touch a captured table (xa.go).
	xa        bool
	txnEvents int
	// meta is kafka.debezium.provide.transaction.metadata's state (nil:
	// off; debezium_txn.go).
	meta *txnMeta

	// Snapshots: the queue (its head in progress), the goroutine reading
	// the head's chunks ahead (snapshot_reader.go) and the chunks it
	// announced, oldest first, not yet published.
	snapshots []SnapshotTask
	reader    *chunkReader
	inflight  []*chunk
	covered   []string            // Checkpoint.Tables
	keyCols   map[string][]string // Checkpoint.Keys: each captured table's published key columns (key_change.go)
	// lastRequest is Checkpoint.LastRequest.
	lastRequest uint64
	// finished is Checkpoint.Finished.
	finished []SnapshotFinished

	// sched decides when the Kafka transaction commits.
	sched commitScheduler
	// orphans is the highest version of a committed event past the cut of
	// the checkpoint the stream resumed from (publisher.startPublished):
	// nothing commits before the clock has passed it.
	orphans uint64

	// The records' keys and values, and the slices a snapshot chunk's
	// records are built in: handed back for reuse once the Kafka
	// transaction that carried them committed (commit).
	slab slab
	recs recordSlices
}

// A stream runs as three stages under one errgroup; an error in any of them
// ends the stream (the open Kafka transaction is aborted and the Tailer
// resumes from the checkpoint in Kafka), and a stop commits what is
// complete (drain).
//
//   - read: go-mysql's goroutine reads the binlog, decodes the rows the
//     stream uses (syncerConfig) and hands each event to a bounded queue
//     (eventQueue).
//   - watch: waits for the binlog connection's error; go-mysql reports it
//     through the streamer, which carries nothing else.
//   - process: one select loop that handles each event (encode, produce
//     into the open Kafka transaction) and runs the commit scheduler
//     (commitScheduler): it commits at source transaction boundaries when a
//     commit is due, and takes up a background commit's outcome when it is
//     over.

// eventQueueSize bounds the events read ahead of the process stage.
// go-mysql's default of 10240 decoded events is up to ~10240 × 8 KiB rows
// events plus their decoded values: hundreds of MiB on wide rows. A short
// queue keeps memory bounded; the producer's buffer is the real read-ahead.
const eventQueueSize = 256

// eventQueue hands each event from go-mysql's reading goroutine to the
// process stage; it blocks while the queue is full (back-pressure on the
// binlog connection) until the stream ends.
type eventQueue struct {
	events chan *replication.BinlogEvent
	over   <-chan struct{}
}

var errStreamOver = errors.New("the binlog stream is over")

// HandleEvent implements replication.EventHandler.
func (q eventQueue) HandleEvent(ev *replication.BinlogEvent) error {
	select {
	case q.events <- ev:
		return nil
	case <-q.over:
		return errStreamOver
	}
}

// readError is the binlog connection's error, classified once the stages
// are over (classifyStreamError reads the stream's state).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// run streams from the checkpoint until an error, or until ctx ends (then
// it commits what is complete).
func (s *stream) run(ctx context.Context) (err error) {
	stagesCtx, stop := context.WithCancel(ctx)
	g, stages := errgroup.WithContext(stagesCtx)
	queue := eventQueue{events: make(chan *replication.BinlogEvent, eventQueueSize), over: stages.Done()}
	syncer := replication.NewBinlogSyncer(s.syncerConfig(queue))
	defer syncer.Close()
	defer stop() // before Close: a read stage waiting on the queue gives up
	streamer, err := s.start(syncer)
	if err != nil {
		return err
	}
	s.t.state.connected.Store(true)
	defer s.t.state.connected.Store(false)
	defer func() {
		if err != nil {
			// Also waits for a commit still running in the background:
			// the next stream starts from whatever Kafka really holds.
			err = s.pub.abort(context.WithoutCancel(ctx), err)
		}
	}()
	if err := s.commitSchemaSnapshot(ctx); err != nil {
		return err
	}
	g.Go(func() error { return watch(stages, streamer) })
	g.Go(func() error { return s.process(ctx, stages, queue.events) })
	err = g.Wait()
	if re := (*readError)(nil); errors.As(err, &re) {
		return s.classifyStreamError(re.err)
	}
	return err
}

// start opens the binlog stream at the checkpoint.
func (s *stream) start(syncer *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
	pos := s.cp.Position
	var streamer *replication.BinlogStreamer
	var err error
	if pos.GTID != "" {
		if s.gtids, err = pos.gtidSet(); err != nil {
			return nil, &FatalError{err}
		}
		streamer, err = syncer.StartSyncGTID(s.gtids.Clone())
	} else {
		streamer, err = syncer.StartSync(mysql.Position{Name: pos.File, Pos: pos.Pos})
	}
	if err != nil {
		return nil, fmt.Errorf("starting binlog stream at %s: %w", pos, err)
	}
	s.file = pos.File
	s.sched.pos = pos
	return streamer, nil
}

// commitSchemaSnapshot writes a fresh information_schema snapshot to the
// schema history: it is the schema at the checkpoint, so both commit
// before anything is built on them.
func (s *stream) commitSchemaSnapshot(ctx context.Context) error {
	if len(s.historyKeys) == 0 {
		return nil
	}
	if err := s.pub.produceSchemaHistory(ctx, s.schema, s.historyKeys); err != nil {
		return err
	}
	return s.commitNow(ctx)
}

// watch is the watch stage: it returns the binlog connection's error, or
// nil when the stream ends.
func watch(ctx context.Context, streamer *replication.BinlogStreamer) error {
	ev, err := streamer.GetEvent(ctx)
	switch {
	case ctx.Err() != nil:
		return nil
	case err == nil:
		return fmt.Errorf("the binlog streamer delivered a %s event outside the stream's queue", ev.Header.EventType)
	}
	return &readError{err}
}

// process is the process stage. It works under ctx, the tailer's, so
// that a stop commits what is complete; stages is done when the stream
// ends.
func (s *stream) process(ctx, stages context.Context, events <-chan *replication.BinlogEvent) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	defer s.stopReader()
	for {
		if err := s.beforeRead(ctx); err != nil {
			return err
		}
		// Wake at the commit time so an idle source still commits what is
		// complete.
		var due <-chan time.Time
		if at := s.sched.commitAt(time.Now(), s.batch()); !at.IsZero() {
			timer.Reset(time.Until(at))
			due = timer.C
		}
		select {
		case ev := <-events:
			if err := s.handle(ctx, ev); err != nil {
				return err
			}
		case <-s.pub.commitDone():
			// Taken up by beforeRead.
		case <-s.readerOver():
			// A snapshot reader that failed is taken up by beforeRead; one
			// that read its task's last chunk is left to the stream.
		case <-due:
			if err := s.maybeCommit(ctx, true); err != nil {
				return err
			}
		case <-stages.Done():
			if ctx.Err() != nil {
				return s.drain(ctx)
			}
			return nil // another stage failed: its error is the stream's
		}
	}
}

// beforeRead does what is due before the next event: a failed snapshot
// reader taken up and the next task's reader started, the outcome of a background commit that is over (even when the
// source is idle: a failed commit restarts the stream from the checkpoint
// in Kafka at once, not at the next source write), and a deferred commit.
func (s *stream) beforeRead(ctx context.Context) error {
	if err := s.readerFailed(ctx); err != nil {
		return err
	}
	s.startReader(ctx)
	s.snapshotStarted()
	if s.pub.commitOver() {
		if err := s.pub.settle(ctx); err != nil {
			return err
		}
	}
	if s.sched.wanted && !s.pub.committing() {
		return s.maybeCommit(ctx, true)
	}
	return nil
}

// drain commits what is complete when the tailer is asked to stop.
func (s *stream) drain(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if s.sched.txns > 0 && !s.inTxn() && !s.behind() {
		return s.commitNow(dctx)
	}
	// A part of a source transaction is never committed; a commit still
	// running in the background is waited for.
	return s.pub.abort(dctx, nil)
}
