package httpapi

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/reshard"
)

// Options say what the report covers.
type Options struct {
	Brokers         []string
	CheckpointTopic string
	TransactionalID string // the tailer's, keying its checkpoint records
	// TailerHere is true when this process runs the tailer (then its
	// live state is reported, else the stored checkpoint).
	TailerHere      bool
	HeartbeatPeriod time.Duration
	// ReadyMaxLag: /readyz answers 503 while the source lag or the lag of
	// a projection this process runs is above it.
	ReadyMaxLag time.Duration
	// ProjectionLag is readside_projection_lag_seconds of a projection
	// this process runs (false: not known here); nil when none runs here.
	ProjectionLag func(projection string) (float64, bool)
	// DeadLetters is the dead-lettering of a projection this process
	// runs; nil when none runs here.
	DeadLetters func(projection string) projector.DeadLetterStatus
	Projections []Projection
	// Route is the sink that serves a projection now and its routing
	// generation (a reshard may have moved it off the sink the config
	// names); nil: the config's sink (Projection.Sinks).
	Route func(ctx context.Context, projection string) (Route, error)
	// SnapshotLog reads failed snapshot requests; nil: not reported.
	SnapshotLog SnapshotLog
	// Reshards reads the reshards recorded on the sinks; nil: not reported.
	Reshards func(ctx context.Context) ([]reshard.Status, error)
	// ConsistentSinks are the transaction-consistent sinks: /status shows
	// their frontiers, /wait?sink= waits for them.
	ConsistentSinks []ConsistentSink
	// CommitUnderWay reads the commit a consistent sink's applier in this
	// process is making (projector.CommitUnderWay); nil: none here.
	CommitUnderWay func(sink string) (projector.CommitProgress, bool)
}

// Projection is one declared projection as the report sees it.
type Projection struct {
	Name  string
	Topic string
	// Topics are every topic it consumes (its own, its joins' parents');
	// /wait waits on all of them.
	Topics []string
	Group  string // its consumer group
	Sinks  []SinkDSN
	// Here is true when this process runs its projector.
	Here bool
	// Worker is the supervised component that applies it: the
	// projection's own projector, or "sink:<name>", the applier of a
	// transaction-consistent sink (empty: Name).
	Worker string
	// FanOutPending are its joins' pending tables when its fan-out runs
	// in the background (projections.Join.PendingTable); /wait waits for
	// them too.
	FanOutPending []string
}

// topics are the topics p reads: Topics, or its own alone when they are
// not given.
func (p Projection) topics() []string {
	if len(p.Topics) > 0 {
		return p.Topics
	}
	return []string{p.Topic}
}

// Route is the sink a projection applies through, at a routing
// generation, and its servers.
type Route struct {
	Sink       string
	Generation uint64
	Servers    []SinkDSN
}

// SinkDSN is one sink server (a whole sink, or one shard) holding the
// projection's _readside_offsets rows.
type SinkDSN struct {
	Name string // "reads", or "reads/<keyrange>" for a shard
	DSN  string
}

// TailerSource is the live tailer (cdc.Tailer).
type TailerSource interface{ Status() cdc.Status }

// Report is the /status document; docs/operations.md describes each field.
type Report struct {
	Time       time.Time         `json:"time"`
	From       string            `json:"from"` // "daemon" or "stores"
	Healthy    bool              `json:"healthy"`
	Ready      bool              `json:"ready"`
	NotReady   []string          `json:"not_ready,omitempty"`
	Components map[string]string `json:"components,omitempty"`
	// Degraded lists the projections that stopped, or dead-letter every
	// record, while the rest of the process runs (degraded.go).
	Degraded    []Degradation      `json:"degraded,omitempty"`
	Source      SourceStatus       `json:"source"`
	Projections []ProjectionStatus `json:"projections"`
	// Reshards are the projections being (or last) resharded, with their
	// phase and progress (`_readside_reshards`).
	Reshards      []reshard.Status `json:"reshards,omitempty"`
	ReshardsError string           `json:"reshards_error,omitempty"`
	// Rebuilds are the rebuilds and backfills under way (readside replay
	// --rebuild, --backfill) with their phase and progress (rebuilds.go).
	Rebuilds      []RebuildStatus `json:"rebuilds,omitempty"`
	RebuildsError string          `json:"rebuilds_error,omitempty"`
	// Sinks are the transaction-consistent sinks with every shard's
	// frontier (docs/design/consistent-sinks.md).
	Sinks []SinkStatus `json:"sinks,omitempty"`
}

// SourceStatus is the tailer's position and lag.
type SourceStatus struct {
	// Tailer: "connected", "disconnected", or "elsewhere" when this
	// process runs no tailer (position from the checkpoint topic).
	Tailer       string        `json:"tailer"`
	Position     *cdc.Position `json:"position,omitempty"`
	LastVersion  uint64        `json:"last_version,omitempty"`
	CheckpointAt *time.Time    `json:"checkpoint_written_at,omitempty"`
	// LagSeconds: seconds behind the source (0 when a heartbeat showed it
	// caught up); only known where the tailer runs.
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
	// LastHeardSeconds: seconds since the source last sent an event or
	// heartbeat.
	LastHeardSeconds *float64 `json:"last_heard_seconds,omitempty"`
	Error            string   `json:"error,omitempty"`
	// SnapshotFailures are the snapshot requests the tailer failed and
	// skipped recently (cdc.FailureWindow), newest first, each with its fix.
	SnapshotFailures      []cdc.SnapshotFailure `json:"snapshot_failures,omitempty"`
	SnapshotFailuresError string                `json:"snapshot_failures_error,omitempty"`
	// InitialSnapshot is the initial load (per table and overall) as far
	// as the tailer's last committed checkpoint says; absent when there
	// was none (docs/operations.md, "The initial load").
	InitialSnapshot *cdc.InitialSnapshot `json:"initial_snapshot,omitempty"`
}

// ProjectionStatus is one projection's applied position and lag.
type ProjectionStatus struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
	// Sink is the sink the projection applies through and Generation its
	// routing generation (0: the sink the config names, never resharded).
	Sink       string `json:"sink,omitempty"`
	Generation uint64 `json:"generation"`
	// State: "consuming" (its group holds the partitions), "rebalancing",
	// "no consumers", "failed", "stopped" (on an error, alone: StopReason
	// and Fix say why and what to do), "dead-lettering" (every record goes
	// to the dead-letter topic).
	State      string `json:"state"`
	GroupState string `json:"group_state,omitempty"`
	Members    int    `json:"members"`
	// ConsumerLag is the sum over partitions of Lag.
	ConsumerLag int64 `json:"consumer_lag"`
	// LagSeconds is readside_projection_lag_seconds; only known where
	// the projector runs.
	LagSeconds *float64          `json:"lag_seconds,omitempty"`
	Partitions []PartitionStatus `json:"partitions"`
	Error      string            `json:"error,omitempty"`
	StopReason string            `json:"stop_reason,omitempty"`
	Fix        string            `json:"fix,omitempty"`
	// DeadLetters: where the projector runs here.
	DeadLetters *projector.DeadLetterStatus `json:"dead_letters,omitempty"`
}

// PartitionStatus compares a sink's applied offset with the topic's end.
type PartitionStatus struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Applied is the next offset the sink will apply (_readside_offsets);
	// -1 when it has applied nothing of this partition.
	Applied int64 `json:"applied"`
	// End is the last stable offset (what read-committed consumers reach).
	End int64 `json:"end"`
	// Lag is End-Applied less the commit marker that ends every Kafka
	// transaction: 0 when caught up; with several transactions pending it
	// overcounts by one offset per further transaction.
	Lag int64 `json:"lag"`
}

// Collector gathers Reports. NewCollector does no I/O.
type Collector struct {
	opts   Options
	tailer TailerSource // nil when not in this process
	health *Health      // nil when not a daemon
	kcl    *kgo.Client
	adm    *kadm.Client
	dbsMu  sync.Mutex
	dbs    map[string]*sql.DB

	mu     sync.Mutex
	last   Report
	lastAt time.Time
	// history: the lag over the last minutes, for the status page.
	history *lagHistory
}

// NewCollector prepares clients for the broker and the sinks.
func NewCollector(opts Options, tailer TailerSource, health *Health) (*Collector, error) {
	kcl, err := kgo.NewClient(kgo.SeedBrokers(opts.Brokers...))
	if err != nil {
		return nil, err
	}
	c := &Collector{opts: opts, tailer: tailer, health: health, kcl: kcl, adm: kadm.NewClient(kcl), dbs: map[string]*sql.DB{}, history: newLagHistory(HistoryLen)}
	for _, p := range opts.Projections {
		for _, s := range p.Sinks {
			if _, err := c.db(s); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	return c, nil
}

// route is the sink p applies through now (Options.Route), or the
// config's with the error when it cannot be resolved.
func (c *Collector) route(ctx context.Context, p Projection) (Route, error) {
	config := Route{Servers: p.Sinks}
	if c.opts.Route == nil {
		return config, nil
	}
	r, err := c.opts.Route(ctx, p.Name)
	if err != nil {
		return config, fmt.Errorf("resolving its sink: %w", err)
	}
	return r, nil
}

// db is the pool of a sink server, opened at its first use.
func (c *Collector) db(s SinkDSN) (*sql.DB, error) {
	c.dbsMu.Lock()
	defer c.dbsMu.Unlock()
	if db, ok := c.dbs[s.DSN]; ok {
		return db, nil
	}
	cfg, err := driver.ParseDSN(s.DSN)
	if err != nil {
		return nil, fmt.Errorf("sink %s DSN: %w", s.Name, err)
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	c.dbs[s.DSN] = db
	return db, nil
}

// Close releases the clients.
func (c *Collector) Close() {
	c.kcl.Close()
	c.closeSnapshotLog()
	for _, db := range c.dbs {
		db.Close()
	}
}

// Cached returns a report at most maxAge old, collecting a new one if
// needed: probes and scrapes hit the stores at most once per maxAge.
func (c *Collector) Cached(ctx context.Context, maxAge time.Duration) Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lastAt.IsZero() && time.Since(c.lastAt) < maxAge {
		return c.last
	}
	c.last, c.lastAt = c.Collect(ctx), time.Now()
	return c.last
}

// Collect builds a report now.
func (c *Collector) Collect(ctx context.Context) Report {
	r := Report{Time: time.Now().UTC(), From: "stores", Healthy: true}
	notReady := func(format string, args ...any) { r.NotReady = append(r.NotReady, fmt.Sprintf(format, args...)) }
	if c.health != nil {
		r.From = "daemon"
		var reasons []string
		r.Healthy, reasons = c.health.Healthy()
		r.NotReady = append(r.NotReady, reasons...)
		r.Components = c.health.Components()
		r.Degraded = c.health.Degradations()
	}
	r.Source = c.source(ctx, notReady)
	c.snapshotFailures(ctx, &r.Source)
	if c.opts.Reshards != nil {
		var err error
		if r.Reshards, err = c.opts.Reshards(ctx); err != nil {
			r.ReshardsError = err.Error()
		}
	}
	var rebuildsErr error
	if r.Rebuilds, rebuildsErr = c.rebuilds(ctx); rebuildsErr != nil {
		r.RebuildsError = rebuildsErr.Error()
	}

	for _, cs := range c.opts.ConsistentSinks {
		r.Sinks = append(r.Sinks, c.sinkStatus(ctx, cs))
	}

	topics := map[string]bool{} // every topic read, true: a projection's own
	for _, p := range c.opts.Projections {
		for _, t := range p.topics() {
			topics[t] = topics[t] || t == p.Topic
		}
	}
	var ends kadm.ListedOffsets
	var endsErr error
	if len(topics) > 0 {
		names := make([]string, 0, len(topics))
		for t := range topics {
			names = append(names, t)
		}
		// The last stable offset: what a read-committed consumer can reach.
		ends, endsErr = c.adm.ListCommittedOffsets(ctx, names...)
		if endsErr == nil {
			// A parent's or child's topic a connector has not created yet
			// (Debezium creates a table's topic at its first change) holds
			// nothing to apply; a projection's own topic must exist.
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err != nil && endsErr == nil && (topics[o.Topic] || !errors.Is(o.Err, kerr.UnknownTopicOrPartition)) {
					endsErr = fmt.Errorf("%s: %w", o.Topic, o.Err)
				}
			})
		}
		if endsErr != nil {
			notReady("broker: listing end offsets: %v", endsErr)
		}
	}
	var groups kadm.DescribedGroups
	var groupsErr error
	if len(c.opts.Projections) > 0 {
		names := make([]string, 0, len(c.opts.Projections))
		for _, p := range c.opts.Projections {
			names = append(names, p.Group)
		}
		groups, groupsErr = c.adm.DescribeGroups(ctx, names...)
	}
	for _, p := range c.opts.Projections {
		ps := c.projection(ctx, p, ends, endsErr, groups, groupsErr)
		// A degraded projection does not make the process unready: every
		// replica meets the same broken event, so unready would take all
		// of them out of service for one projection (degraded.go).
		degraded := c.isolation(&ps, p, r.Degraded)
		if p.Here && !degraded && ps.State != "consuming" {
			notReady("projection %s is %s", p.Name, ps.State)
		}
		if p.Here && !degraded && c.opts.ProjectionLag != nil {
			if lag, ok := c.opts.ProjectionLag(p.Name); ok {
				ps.LagSeconds = &lag
				if lag > c.opts.ReadyMaxLag.Seconds() {
					notReady("projection %s lag %.1fs is above http.ready_max_lag %s", p.Name, lag, c.opts.ReadyMaxLag)
				}
			}
		}
		r.Projections = append(r.Projections, ps)
	}
	r.Ready = len(r.NotReady) == 0 && r.Healthy
	return r
}

func (c *Collector) source(ctx context.Context, notReady func(string, ...any)) SourceStatus {
	var s SourceStatus
	if !c.opts.TailerHere || c.tailer == nil {
		s.Tailer = "elsewhere"
		cp, found, err := cdc.ReadCheckpoint(ctx, c.opts.Brokers, c.opts.CheckpointTopic, c.opts.TransactionalID)
		switch {
		case err != nil:
			s.Error = fmt.Sprintf("reading the checkpoint topic %s: %v", c.opts.CheckpointTopic, err)
		case found:
			setCheckpoint(&s, &cp)
			s.InitialSnapshot = cdc.InitialSnapshotOf(cp, time.Now())
		}
		initialLoadReady(s.InitialSnapshot, notReady)
		return s
	}
	st := c.tailer.Status()
	s.Tailer = "disconnected"
	if st.Connected {
		s.Tailer = "connected"
	} else {
		notReady("tailer is not connected to the source's binlog")
	}
	setCheckpoint(&s, st.Checkpoint)
	s.InitialSnapshot = st.InitialSnapshot
	initialLoadReady(s.InitialSnapshot, notReady)
	lag := st.LagSeconds
	s.LagSeconds = &lag
	if lag > c.opts.ReadyMaxLag.Seconds() {
		notReady("source lag %.1fs is above http.ready_max_lag %s", lag, c.opts.ReadyMaxLag)
	}
	if !st.LastHeard.IsZero() {
		ago := time.Since(st.LastHeard).Seconds()
		s.LastHeardSeconds = &ago
		if silent := 3 * c.opts.HeartbeatPeriod; st.Connected && ago > silent.Seconds() {
			notReady("nothing from the source for %.1fs (heartbeat every %s)", ago, c.opts.HeartbeatPeriod)
		}
	}
	return s
}

func setCheckpoint(s *SourceStatus, cp *cdc.Checkpoint) {
	if cp == nil {
		return
	}
	pos := cp.Position
	s.Position = &pos
	s.LastVersion = cp.LastVersion
	if !cp.WrittenAt.IsZero() {
		at := cp.WrittenAt
		s.CheckpointAt = &at
	}
}

func (c *Collector) projection(ctx context.Context, p Projection, ends kadm.ListedOffsets, endsErr error, groups kadm.DescribedGroups, groupsErr error) ProjectionStatus {
	ps := ProjectionStatus{Name: p.Name, Topic: p.Topic, Partitions: []PartitionStatus{}}
	var errs []error
	if groupsErr != nil {
		errs = append(errs, fmt.Errorf("describing group %s: %w", p.Group, groupsErr))
	} else if g, ok := groups[p.Group]; ok && g.Err == nil {
		ps.GroupState, ps.Members = g.State, len(g.Members)
	}
	switch {
	case ps.GroupState == "Stable" && ps.Members > 0:
		ps.State = "consuming"
	case ps.Members > 0:
		ps.State = "rebalancing"
	default:
		ps.State = "no consumers"
	}
	if p.Here && c.health != nil {
		// This process's own projector overrides what the group says.
		switch st, err := c.health.State(ProjectorPrefix + cmp.Or(p.Worker, p.Name)); st {
		case StateFailed:
			ps.State = "failed"
			errs = append(errs, err)
		case StateStopped:
			ps.State = "stopped"
		}
	}
	// Applied offsets per sink (shard) of every topic it reads (its own,
	// its joins' and children's: a backlog in any of them is lag); a
	// partition's applied position is the lowest over the shards.
	type topicPart struct {
		topic string
		part  int32
	}
	applied := map[topicPart]int64{}
	r, err := c.route(ctx, p)
	if err != nil {
		errs = append(errs, err)
	}
	servers := r.Servers
	ps.Sink, ps.Generation = r.Sink, r.Generation
	reads := p.topics()
	for _, s := range servers {
		for _, topic := range reads {
			offs, err := c.readOffsets(ctx, s, p.Name, topic)
			if err != nil {
				errs = append(errs, fmt.Errorf("sink %s: %w", s.Name, err))
				continue
			}
			for part, next := range offs {
				k := topicPart{topic, part}
				if cur, ok := applied[k]; !ok || next < cur {
					applied[k] = next
				}
			}
			if endsErr == nil {
				ends.Each(func(o kadm.ListedOffset) {
					if o.Topic != topic || o.Err != nil {
						return
					}
					next, ok := offs[o.Partition]
					if !ok {
						next = -1
					}
					ps.Partitions = append(ps.Partitions, PartitionStatus{Sink: s.Name, Topic: o.Topic, Partition: o.Partition, Applied: next, End: o.Offset, Lag: lag(next, o.Offset)})
				})
			}
		}
	}
	if endsErr == nil && len(servers) > 0 {
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil || !slices.Contains(reads, o.Topic) {
				return
			}
			next, ok := applied[topicPart{o.Topic, o.Partition}]
			if !ok {
				next = -1
			}
			ps.ConsumerLag += lag(next, o.Offset)
		})
	}
	sort.Slice(ps.Partitions, func(i, j int) bool {
		a, b := ps.Partitions[i], ps.Partitions[j]
		if a.Sink != b.Sink {
			return a.Sink < b.Sink
		}
		if ta, tb := slices.Index(reads, a.Topic), slices.Index(reads, b.Topic); ta != tb {
			return ta < tb
		}
		return a.Partition < b.Partition
	})
	if err := errors.Join(errs...); err != nil {
		ps.Error = err.Error()
	}
	return ps
}

// lag counts the offsets between the applied position and the end, less
// the commit marker every transaction ends with (the projector stores the
// offset after its last record, which is before that marker).
func lag(applied, end int64) int64 {
	return max(0, end-max(applied, 0)-1)
}

// readOffsets reads a projection's applied offsets from a sink. A sink
// without the table has applied nothing yet.
func (c *Collector) readOffsets(ctx context.Context, s SinkDSN, projection, topic string) (map[int32]int64, error) {
	db, err := c.db(s)
	if err != nil {
		return nil, err
	}
	return readOffsets(ctx, db, projection, topic)
}

func readOffsets(ctx context.Context, db *sql.DB, projection, topic string) (map[int32]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT part, next_offset FROM `_readside_offsets` WHERE projection = ? AND topic = ?", projection, topic)
	if err != nil {
		var me *driver.MySQLError
		if errors.As(err, &me) && me.Number == 1146 { // ER_NO_SUCH_TABLE
			return map[int32]int64{}, nil
		}
		return nil, fmt.Errorf("reading _readside_offsets: %w", err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var part int32
		var next int64
		if err := rows.Scan(&part, &next); err != nil {
			return nil, err
		}
		out[part] = next
	}
	return out, rows.Err()
}
