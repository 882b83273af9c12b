// Package projections turns declared read models (config `projections:`)
// into what the projector does with each change event: which read table,
// which read key, which columns, and — when an update moves a row to
// another read key — the delete of the old read row and the write of the
// new one with the same version. It is the layer between the event
// contract (event/, which decodes the records) and the Kafka consumer
// runtime (projector/, which polls, applies and dead-letters), and links
// no Kafka client, so the sinks that import it link none either.
package projections

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
	"github.com/readside/readside/expr"
)

// Projection is one compiled declaration.
type Projection struct {
	Name      string
	SourceDB  string
	SourceTbl string
	Topic     string
	Sink      string
	Table     string   // read table name
	Key       []string // read columns of the read table's primary key, shard_by first
	ShardBy   string
	Columns   []Column // read columns in table order: key first, then the rest by name
	// Where filters source rows; nil passes every row.
	Where *Filter
	// Joins are the denormalized parent copies, in declaration order.
	Joins []*Join
	// Aggregation, when set, makes the read table one row per group
	// (aggregate.go).
	Aggregation *Aggregation
	// Children are the nested child arrays, by column name (children.go).
	Children []*Children
	// Replicated projections are copied whole to every shard of the sink.
	Replicated bool
	// ConsistentSink: the sink has consistency: transaction, where the
	// read tables are rebuilt together, never one projection's alone.
	ConsistentSink bool
	// OnError is what a row the sink rejects does: stop or dlq.
	OnError config.OnError
	// ApplyConcurrency is how many sink transactions apply one polled
	// batch at once, each over a disjoint set of partitions.
	ApplyConcurrency int
	// FanOut is when a parent change reaches the read rows of its other
	// children (fanout.go).
	FanOut FanOut
	// SourceTypes reads the source's current column definitions of this
	// projection's tables (SourceColumns); nil when the process cannot
	// read the source. The projector calls it, rarely, to follow a source
	// DDL that its read table no longer fits (schemafollow.go).
	SourceTypes func(ctx context.Context) (Types, error)
	// added is what the source's tables hold now for columns events
	// written before their ALTER lack (addedcolumns.go); shared by copies,
	// swapped whole when SourceColumns reads the source again.
	added *atomic.Pointer[addedColumns]
	// Group is the consumer group of the projection's projectors, and
	// DLQTopic where its rejected rows go (event.Group, event.DLQTopic).
	Group    string
	DLQTopic string
	// prefix is kafka.topic_prefix, which names Group and DLQTopic
	// (WithName).
	prefix string
	// sourceKeys is source.keys: the tables keyed by unique NOT NULL
	// columns instead of a primary key (SourceKeyOf).
	sourceKeys config.TableKeys
	// excluded is source.exclude_columns ("db.table.column"): columns no
	// event carries, which the source tables hold.
	excluded []string
	// scratchDB is source.snapshot.signal_db, where readside's user may
	// create the temporary table exact ENUM and SET names are read through
	// (schema.go, resolveMembers).
	scratchDB string
	// foreignTopics: the topics are another tool's (input.kind:
	// debezium), which may leave columns out of every event by settings
	// readside does not see; addedcolumns.go fills none there.
	foreignTopics bool
	// progressName, when set, is the identity offsets, watermarks and
	// replay requests are kept under instead of Name (WithProgressName).
	progressName string
	// debezium: the topics carry Debezium's envelope (NewDecoder).
	debezium bool
	// avro: they carry it in Avro, its writer schemas held here by id
	// (LoadSchemas); nil for JSON.
	avro *debezium.AvroSchemas
	// live: they carry it in JSON without the schema block, the column
	// types read from the source (LoadSchemas); nil otherwise.
	live *debezium.LiveSchemas
	// liveSource is the source reader live reads column types with
	// (CloseInput closes its pool); nil when live is.
	liveSource *sourceColumns
}

// WithProgressName is p consuming under an identity of its own for where
// it is (its consumer group, dead-letter topic, offsets, watermarks and
// replay requests: OffsetsName) while everything it writes stays p's:
// same Name, so its tombstones, truncation floors and join state are p's
// own on the servers it writes to. A reshard's fill runs so beside the
// live projector (which WithName cannot do: it renames the state too).
func (p *Projection) WithProgressName(name string) *Projection {
	c := *p
	c.progressName = name
	c.Group = event.Group(p.prefix, name)
	c.DLQTopic = event.DLQTopic(p.prefix, name)
	return &c
}

// OffsetsName is the projection name p's offsets, watermarks and replay
// requests are stored under: Name unless WithProgressName set another.
func (p *Projection) OffsetsName() string {
	if p.progressName != "" {
		return p.progressName
	}
	return p.Name
}

// WithName is p under another name, for a rebuild's shadow or a backfill,
// which consume as projections of their own: the consumer group and the
// dead-letter topic follow the name. In p's group the live projector
// would be dealt half of the partitions and the other half would never
// be read.
func (p *Projection) WithName(name string) *Projection {
	c := *p
	c.Name = name
	c.progressName = ""
	c.Group = event.Group(p.prefix, name)
	c.DLQTopic = event.DLQTopic(p.prefix, name)
	return &c
}

// DefaultApplyConcurrency: two transactions keep a sink busy while the
// other one commits (on the benchmark box, 1 → 2 connections is the
// largest step of the raw upsert sweep; docs/benchmarks.md; 4 gained
// nothing for copies: bench/results/history/tuning-log.md, entry 44).
const DefaultApplyConcurrency = 2

// DefaultAggregateApplyConcurrency: an aggregate's transactions write
// their contributions side by side (most of the work, each over its own
// partitions' keys), then queue for the group rows they share, holding
// them to their COMMIT; the fewer and hotter the groups, the longer the
// queue. With four, two can write contributions while the others queue:
// revenue per store (20 groups) drains 30–110% faster than with two
// (tuning-log.md, entry 54).
const DefaultAggregateApplyConcurrency = 4

// maxApplyConcurrency bounds apply_concurrency below the sink's
// connection pool (sinks.Open), which several projections share.
const maxApplyConcurrency = 8

// TopicTables maps each of p's topics to its source table (db.table).
func (p *Projection) TopicTables() map[string]string {
	out := map[string]string{p.Topic: p.SourceDB + "." + p.SourceTbl}
	for _, j := range p.Joins {
		out[j.Topic] = j.ParentDB + "." + j.ParentTbl
	}
	for _, c := range p.Children {
		out[c.Topic] = c.SourceDB + "." + c.SourceTbl
		for _, j := range c.Joins {
			out[j.Topic] = j.ParentDB + "." + j.ParentTbl
		}
	}
	return out
}

// Topics are every topic the projection consumes: its source table's and
// each parent's.
func (p *Projection) Topics() []string {
	out := []string{p.Topic}
	for _, j := range p.Joins {
		if !slices.Contains(out, j.Topic) {
			out = append(out, j.Topic)
		}
	}
	for _, c := range p.Children {
		if !slices.Contains(out, c.Topic) {
			out = append(out, c.Topic)
		}
		for _, j := range c.Joins {
			if !slices.Contains(out, j.Topic) {
				out = append(out, j.Topic)
			}
		}
	}
	return out
}

// Column maps a read column to the source column it copies, or to the
// expression that computes it (computed.go).
type Column struct {
	Name   string // in the read table
	Source string // in the source row
	// Expr computes the column from the source row (see Computed); nil
	// for a bare column reference. Source holds its text then.
	Expr *expr.Expr
	// Type is column_types' override of a computed column's definition.
	Type string
	// typed is Expr checked against the source table (SourceColumns),
	// shared by the copies of the Column; nil for a bare column reference.
	typed *atomic.Pointer[typedExpr]
	// parseErr: the value does not parse as an expression (it may still
	// name a source column).
	parseErr error
}

// Compile validates the declarations that need no live schema and
// compiles them. Every problem of every projection is reported, each
// naming its key; a projection whose from is not db.table is left out.
func Compile(cfg config.Config) ([]*Projection, error) {
	var out []*Projection
	var errs []error
	for _, d := range CompileEach(cfg) {
		if j, ok := d.Err.(interface{ Unwrap() []error }); ok {
			errs = append(errs, j.Unwrap()...) // one flat list, as before
		}
		if d.P != nil {
			out = append(out, d.P)
		}
	}
	return out, errors.Join(errs...)
}

// Declared is one projection as Compile makes it, with its own problems.
type Declared struct {
	Name string
	// P is the compiled projection, nil when its from is not db.table.
	// With Err set it is incomplete (what failed is left out or marked),
	// but SourceColumns may still check it against the source: it skips
	// only the checks that depend on what failed, so that `readside
	// check` lists every problem in one run.
	P   *Projection
	Err error // every declaration problem of the projection, joined
}

// CompileEach compiles every projection on its own, in name order: one
// projection's problems never hide another's.
func CompileEach(cfg config.Config) []Declared {
	names := make([]string, 0, len(cfg.Projections))
	for name := range cfg.Projections {
		names = append(names, name)
	}
	sort.Strings(names)
	captured := map[string]bool{}
	for _, t := range cfg.Source.Tables {
		captured[t] = true
	}
	out := make([]Declared, 0, len(names))
	for _, name := range names {
		p, errs := compileOne(cfg, name, captured)
		out = append(out, Declared{Name: name, P: p, Err: errors.Join(errs...)})
	}
	return out
}

// compileOne compiles projection name; p is nil when its from is not
// db.table (nothing can be checked against the source then), yet every
// other declaration problem is still returned.
func compileOne(cfg config.Config, name string, captured map[string]bool) (*Projection, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	d := cfg.Projections[name]
	key := "projections." + name
	db, tbl, fromOK := config.SplitTable(d.From)
	if !fromOK {
		bad("%s.from %q: want db.table, e.g. shop.orders", key, d.From)
	} else if !captured[d.From] {
		bad("%s.from %s is not in source.tables: add it there", key, d.From)
	}
	if _, ok := cfg.Sinks[d.Sink]; !ok {
		bad("%s.sink %q is not a configured sink: declare it under sinks.%s or use one of the configured sinks", key, d.Sink, d.Sink)
	}
	var where *Filter
	if d.Where != "" {
		var err error
		if where, err = compileWhere(d.Where); err != nil {
			bad("%s.where %q: %v (a SQL condition on the source row, e.g. status <> 'draft')", key, d.Where, err)
		}
	}
	errs = append(errs, declarationErrors(cfg, d, name, key)...)
	p := newProjection(cfg, name, d, db, tbl, where)
	aggregate := d.Aggregated()
	if aggregate {
		errs = append(errs, compileAggregate(p, d, key)...)
		if sink, ok := cfg.Sinks[d.Sink]; ok && len(sink.Shards) > 1 && d.ShardBy == "" {
			errs = append(errs, unshardedAggregateError(p, key, d.From, d.Sink, len(sink.Shards)))
		}
	} else {
		errs = append(errs, compileColumns(p, d, key)...)
	}
	errs = append(errs, compileChildren(cfg, p, d, key, captured)...)
	for i, jd := range d.Join {
		j, jerrs := compileJoin(cfg, p, d, i, jd, captured)
		errs = append(errs, jerrs...)
		if j != nil {
			p.Joins = append(p.Joins, j)
		}
	}
	resolveJoinedGroups(p)
	errs = append(errs, compileFanOut(p, d, key)...)
	if !fromOK {
		return nil, errs
	}
	return p, errs
}

// declarationErrors are the problems of a projection's own keys that need
// nothing compiled: sharding, key and columns, names, on_error and
// apply_concurrency.
func declarationErrors(cfg config.Config, d config.Projection, name, key string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if sink, ok := cfg.Sinks[d.Sink]; ok && sink.Consistency.Transactional() {
		// A row held back or applied later is a state the source never
		// had (docs/design/consistent-sinks.md).
		if d.OnError == config.OnErrorDLQ {
			bad("%s.on_error: dlq cannot be used on sink %s (consistency: transaction): a dead-lettered row leaves the read tables in a state the source never had; remove on_error (a row the sink rejects then stops the sink's applier, naming it) or put the projection on a sink with consistency: row", key, d.Sink)
		}
		if d.FanOut == FanOutBackground.String() {
			bad("%s.fan_out: background cannot be used on sink %s (consistency: transaction): the copies would land after the commit that changed the parent; remove fan_out (the copies then go in the same transaction)", key, d.Sink)
		}
	}
	if d.Replicated && d.ShardBy != "" {
		bad("%s: replicated projections are copied to every shard and take no shard_by: remove one of them", key)
	}
	if d.Replicated && len(d.Join) > 0 {
		bad("%s: a replicated (reference) projection cannot have joins: join the reference table from the projections that read it instead", key)
	}
	if sink, ok := cfg.Sinks[d.Sink]; ok && len(sink.Shards) > 1 && d.ShardBy == "" && !d.Replicated && !d.Aggregated() {
		if len(d.Join) > 0 {
			bad("%s: sink %s has %d shards: set shard_by to one of the key columns %v (a projection with joins cannot be replicated)", key, d.Sink, len(sink.Shards), d.Key)
		} else {
			bad("%s: sink %s has %d shards: set shard_by to one of the key columns %v, or replicated: true to copy the table to every shard", key, d.Sink, len(sink.Shards), d.Key)
		}
	}
	aggregate := d.Aggregated()
	if len(d.Key) == 0 && !aggregate {
		bad("%s.key is empty: list the read table's primary key columns", key)
	}
	if len(d.Columns) == 0 && !aggregate {
		bad("%s.columns is empty: map read columns to source columns, e.g. {id: id}", key)
	}
	for c := range d.Columns {
		if why := readColumnProblem(c); why != "" {
			bad("%s.columns.%s: %s: rename the column", key, c, why)
		}
	}
	if table := cmp.Or(d.Table, name); identProblem(table) != "" {
		bad("%s: read table %q: %s: set %s.table to a valid name", key, table, identProblem(table), key)
	}
	for _, k := range d.Key {
		if _, ok := d.Columns[k]; !ok {
			bad("%s.key column %q is not in %s.columns: add it there", key, k, key)
		}
	}
	if d.ShardBy != "" && !slices.Contains(d.Key, d.ShardBy) && !aggregate {
		bad("%s.shard_by %q must be one of its key columns %v: add it to key or shard by a key column", key, d.ShardBy, d.Key)
	}
	if err := d.OnError.Check(); err != nil {
		bad("%s.on_error %v", key, err)
	}
	if d.ApplyConcurrency < 0 || d.ApplyConcurrency > maxApplyConcurrency {
		bad("%s.apply_concurrency %d: want 1 to %d (0 or unset: %d, %d for an aggregate)", key, d.ApplyConcurrency, maxApplyConcurrency, DefaultApplyConcurrency, DefaultAggregateApplyConcurrency)
	}
	return errs
}

// RebuildHow says how to fill p's read table anew from the topics:
// readside replay --rebuild, or, on a transaction-consistent sink, where
// one projection rebuilt alone would show another point of the source
// than the others, the rebuild of the whole sink.
func (p *Projection) RebuildHow() string {
	if p.ConsistentSink {
		return fmt.Sprintf("rebuild sink %s (consistency: transaction): stop readside, drop every table of the sink's database on every shard (the read tables with their state tables, _readside_frontier and the other bookkeeping: readside creates its own again), then start readside (docs/operations.md, \"Transaction-consistent sinks\")", p.Sink)
	}
	return fmt.Sprintf("readside replay --projection %s --rebuild", p.Name)
}

// newProjection is projection name with its declared settings and their
// defaults, and its key with the shard key first; its columns are
// compileColumns' or compileAggregate's.
func newProjection(cfg config.Config, name string, d config.Projection, db, tbl string, where *Filter) *Projection {
	p := &Projection{added: new(atomic.Pointer[addedColumns]), Name: name, SourceDB: db, SourceTbl: tbl, Topic: TopicOf(cfg, db, tbl), debezium: cfg.ReadsDebezium(),
		Group: event.Group(cfg.Kafka.TopicPrefix, name), DLQTopic: event.DLQTopic(cfg.Kafka.TopicPrefix, name), prefix: cfg.Kafka.TopicPrefix,
		Sink: d.Sink, Table: d.Table, ShardBy: d.ShardBy, Where: where, Replicated: d.Replicated, OnError: d.OnError,
		sourceKeys: cfg.Source.Keys, excluded: cfg.Source.ExcludeColumns, scratchDB: cfg.Source.Snapshot.SignalDB, foreignTopics: cfg.Input.Kind == config.InputDebezium, avro: avroInput(cfg)}
	p.live, p.liveSource = liveInput(cfg)
	p.ConsistentSink = cfg.Sinks[d.Sink].Consistency.Transactional()
	if p.Table == "" {
		p.Table = name
	}
	if p.OnError == "" {
		p.OnError = config.OnErrorStop
	}
	p.ApplyConcurrency = d.ApplyConcurrency
	if p.ApplyConcurrency == 0 {
		p.ApplyConcurrency = DefaultApplyConcurrency
		if d.Aggregated() {
			p.ApplyConcurrency = DefaultAggregateApplyConcurrency
		}
	}
	// The shard key leads the primary key (co-locates what is read together).
	if d.ShardBy != "" {
		p.Key = append(p.Key, d.ShardBy)
	}
	for _, k := range d.Key {
		if k != d.ShardBy {
			p.Key = append(p.Key, k)
		}
	}
	return p
}

// SourceKeyOf is the source.keys columns of db.table, nil when the tailer
// keys that table's events by its primary key.
func (p *Projection) SourceKeyOf(db, table string) []string {
	return p.sourceKeys[db+"."+table]
}

// CheckSourceKey verifies, against the source table's primary key, that
// the read key includes every source key column: then each read row comes
// from exactly one source row, whose changes all sit in one partition.
func (p *Projection) CheckSourceKey(sourcePK []string) error {
	var missing []string
	for _, pk := range sourcePK {
		found := false
		for _, k := range p.Key {
			if p.column(k).Source == pk {
				found = true
			}
		}
		if !found {
			missing = append(missing, pk)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("projections.%s.key must include the source's primary key column(s) %v (mapped under any name): otherwise two source rows could share one read row", p.Name, missing)
	}
	return nil
}

func (p *Projection) column(name string) Column {
	for _, c := range p.Columns {
		if c.Name == name {
			return c
		}
	}
	return Column{}
}
