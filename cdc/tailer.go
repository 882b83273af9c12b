// Package cdc is readside's source half: it reads the MySQL/MariaDB binlog
// as a replica, turns every committed row change into a versioned change
// event (docs/events.md) and publishes it to Kafka with a transactional
// producer, committing its checkpoint in the same Kafka transaction.
//
// The shape of a run: Tailer.Run checks the source, creates topics, fences
// older producers and loads the checkpoint, then streams. Any stream error
// aborts the open Kafka transaction; transient ones (connection loss,
// broker trouble) restart the stream from the checkpoint that is really in
// Kafka, fatal ones (a row image readside cannot trust, a DDL it cannot
// follow) stop the tailer with a message that says what to do.
package cdc

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/kafkalog"
	"github.com/readside/readside/internal/startup"
)

// Tailer publishes the binlog of one source to Kafka.
type Tailer struct {
	cfg     config.Config
	brokers []string
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time

	// For readside_source_binlog_purge_seconds, read on scrape: how long
	// the source keeps binlogs, and the newest moment the binlog at the
	// checkpoint is known to have been written to (its last committed
	// transaction, or a heartbeat while caught up).
	retention atomic.Int64 // seconds; 0 = never purged automatically
	needsFrom atomic.Int64 // Unix seconds

	state tailerState // for Status
	lag   lagClock    // for readside_source_lag_seconds
}

// FatalError is a condition a restart cannot fix: the tailer stops and the
// message says what the operator must do.
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

func fatalf(format string, args ...any) error {
	return &FatalError{fmt.Errorf(format, args...)}
}

// New validates what the tailer needs; it does no I/O.
func New(cfg config.Config, brokers []string, log *slog.Logger, reg prometheus.Registerer) (*Tailer, error) {
	if len(brokers) == 0 {
		return nil, errors.New("tailer: no Kafka brokers")
	}
	t := &Tailer{cfg: cfg, brokers: brokers, log: log.With("component", "tailer"), now: time.Now}
	m, err := newMetrics(reg, t.secondsToPurge, t.LagSeconds)
	if err != nil {
		return nil, err
	}
	t.metrics = m
	return t, nil
}

// secondsToPurge is a lower bound on how long until the source may purge
// the binlog the checkpoint points into: its retention minus the age of
// the newest write known to be in that binlog. +Inf when the source never
// purges by age.
func (t *Tailer) secondsToPurge() float64 {
	ret := t.retention.Load()
	if ret <= 0 {
		return math.Inf(1)
	}
	from := t.needsFrom.Load()
	if from == 0 {
		return float64(ret)
	}
	return float64(ret) - t.now().Sub(time.Unix(from, 0)).Seconds()
}

// Run tails until ctx is cancelled (returns nil after committing what was
// complete) or a fatal error.
func (t *Tailer) Run(ctx context.Context) error {
	t.lag.started.CompareAndSwap(0, t.now().UnixNano())
	err := t.run(ctx)
	if stoppedWhileStarting(ctx, err) {
		return nil
	}
	return err
}

// stoppedWhileStarting reports an error that the cancellation of ctx
// caused while the tailer was starting up: the cancellation itself, or a
// source connection it cut, which database/sql reports as a bad
// connection rather than as cancelled (a SIGTERM during start-up is a
// requested stop: exit 0, e2e TestSigtermDuringStartup).
func stoppedWhileStarting(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && (errors.Is(err, ctx.Err()) || errors.Is(err, sqldriver.ErrBadConn))
}

func (t *Tailer) run(ctx context.Context) error {
	src, err := openSource(ctx, t.cfg.Source.DSN.Reveal(), t.cfg.Source.Flavor, t.cfg.Source.TLS)
	if err != nil {
		return err
	}
	defer src.Close()
	missing, err := src.checkTables(ctx, t.cfg.Source.Tables)
	if err := errors.Join(src.checkSettings(ctx), err); err != nil {
		return &FatalError{err}
	}
	if len(missing) > 0 {
		t.log.Warn("captured tables do not exist on the source now; their changes are published if they appear in the binlog", "tables", missing)
	}
	if err := src.ensureSignalTables(ctx, t.cfg.Source.Snapshot.SignalDB); err != nil {
		if t.cfg.Source.Snapshot.Mode == "initial" {
			return &FatalError{err}
		}
		t.log.Warn("snapshots unavailable", "err", err)
	}
	if err := t.preflightServerID(ctx, src); err != nil {
		return err
	}
	if ret, err := src.retentionSeconds(ctx); err == nil {
		t.retention.Store(ret)
	} else {
		t.log.Warn("cannot read the source's binlog retention; readside_source_binlog_purge_seconds stays +Inf", "err", err)
	}
	charsets, err := src.charsets(ctx)
	if err != nil {
		return err
	}
	full, rowMetadata, err := src.rowMetadataFull(ctx)
	if err != nil {
		return err
	}
	// The databases whose schema readside tracks itself: without FULL
	// metadata, or with it while the binlog after the checkpoint was
	// written before the switch to FULL (prepareStream).
	var trackedDBs []string
	for _, name := range t.cfg.Source.Tables {
		db, _, _ := config.SplitTable(name)
		if !slices.Contains(trackedDBs, db) {
			trackedDBs = append(trackedDBs, db)
		}
	}
	if !full {
		t.log.Warn("the binlog does not name columns: readside tracks the schema itself (information_schema snapshot plus DDL from the binlog); "+
			"binlog_row_metadata=FULL is more robust (docs/operations.md, \"schema history\")", "binlog_row_metadata", rowMetadata)
	}
	pub, err := newPublisher(t.brokers, t.cfg.TransactionalID(), event.CheckpointTopic(t.cfg.Kafka.TopicPrefix), t.cfg.Kafka.MaxMessageBytes, Compression(t.cfg.Kafka.Compression), kafkalog.New(t.log.With("component", "kafka")))
	if err != nil {
		return err
	}
	defer pub.Close()
	pub.separateCheckpoint = t.cfg.Kafka.Embedded
	if !full {
		pub.historyTopic = event.SchemaHistoryTopic(t.cfg.Kafka.TopicPrefix)
	}
	captured := map[string]string{}
	var topics []string
	for _, name := range t.cfg.Source.Tables {
		db, tbl, _ := config.SplitTable(name)
		captured[name] = event.TopicFor(t.cfg.Kafka.TopicPrefix, db, tbl)
		topics = append(topics, captured[name])
	}
	partitions, err := pub.ensureTopics(ctx, topics, t.cfg.Kafka.Partitions, t.cfg.Kafka.ReplicationFactor, t.cfg.Kafka.MaxMessageBytes)
	if err != nil {
		return err
	}
	excluded := map[string]map[string]bool{}
	for _, c := range t.cfg.Source.ExcludeColumns {
		i := strings.LastIndexByte(c, '.')
		if excluded[c[:i]] == nil {
			excluded[c[:i]] = map[string]bool{}
		}
		excluded[c[:i]][c[i+1:]] = true
	}

	env := &runEnv{src: src, pub: pub, captured: captured, partitions: partitions, excluded: excluded, charsets: charsets,
		missing: missing, full: full, trackedDBs: trackedDBs}
	backoff := 100 * time.Millisecond
	for {
		// Everything from here on is retried when transient: the source or
		// the brokers being away for a while (a restart, a failover) is not
		// a reason to exit.
		s, err := t.prepareStream(ctx, env)
		started := time.Now()
		if err == nil {
			err = s.run(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		var fatal *FatalError
		switch {
		case errors.As(err, &fatal):
			t.metrics.errors.Inc()
			return err
		case startup.IsConfigError(err):
			// A missing grant or a refused user stays so: retrying
			// would hide it behind WARN lines forever.
			t.metrics.errors.Inc()
			return &FatalError{&startup.ConfigError{What: "source", Msg: startup.Fix(err, "source.dsn"), Err: err}}
		case fenced(err):
			return fatalf("another tailer took over transactional id %s (two instances running?): %w", t.cfg.TransactionalID(), err)
		case errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge):
			// Retrying cannot help: the same record comes again.
			t.metrics.errors.Inc()
			return fatalf("the brokers refused a change event as too large (%w). readside only publishes events within kafka.max_message_bytes (%d) and sets the topics' max.message.bytes to match, "+
				"so a broker limit is lower: raise the brokers' message.max.bytes and socket.request.max.bytes (and replica.fetch.max.bytes on old Kafka) above it, or lower kafka.max_message_bytes "+
				"(a larger row then stops the tailer naming its key; exclude its large columns with source.exclude_columns)", err, t.cfg.Kafka.MaxMessageBytes)
		}
		t.metrics.errors.Inc()
		t.metrics.reconnects.Inc()
		if time.Since(started) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		t.log.Warn("stream interrupted; resuming from the last checkpoint", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff + rand.N(backoff/2)):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// runEnv is what every stream of one Run shares.
type runEnv struct {
	src        *sourceDB
	pub        *publisher
	captured   map[string]string
	partitions map[string]int
	excluded   map[string]map[string]bool
	charsets   map[uint64]string
	missing    []string // captured tables absent at start
	full       bool     // binlog_row_metadata=FULL
	trackedDBs []string // databases whose schema readside tracks (not full)
}

// prepareStream loads the checkpoint (fencing older producers), checks it
// against the source and builds the stream that resumes from it.
func (t *Tailer) prepareStream(ctx context.Context, env *runEnv) (*stream, error) {
	src, pub := env.src, env.pub
	cp, found, err := pub.loadCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	if !found {
		pos, err := src.currentPosition(ctx)
		if err != nil {
			return nil, err
		}
		cp = Checkpoint{Position: pos}
		if t.cfg.Source.Snapshot.Mode == "initial" {
			for _, name := range t.cfg.Source.Tables {
				if !slices.Contains(env.missing, name) {
					cp.Snapshots = append(cp.Snapshots, SnapshotTask{Table: name})
				}
			}
		}
		t.log.Info("no checkpoint: starting at the end of the binlog", "position", pos, "initial_snapshots", len(cp.Snapshots))
	} else {
		t.log.Info("resuming from checkpoint", "position", cp.Position, "last_version", cp.LastVersion)
		t.committed(cp)
	}
	queued := len(cp.Snapshots)
	cp, uncovered := coverTables(cp, found, t.cfg.Source.Tables, env.missing, t.cfg.Source.Snapshot.Mode == "initial")
	for _, task := range cp.Snapshots[queued:] {
		t.log.Info("table added to source.tables since the last start: snapshotting its existing rows", "table", task.Table)
	}
	for _, name := range uncovered {
		t.log.Warn("table added to source.tables since the last start: its existing rows are not published (source.snapshot.mode is never); only changes from now on are",
			"table", name, "fix", "readside snapshot --table "+name)
	}
	if err := src.checkNotPurged(ctx, cp.Position); errors.Is(err, ErrPurged) {
		return nil, fatalf("the source no longer has the binlog after the checkpoint (%v): the changes in between are lost to the stream. Recovery: re-snapshot the captured tables (docs/operations.md, \"binlog purged\"); then restart", err)
	} else if err != nil {
		return nil, err
	}
	if cp.Position.Flavor != src.flavor {
		return nil, fatalf("checkpoint was written for a %s source, but the source is %s: use a new kafka.transactional_id or topic_prefix", cp.Position.Flavor, src.flavor)
	}
	if err := checkSameServer(cp, src); err != nil {
		return nil, err
	}
	var tracker *schemaTracker
	var historyKeys []string
	// What the stream needs, not the server's current setting: a
	// checkpoint taken while the tailer kept a schema history is followed
	// by binlog written without column names, even when the source is FULL
	// now (the switch check asks for); those events use the history until
	// the binlog names columns (stream.tableMap).
	untilNamed := env.full && found && cp.SchemaHistory
	if untilNamed {
		pub.historyTopic = event.SchemaHistoryTopic(t.cfg.Kafka.TopicPrefix)
		t.log.Info("binlog_row_metadata is FULL now, but the binlog after the checkpoint may predate the switch: using the schema history until the binlog names columns", "position", cp.Position)
	}
	if !env.full || untilNamed {
		if tracker, historyKeys, cp, err = t.prepareSchema(ctx, src, pub, cp, found, env.trackedDBs); err != nil {
			return nil, err
		}
	}
	s := &stream{
		t: t, pub: pub, src: src, cp: cp, clock: NewClock(cp.LastVersion), schema: tracker, historyKeys: historyKeys, untilNamed: untilNamed,
		captured: env.captured, partitions: env.partitions, excluded: env.excluded, charsets: env.charsets,
		tables: map[uint64]*table{}, snapshots: slices.Clone(cp.Snapshots), covered: slices.Clone(cp.Tables), lastRequest: cp.LastRequest,
	}
	return s, nil
}

// checkSameServer refuses to resume a file/offset-only checkpoint on
// another server than the one it was read from: the same file name and
// offset there are different transactions (or the middle of one), and
// resuming would silently skip or repeat changes. A GTID checkpoint is
// valid on any server of the topology (failover).
func checkSameServer(cp Checkpoint, src *sourceDB) error {
	if cp.Position.GTID != "" || cp.ServerID == 0 {
		return nil
	}
	if cp.ServerID != src.serverID || cp.ServerUUID != src.serverUUID {
		return fatalf("the checkpoint is a binlog file/offset (%s) on the server with server_id %d%s, but the source now is server_id %d%s: "+
			"file offsets do not carry over to another server. Fix: point source.dsn back at that server; or, to fail over, enable GTIDs on the source (MySQL gtid_mode=ON; MariaDB always has them) so checkpoints carry a GTID set, "+
			"and re-snapshot: start with a new kafka.transactional_id (or topic_prefix) and source.snapshot.mode=initial",
			cp.Position, cp.ServerID, uuidNote(cp.ServerUUID), src.serverID, uuidNote(src.serverUUID))
	}
	return nil
}

func uuidNote(uuid string) string {
	if uuid == "" {
		return ""
	}
	return " (server_uuid " + uuid + ")"
}

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

// DecodingOptions sets how go-mysql decodes row values for the tailer
// (bench's raw parse B0 uses the same). Decimals come as go-mysql's own
// exact text with the column's scale instead of decimal.Decimal, which
// cost a parse and a StringFixed per value (~10% of a narrow drain).
// DATETIME and TIMESTAMP come as time.Time, formatted by appendValue:
// go-mysql's string path is one fmt.Sprintf per value (~9%); zero and
// pre-1970 DATETIMEs still come as strings. Integers come as signed
// (decodeRowsData). A config without its own RowsEventDecodeFunc gets one
// that decodes every rows event that way.
func DecodingOptions(c *replication.BinlogSyncerConfig) {
	c.UseDecimal = false
	c.ParseTime = true
	c.TimestampStringLocation = time.UTC
	if c.RowsEventDecodeFunc == nil {
		c.RowsEventDecodeFunc = func(e *replication.RowsEvent, data []byte) error {
			pos, err := e.DecodeHeader(data)
			if err != nil {
				return err
			}
			return decodeRowsData(e, pos, data)
		}
	}
}

// decodeRowsData decodes the rows of e with every integer read as signed
// (signlessTable).
func decodeRowsData(e *replication.RowsEvent, pos int, data []byte) error {
	tm := e.Table
	e.Table = signlessTable(tm)
	err := e.DecodeData(pos, data)
	e.Table = tm
	return err
}

func (s *stream) syncerConfig() replication.BinlogSyncerConfig {
	t := s.t
	c := replication.BinlogSyncerConfig{
		ServerID:        t.cfg.Source.ServerID,
		Flavor:          s.src.flavor,
		Host:            s.src.host,
		Port:            s.src.port,
		User:            s.src.user,
		Password:        s.src.password,
		TLSConfig:       s.src.tls,
		HeartbeatPeriod: t.cfg.Source.HeartbeatPeriod,
		ReadTimeout:     3 * t.cfg.Source.HeartbeatPeriod,
		// The tailer reconnects itself, from its checkpoint: go-mysql's own
		// retry resumes from wherever it stopped, even mid-transaction.
		DisableRetrySync: true,
		// go-mysql's default read-ahead of 10240 decoded events is up to
		// ~10240 × 8 KiB rows events plus their decoded values: hundreds of
		// MiB on wide rows. A short queue keeps memory bounded; the
		// producer's buffer is the real read-ahead.
		EventCacheCount: 256,
		Logger:          t.log.With("component", "binlog"),
		// Registered as the replica's host (the source's replica list): lets the
		// server_id preflight tell this tailer's own stale session from
		// another replica.
		Localhost: replicaHost(t.cfg.TransactionalID()),
		RowsEventDecodeFunc: func(e *replication.RowsEvent, data []byte) error {
			pos, err := e.DecodeHeader(data)
			if err != nil {
				return err
			}
			// The rows of a table readside does not read stay undecoded:
			// most of a source's binlog is usually other tables (and, with
			// the read tables on the source server, the sink's own writes,
			// which doubled the tailer's decoding in the bench's live runs).
			if !s.readsRows(e.Table) {
				return nil
			}
			// Refuse an oversized rows event before decoding it into Go
			// values (several times its size): memory stays bounded and the
			// operator gets the event and the knob instead of an OOM kill.
			if limit := t.cfg.Source.MaxEventBytes; limit > 0 && len(data) > limit {
				big := &oversizedEvent{size: len(data), limit: limit}
				s.oversized.Store(big)
				return big
			}
			return decodeRowsData(e, pos, data)
		},
	}
	DecodingOptions(&c)
	return c
}

// oversizedEvent is a rows event larger than source.max_event_bytes.
type oversizedEvent struct{ size, limit int }

func (e *oversizedEvent) Error() string {
	return fmt.Sprintf("a binlog rows event of %d bytes is larger than source.max_event_bytes (%d)", e.size, e.limit)
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

// classifyStreamError turns binlog errors the operator must act on into
// fatal errors with the fix.
func (s *stream) classifyStreamError(err error) error {
	// go-mysql wraps the decoder's error with a dump of the whole event:
	// the stream keeps its own record of why.
	if big := s.oversized.Load(); big != nil {
		return fatalf("after the checkpoint %s: %v. It holds one huge row (or update of one): raise source.max_event_bytes above it "+
			"(readside's counterpart of a replica's max_allowed_packet; the tailer holds such an event in memory a few times over), and kafka.max_message_bytes to fit the row's event; "+
			"or exclude the large columns (source.exclude_columns) and restart", s.cp.Position, big)
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		msg := strings.ToLower(me.Message)
		// MariaDB: ER_SLAVE_SAME_ID (4052); MySQL: 1236 with the same words.
		// Reconnecting would steal the id back and forth forever.
		if strings.Contains(msg, "same server_uuid") || strings.Contains(msg, "same server_id") || strings.Contains(msg, "same server id") {
			return fatalf("another binlog client uses source.server_id %d (%s): give each readside tailer (and every other replica) a unique server_id", s.t.cfg.Source.ServerID, me.Message)
		}
	}
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		msg := strings.ToLower(me.Message)
		switch {
		case strings.Contains(msg, "max_allowed_packet"):
			// The source's dump thread read an event longer than it may
			// send (MySQL: the source's max_allowed_packet; MariaDB reads
			// events up to 1 GiB whatever the setting).
			return fatalf("the source cannot send a binlog event after the checkpoint %s: it is larger than the source's max_allowed_packet (server: %s). "+
				"Fix: raise max_allowed_packet on the source (SET GLOBAL max_allowed_packet=1073741824 and in its config; 1 GiB is the largest), then restart readside; "+
				"readside's own limit is source.max_event_bytes. An event over 1 GiB cannot be replicated at all: skip it by re-snapshotting the table (docs/operations.md, \"oversized rows\")", s.cp.Position, me.Message)
		case strings.Contains(msg, "purged") || strings.Contains(msg, "could not find") || strings.Contains(msg, "not find first log"):
			return fatalf("the source no longer has the binlog at the checkpoint %s (%s): the changes in between are lost to the stream. Recovery: re-snapshot the captured tables (docs/operations.md, \"binlog purged\"); then restart", s.cp.Position, me.Message)
		}
		return fatalf("the source refused the binlog stream at %s: %s", s.cp.Position, me.Message)
	}
	return fmt.Errorf("reading binlog: %w", err)
}

func (s *stream) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	s.t.heard()
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.file = string(e.NextLogName)
	case *replication.MariadbGTIDEvent:
		s.beginTxn(e.GTID.String(), !e.IsStandalone())
	case *replication.GTIDEvent:
		next, err := e.GTIDNext()
		if err != nil {
			return fatalf("decoding GTID event at %s:%d: %w", s.file, h.LogPos, err)
		}
		s.beginTxn(next.String(), false)
	case *replication.QueryEvent:
		return s.query(ctx, h, e)
	case *replication.RowsEvent:
		return s.rows(ctx, h, e)
	case *replication.TransactionPayloadEvent:
		// MySQL 8 binlog_transaction_compression: the whole transaction
		// (BEGIN, table maps, rows, XID) is inside, its events written
		// with LogPos 0. go-mysql stamps them with the payload's start
		// and, on the last (the XID), its end; an unstamped one gets the
		// end so a checkpoint never lands at offset 0.
		for _, inner := range e.Events {
			if inner.Header.LogPos == 0 {
				inner.Header.LogPos = h.LogPos
			}
			if err := s.handle(ctx, inner); err != nil {
				return err
			}
		}
	case *replication.XIDEvent:
		return s.endTxn(ctx, h)
	case *replication.HeartbeatEvent:
		// (go-mysql 1.16 decodes heartbeats to HeartbeatEvent, not
		// GenericEvent.) The source has nothing newer: once everything
		// read is committed to Kafka the tailer is caught up, and the
		// binlog it needs is the one being written now.
		if s.pendingTxns == 0 && s.txnGTID == "" && !s.txnBegun {
			s.t.needsFrom.Store(s.t.now().Unix())
			if s.pub.inflight == nil {
				s.t.markCaughtUp()
			}
		}
	}
	return nil
}

func (s *stream) beginTxn(gtid string, begun bool) {
	s.txnGTID, s.txnBegun, s.txnEvents = gtid, begun, 0
}

// endTxn records a complete source transaction and commits the Kafka
// transaction when it is big or old enough.
func (s *stream) endTxn(ctx context.Context, h *replication.EventHeader) error {
	if s.txnGTID != "" && s.gtids != nil {
		if err := s.gtids.Update(s.txnGTID); err != nil {
			return fatalf("tracking GTID %s: %w", s.txnGTID, err)
		}
	}
	if s.pendingTxns == 0 {
		s.pendingSince = time.Now()
	}
	s.pendingTxns++
	if h.LogPos != 0 {
		s.pendingPos.File, s.pendingPos.Pos = s.file, h.LogPos
	} else if s.gtids == nil {
		// Offset 0 is the start of the file: resuming there would replay it.
		return fatalf("transaction end at %s with no binlog offset (LogPos 0) on a source without GTIDs: readside cannot checkpoint after it. Enable GTIDs on the source (gtid_mode=ON)", s.file)
	} // with GTIDs the GTID set is the position; the file/offset stays at the last known one
	s.pendingTS = int64(h.Timestamp)
	s.txnGTID, s.txnBegun = "", false
	s.t.metrics.transactions.Inc()
	return s.maybeCommit(ctx, false)
}

func (s *stream) maybeCommit(ctx context.Context, deadline bool) error {
	if s.pendingTxns == 0 || s.txnBegun || s.txnGTID != "" {
		return nil
	}
	full := s.pub.records >= s.t.cfg.Kafka.CommitEvery
	if !full && !deadline && !s.commitWanted && time.Since(s.batchStart()) < s.t.cfg.Kafka.CommitInterval {
		return nil
	}
	if c := s.pub.inflight; c != nil && !full && !c.finished() {
		// Due by time, not by size: read on and commit when the running
		// commit is done (run wakes on it). A full commit still waits for
		// it here, which bounds what a backlog holds.
		s.commitWanted = true
		return nil
	}
	return s.commit(ctx)
}

// batchStart is when the work of the next Kafka commit began: its first
// produced record, or its first complete source transaction when nothing
// was produced (transactions on tables readside does not capture still
// move the checkpoint).
func (s *stream) batchStart() time.Time {
	if s.pub.records > 0 && s.pub.txnStart.Before(s.pendingSince) {
		return s.pub.txnStart
	}
	return s.pendingSince
}

// commit commits what is complete in the background (the stream reads on
// meanwhile; publisher.commitAsync).
func (s *stream) commit(ctx context.Context) error {
	cp := s.checkpoint()
	needsFrom := s.pendingTS
	err := s.pub.commitAsync(ctx, cp, func(took time.Duration) {
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
	s.pendingTxns = 0
	s.commitWanted = false
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
	pos := s.pendingPos
	pos.Flavor = s.src.flavor
	if s.gtids != nil {
		pos.GTID = s.gtids.String()
	}
	return Checkpoint{Position: pos, LastVersion: s.clock.Last(), WrittenAt: s.t.now().UTC(), Snapshots: slices.Clone(s.snapshots), Tables: slices.Clone(s.covered), LastRequest: s.lastRequest, SchemaHistory: s.schema != nil,
		ServerID: s.src.serverID, ServerUUID: s.src.serverUUID}
}

// query handles a QUERY event: transaction control, and DDL or statement
// DML that touches a captured table.
func (s *stream) query(ctx context.Context, h *replication.EventHeader, e *replication.QueryEvent) error {
	st := parseStatement(string(e.Schema), string(e.Query))
	if s.schema != nil && st.kind != "begin" && st.kind != "commit" && st.kind != "dml" {
		sql, err := ddlText(e, s.charsetOf)
		if err != nil {
			return fatalf("at %s:%d: %w", s.file, h.LogPos, err)
		}
		changed, err := s.schema.apply(string(e.Schema), sql)
		if err != nil {
			return fatalf("at %s:%d: %w", s.file, h.LogPos, err)
		}
		if len(changed) > 0 {
			if err := s.produceHistory(ctx, changed); err != nil {
				return err
			}
			clear(s.tables) // rebuild every table from the new schema
		}
	}
	switch st.kind {
	case "begin":
		s.txnBegun = true
		return nil
	case "commit":
		return s.endTxn(ctx, h)
	case "xa":
		return fatalf("XA transaction on the source at %s:%d (%s): readside does not follow XA yet; it would publish prepared rows that may roll back", s.file, h.LogPos, e.Query)
	case "dml":
		for _, t := range st.tables {
			if _, ok := s.captured[t]; ok {
				return fatalf("statement-format DML on captured table %s at %s:%d (a session set binlog_format=STATEMENT?): the binlog has no row images for it. Fix the writer and re-snapshot %s", t, s.file, h.LogPos, t)
			}
		}
	case "truncate":
		if topic, ok := s.captured[st.tables[0]]; ok {
			if err := s.truncate(ctx, h, st.tables[0], topic); err != nil {
				return err
			}
		}
	case "rename":
		for _, m := range st.moves {
			_, fromCaptured := s.captured[m[0]]
			_, toCaptured := s.captured[m[1]]
			if fromCaptured && !toCaptured {
				return fatalf("captured table %s was renamed to %s at %s:%d, which is not in source.tables: add %s to source.tables (and point projections at it), then restart", m[0], m[1], s.file, h.LogPos, m[1])
			}
		}
	case "drop":
		for _, t := range st.tables {
			if _, ok := s.captured[t]; ok {
				s.t.log.Warn("captured table dropped on the source; its read tables keep their rows", "table", t, "file", s.file, "pos", h.LogPos)
			}
		}
	}
	// DDL and other statements outside BEGIN...COMMIT are transactions of
	// their own.
	if !s.txnBegun {
		return s.endTxn(ctx, h)
	}
	return nil
}

// truncate publishes a 't' event to every partition of the table's topic.
func (s *stream) truncate(ctx context.Context, h *replication.EventHeader, name, topic string) error {
	db, tbl, _ := config.SplitTable(name)
	t := &table{db: db, name: tbl, topic: topic, schema: []byte(`"` + event.FieldSchema + `":null`)}
	src := s.source(h)
	version := s.clock.Next(h.Timestamp)
	for p := range s.partitions[topic] {
		value := appendEvent(nil, t, envelope{op: event.OpTruncate, version: version, src: src, txnSeq: s.txnEvents}, nil, nil, nil)
		if err := s.pub.produce(ctx, newRecord(topic, nil, value, int32(p))); err != nil {
			return err
		}
	}
	s.txnEvents++
	s.t.metrics.events.WithLabelValues(name, "t").Inc()
	return nil
}

func (s *stream) source(h *replication.EventHeader) *source {
	return &source{flavor: s.src.flavor, serverID: h.ServerID, file: s.file, pos: h.LogPos, gtid: s.txnGTID, ts: h.Timestamp}
}

// rows publishes the changes of one rows event of a captured table.
// readsRows reports whether the stream uses the rows of tm's table: a
// captured table or a snapshot signal table. (Called from go-mysql's
// parsing goroutine: it only reads what is fixed for the stream's life.)
func (s *stream) readsRows(tm *replication.TableMapEvent) bool {
	if s.isSignal(tm) {
		return true
	}
	_, ok := s.captured[string(tm.Schema)+"."+string(tm.Table)]
	return ok
}

func (s *stream) isSignal(tm *replication.TableMapEvent) bool {
	if string(tm.Schema) != s.t.cfg.Source.Snapshot.SignalDB {
		return false
	}
	tn := string(tm.Table)
	return tn == watermarkTable || tn == requestTable
}

func (s *stream) rows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent) error {
	if s.isSignal(e.Table) {
		return s.signal(ctx, h, e, string(e.Table.Table))
	}
	name := string(e.Table.Schema) + "." + string(e.Table.Table)
	topic, ok := s.captured[name]
	if !ok {
		return nil // its rows were not even decoded (readsRows)
	}
	switch h.EventType {
	case replication.PARTIAL_UPDATE_ROWS_EVENT:
		return fatalf("partial JSON update of %s at %s:%d (binlog_row_value_options=PARTIAL_JSON in some session): readside needs full row images; turn it off and re-snapshot %s", name, s.file, h.LogPos, name)
	}
	if s.untilNamed && len(e.Table.ColumnName) > 0 {
		// binlog_row_metadata is global: every event from here on names
		// its columns, so checkpoints from here on need no history.
		s.t.log.Info("the binlog names columns from here on (binlog_row_metadata=FULL): schema history no longer used", "position", fmt.Sprintf("%s:%d", s.file, h.LogPos))
		s.schema, s.untilNamed = nil, false
	}
	tbl := s.tables[e.TableID]
	if tbl == nil || tbl.db+"."+tbl.name != name || !tbl.sameShape(e.Table) {
		var err error
		if s.schema != nil && len(e.Table.ColumnName) == 0 {
			tbl, err = trackedTable(e.Table, s.schema.def(string(e.Table.Schema), string(e.Table.Table)), topic, s.excluded[name], s.charsetOf)
		} else {
			tbl, err = newTable(e.Table, topic, s.excluded[name], s.charsetOf)
		}
		if err != nil {
			return &FatalError{fmt.Errorf("at %s:%d: %w", s.file, h.LogPos, err)}
		}
		s.tables[e.TableID] = tbl
	}
	if !fullImage(e.ColumnBitmap1, int(e.ColumnCount)) || (e.ColumnBitmap2 != nil && !fullImage(e.ColumnBitmap2, int(e.ColumnCount))) {
		return fatalf("row image of %s at %s:%d is not FULL (a session set binlog_row_image=MINIMAL or NOBLOB?): readside would publish incomplete rows. Set it back to FULL and re-snapshot %s", name, s.file, h.LogPos, name)
	}
	if err := s.touched(tbl, e.Rows); err != nil {
		return &FatalError{err}
	}
	src := s.source(h)
	var op event.Op
	step := 1
	switch h.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		op = event.OpCreate
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		op, step = event.OpUpdate, 2
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		op = event.OpDelete
	default:
		return fatalf("unknown rows event %s for %s at %s:%d", h.EventType, name, s.file, h.LogPos)
	}
	for i := 0; i+step <= len(e.Rows); i += step {
		version := s.clock.Next(h.Timestamp)
		var err error
		switch {
		case op == event.OpCreate:
			err = s.emit(ctx, tbl, src, event.OpCreate, version, nil, e.Rows[i])
		case op == event.OpDelete:
			err = s.emit(ctx, tbl, src, event.OpDelete, version, e.Rows[i], nil)
		case tbl.keyChanged(e.Rows[i], e.Rows[i+1]):
			// A primary key change is a delete of the old key and a create
			// of the new one, with one version: they may land in different
			// partitions and the version guard makes their order irrelevant.
			if err = s.emit(ctx, tbl, src, event.OpDelete, version, e.Rows[i], nil); err == nil {
				err = s.emit(ctx, tbl, src, event.OpCreate, version, nil, e.Rows[i+1])
			}
		default:
			err = s.emit(ctx, tbl, src, event.OpUpdate, version, e.Rows[i], e.Rows[i+1])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// produceHistory writes schema history records into the open Kafka
// transaction: they commit with the checkpoint past the DDL they follow.
func (s *stream) produceHistory(ctx context.Context, keys []string) error {
	recs, err := s.schema.records(s.pub.historyTopic, s.pub.txnID, keys)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := s.pub.produce(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (s *stream) charsetOf(collation uint64) string { return s.charsets[collation] }

// emit encodes and produces one change (and a tombstone after a delete).
func (s *stream) emit(ctx context.Context, tbl *table, src *source, op event.Op, version uint64, before, after []any) error {
	keyRow := after
	if keyRow == nil {
		keyRow = before
	}
	key, err := tbl.appendKey(s.slab.room(64), keyRow)
	key = s.slab.keep(key)
	if err != nil {
		return &FatalError{fmt.Errorf("encoding key of %s.%s at %s:%d: %w", tbl.db, tbl.name, src.file, src.pos, err)}
	}
	// The value is encoded into room sized from the table's last event of
	// this op, so it rarely grows (each value is handed to Kafka, so none
	// is reused; see slab).
	hint := &tbl.sizeHint[opSlot(op)]
	value, err := appendChange(s.slab.room(*hint+64), tbl, envelope{op: op, version: version, src: src, txnSeq: s.txnEvents}, key, before, after)
	value = s.slab.keep(value)
	if err != nil {
		return &FatalError{fmt.Errorf("encoding %s.%s key %s at %s:%d: %w", tbl.db, tbl.name, key, src.file, src.pos, err)}
	}
	*hint = len(value)
	if len(value) > s.t.cfg.Kafka.MaxMessageBytes {
		return fatalf("change of %s.%s key %s at %s:%d is %d bytes, over kafka.max_message_bytes %d: raise it (readside sets the topic's max.message.bytes to match; the brokers' message.max.bytes must allow it) or exclude the large columns (source.exclude_columns)",
			tbl.db, tbl.name, key, src.file, src.pos, len(value), s.t.cfg.Kafka.MaxMessageBytes)
	}
	s.txnEvents++
	if err := s.pub.produce(ctx, newRecord(tbl.topic, key, value, 0)); err != nil {
		return err
	}
	if op == event.OpDelete {
		// The tombstone lets compaction drop the key once consumers have
		// seen the delete event.
		if err := s.pub.produce(ctx, newRecord(tbl.topic, slices.Clone(key), nil, 0)); err != nil {
			return err
		}
	}
	tbl.counter(s.t.metrics.events, op).Inc()
	return nil
}

// fullImage reports whether a column bitmap has every column set.
func fullImage(bitmap []byte, columns int) bool {
	for i := range columns {
		if i/8 >= len(bitmap) || bitmap[i/8]&(1<<(i%8)) == 0 {
			return false
		}
	}
	return true
}
