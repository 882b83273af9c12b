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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/compression"
	"github.com/readside/readside/internal/kafkalog"
	"github.com/readside/readside/internal/startup"
)

// Config is the part of the configuration file the tailer reads.
type Config struct {
	Source config.Source
	Kafka  config.Kafka
	// Cuts: every checkpoint carries Checkpoint.Published, the cut a sink
	// with consistency: transaction applies up to
	// (config.Config.TransactionalSinks).
	Cuts bool
}

// TransactionalID is the tailer's Kafka transactional id.
func (c Config) TransactionalID() string { return c.Kafka.TailerTransactionalID(c.Source.ServerID) }

// Tailer publishes the binlog of one source to Kafka.
type Tailer struct {
	cfg     Config
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
	load  loadTracker // the initial load, for Status and its log lines
	lag   lagClock    // for readside_source_lag_seconds

	// embedded: the broker is the embedded one (EmbeddedBroker).
	embedded bool
	// registry holds kafka.format: debezium-avro's schemas.
	registry *debezium.SchemaRegistry
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
func New(cfg Config, brokers []string, log *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Tailer, error) {
	if len(brokers) == 0 {
		return nil, errors.New("tailer: no Kafka brokers")
	}
	t := &Tailer{cfg: cfg, brokers: brokers, log: log.With("component", "tailer"), now: time.Now}
	if cfg.Kafka.Format.Debezium() {
		if c := debezium.TopicCollisions(cfg.Kafka.TopicPrefix, cfg.Source.Tables); len(c) > 0 {
			return nil, fmt.Errorf("%s: rename one of the tables, or capture them from two deployments with different kafka.topic_prefix values", strings.Join(c, "; "))
		}
		if d := cfg.Kafka.Debezium; d.Provide.Transaction.Metadata {
			if c := debezium.TransactionTopicCollision(cfg.Kafka.TransactionTopic(), cfg.Kafka.TopicPrefix, cfg.Source.Tables); c != "" {
				return nil, fmt.Errorf("%s. Fix: set kafka.debezium.topic.transaction to a name no table's topic has (Debezium's default: transaction)", c)
			}
		}
	}
	if cfg.Kafka.Format == config.FormatDebeziumAvro {
		t.registry = debezium.NewSchemaRegistry(cfg.Kafka.SchemaRegistry.URL, "kafka.schema_registry.url")
		if err := t.registry.Check(); err != nil {
			return nil, err
		}
	}
	for _, o := range opts {
		o(t)
	}
	m, err := newMetrics(reg, t.secondsToPurge, t.LagSeconds)
	if err != nil {
		return nil, err
	}
	t.metrics = m
	t.load.now, t.load.log = t.now, t.log
	if err := t.load.register(reg); err != nil {
		return nil, err
	}
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
	src.scratchDB = t.cfg.Source.Snapshot.SignalDB
	env, err := t.checkSource(ctx, src)
	if err != nil {
		return err
	}
	pub, err := newPublisher(t.brokers, t.cfg.TransactionalID(), event.CheckpointTopic(t.cfg.Kafka.TopicPrefix), t.cfg.Kafka.MaxMessageBytes, compression.Option(t.cfg.Kafka.Compression), kafkalog.New(t.log))
	if err != nil {
		return err
	}
	defer pub.Close()
	if t.embedded {
		pub.separateCheckpoints()
	}
	if t.cfg.Cuts {
		pub.trackPublished()
	}
	if !env.full {
		pub.keepSchemaHistory(event.SchemaHistoryTopic(t.cfg.Kafka.TopicPrefix))
	}
	if newTxnMeta(t.cfg) != nil {
		pub.keepTransactionTopic(t.cfg.Kafka.TransactionTopic())
	}
	env.pub = pub
	if env.partitions, err = pub.ensureTopics(ctx, env.topics, t.cfg.Kafka.Partitions, t.cfg.Kafka.ReplicationFactor, t.cfg.Kafka.MaxMessageBytes); err != nil {
		return err
	}
	return t.streamUntilStopped(ctx, env)
}

// checkSource checks the source's settings and tables and reads what every
// stream of this Run shares from it.
func (t *Tailer) checkSource(ctx context.Context, src *sourceDB) (*runEnv, error) {
	missing, problems, err := src.checkTables(ctx, t.cfg.Source.Tables, t.cfg.Source.Keys)
	if err != nil {
		return nil, err
	}
	errs := []error{src.checkSettings(ctx)}
	for _, p := range problems {
		errs = append(errs, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &FatalError{err}
	}
	if len(missing) > 0 {
		t.log.Warn("captured tables do not exist on the source now; their changes are published if they appear in the binlog", "tables", missing)
	}
	if err := src.ensureSignalTables(ctx, t.cfg.Source.Snapshot.SignalDB); err != nil {
		if t.cfg.Source.Snapshot.Mode == config.SnapshotInitial {
			return nil, &FatalError{err}
		}
		t.log.Warn("snapshots unavailable", "err", err)
	}
	if err := t.preflightServerID(ctx, src); err != nil {
		return nil, err
	}
	if ret, err := src.retentionSeconds(ctx); err == nil {
		t.retention.Store(ret)
	} else {
		t.log.Warn("cannot read the source's binlog retention; readside_source_binlog_purge_seconds stays +Inf", "err", err)
	}
	charsets, collations, err := src.charsets(ctx)
	if err != nil {
		return nil, err
	}
	full, rowMetadata, err := src.rowMetadataFull(ctx)
	if err != nil {
		return nil, err
	}
	if !full {
		t.log.Warn("the binlog does not name columns: readside tracks the schema itself (information_schema snapshot plus DDL from the binlog); "+
			"binlog_row_metadata=FULL is more robust (docs/operations.md, \"schema history\")", "binlog_row_metadata", rowMetadata)
	}
	env := &runEnv{src: src, charsets: charsets, collations: collations, missing: missing, full: full}
	env.capture(t.cfg)
	return env, nil
}

// streamUntilStopped runs streams until ctx is cancelled or one fails for
// good. Everything it retries is transient: the source or the brokers
// being away for a while (a restart, a failover) is not a reason to exit.
func (t *Tailer) streamUntilStopped(ctx context.Context, env *runEnv) error {
	backoff := 100 * time.Millisecond
	for {
		s, err := t.prepareStream(ctx, env)
		started := time.Now()
		if err == nil {
			err = s.run(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := t.lasting(err); err != nil {
			return err
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

// lasting returns the fatal error a stream's error stands for, or nil when
// a new stream may succeed.
func (t *Tailer) lasting(err error) error {
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
	return nil
}

// runEnv is what every stream of one Run shares.
type runEnv struct {
	src        *sourceDB
	pub        *publisher
	captured   map[string]string // db.table -> topic
	topics     []string          // in source.tables order
	partitions map[string]int
	excluded   map[string]map[string]bool
	charsets   map[uint64]string
	collations map[uint64]string // collation id -> name
	missing    []string          // captured tables absent at start
	full       bool              // binlog_row_metadata=FULL
	trackedDBs []string          // databases whose schema readside tracks (not full)
}

// capture fills in the captured tables, their topics, their excluded
// columns and the databases whose schema readside tracks itself: without
// FULL metadata, or with it while the binlog after the checkpoint was
// written before the switch to FULL (prepareStream).
func (env *runEnv) capture(cfg Config) {
	env.captured = map[string]string{}
	for _, name := range cfg.Source.Tables {
		db, tbl, _ := config.SplitTable(name)
		env.captured[name] = event.TopicFor(cfg.Kafka.TopicPrefix, db, tbl)
		if cfg.Kafka.Format.Debezium() {
			env.captured[name] = debezium.Topic(cfg.Kafka.TopicPrefix, db, tbl)
		}
		env.topics = append(env.topics, env.captured[name])
		if !slices.Contains(env.trackedDBs, db) {
			env.trackedDBs = append(env.trackedDBs, db)
		}
	}
	env.excluded = map[string]map[string]bool{}
	for _, c := range cfg.Source.ExcludeColumns {
		i := strings.LastIndexByte(c, '.')
		if env.excluded[c[:i]] == nil {
			env.excluded[c[:i]] = map[string]bool{}
		}
		env.excluded[c[:i]][c[i+1:]] = true
	}
}
