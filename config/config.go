// Package config is readside's typed configuration: one struct with koanf
// tags, defaults in one place, environment overrides, secrets from the
// environment or files, and a pure Validate that reports every problem at
// once, each naming the key and the fix. docs/config.md lists every key.
package config

import (
	"time"
)

// Config is the whole configuration file.
type Config struct {
	// Source is the MySQL/MariaDB server whose binlog readside tails.
	Source Source `koanf:"source"`
	// Kafka is where change events go. No brokers means an embedded
	// single-node broker under DataDir.
	Kafka Kafka `koanf:"kafka"`
	// Input is what the projectors read: readside's tailer's topics
	// (default) or a Debezium connector's.
	Input Input `koanf:"input"`
	// DataDir holds local state: the embedded broker's data. Default ./data.
	DataDir string `koanf:"data_dir"`
	// Sinks are the MySQL servers (or shards) holding read tables, by name.
	Sinks map[string]Sink `koanf:"sinks"`
	// Projections are the declared read models, by name.
	Projections map[string]Projection `koanf:"projections"`
	// Verify schedules verification runs.
	Verify Verify `koanf:"verify"`
	// Log configures logging.
	Log Log `koanf:"log"`
	// HTTP is the operations endpoint (/, /metrics, /healthz, /readyz, /status).
	HTTP HTTP `koanf:"http"`
	// ShutdownTimeout bounds the drain after SIGTERM/SIGINT: in-flight
	// batches are committed within it, or the process exits 1. Default 30s.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	// Check tunes `readside check`.
	Check Check `koanf:"check"`
}

// HTTP is the operations endpoint of `readside run`.
type HTTP struct {
	// Listen is the address to serve on, e.g. ":9100"; empty serves
	// nothing. The run flag --http overrides it.
	Listen string `koanf:"listen"`
	// ReadyMaxLag: /readyz answers 503 while the source lag is above it.
	// Default 30s.
	ReadyMaxLag time.Duration `koanf:"ready_max_lag"`
	// Pprof serves Go's profiler under /debug/pprof/ (off by default: it
	// exposes internals and can cost CPU while a profile runs).
	Pprof bool `koanf:"pprof"`
}

// Check tunes `readside check`.
type Check struct {
	// ExpectedDowntime is the longest readside outage to survive: check
	// warns when the source keeps its binlogs for less. Default 24h.
	ExpectedDowntime time.Duration `koanf:"expected_downtime"`
}

// Source is the binlog source.
type Source struct {
	// DSN of the replication user, go-sql-driver form
	// ("user:pw@tcp(host:3306)/"). Needs REPLICATION SLAVE, REPLICATION
	// CLIENT (BINLOG MONITOR on MariaDB) and SELECT.
	DSN Secret `koanf:"dsn"`
	// DSNFile reads DSN from a file (not world-readable) instead.
	DSNFile string `koanf:"dsn_file"`
	// ServerID is the replica server_id readside connects with; unique
	// among the source's replicas and binlog clients.
	ServerID uint32 `koanf:"server_id"`
	// Tables are the captured tables, "db.table".
	Tables []string `koanf:"tables"`
	// ExcludeColumns are never published (PII), "db.table.column".
	ExcludeColumns []string `koanf:"exclude_columns"`
	// Keys names, per captured table ("db.table"), the columns that key
	// its change events instead of a primary key: for tables that have
	// none, the columns of a UNIQUE index (or a superset of one), every
	// one NOT NULL — `readside check` and the tailer verify both on the
	// source. They are the Kafka record key, the row a version belongs
	// to, the snapshot's chunk order and the source key projections
	// check, join and delete by. On a table that has a primary key they
	// replace it, as Debezium's message.key.columns does. Default: none.
	Keys TableKeys `koanf:"keys"`
	// Flavor is "mariadb" or "mysql"; empty detects it from VERSION().
	Flavor Flavor `koanf:"flavor"`
	// HeartbeatPeriod asks the source for a heartbeat when idle; a dead
	// connection is detected after three missed ones. Default 2s.
	HeartbeatPeriod time.Duration `koanf:"heartbeat_period"`
	// TLS to the source.
	TLS TLS `koanf:"tls"`
	// MaxEventBytes is the largest binlog rows event the tailer decodes:
	// readside's counterpart of a replica's max_allowed_packet. A larger
	// event stops the tailer before it is decoded (a memory bound), naming
	// the event and this key. Default 64 MiB.
	MaxEventBytes int `koanf:"max_event_bytes"`
	// Snapshot configures lock-free snapshots of existing rows.
	Snapshot Snapshot `koanf:"snapshot"`
}

// Snapshot configures the watermark-based snapshots (DBLog).
type Snapshot struct {
	// Mode: "initial" snapshots every captured table on the first start
	// (no checkpoint yet), and a table added to Tables later on the next
	// start; "never" starts at the end of the binlog only.
	// Default initial.
	Mode SnapshotMode `koanf:"mode"`
	// ChunkRows is the number of rows read per chunk. Default 10000.
	ChunkRows int `koanf:"chunk_rows"`
	// SignalDB is the source database holding readside's watermark and
	// snapshot-request tables; the tailer's user needs INSERT, UPDATE and
	// CREATE on it. Default "readside".
	SignalDB string `koanf:"signal_db"`
}

// TLS settings for a connection. Mode "verify_identity" is the default
// whenever TLS is enabled; there is no silent fallback to plaintext.
type TLS struct {
	// Mode: "disabled" (default for loopback test setups), "verify_ca"
	// or "verify_identity".
	Mode TLSMode `koanf:"mode"`
	// CAFile is the PEM bundle of trusted CAs; empty uses the system pool.
	CAFile string `koanf:"ca_file"`
	// CertFile and KeyFile are a client certificate, if the server wants one.
	CertFile string `koanf:"cert_file"`
	KeyFile  string `koanf:"key_file"`
}

// Kafka is the broker side.
type Kafka struct {
	// Brokers are seed addresses. Empty: embedded broker under data_dir.
	Brokers []string `koanf:"brokers"`
	// TopicPrefix: topics are <prefix>.<db>.<table>. Default "readside".
	TopicPrefix string `koanf:"topic_prefix"`
	// Partitions of each table topic when readside creates it. Default 6.
	Partitions int32 `koanf:"partitions"`
	// ReplicationFactor of created topics; -1 uses the broker default.
	ReplicationFactor int16 `koanf:"replication_factor"`
	// TransactionalID of the tailer's producer; default
	// "readside-tailer-<server_id>". Two tailers with the same id fence
	// each other: only the newest publishes.
	TransactionalID string `koanf:"transactional_id"`
	// CommitEvery bounds a Kafka transaction: it commits after this many
	// events at the next source transaction boundary. Default 20000: each
	// commit costs a flush and an EndTxn round trip, which larger
	// transactions spread over more events (docs/benchmarks.md).
	CommitEvery int `koanf:"commit_every"`
	// CommitInterval commits at least this often while events flow.
	// Default 200ms.
	CommitInterval time.Duration `koanf:"commit_interval"`
	// GroupInstanceID makes this process a static member of its
	// projections' consumer groups, so a restarted process takes its
	// partitions back at once instead of waiting for its old session to
	// time out. Unique per process; default the host name.
	GroupInstanceID string `koanf:"group_instance_id"`
	// EmbeddedListen is the loopback address of the embedded broker that
	// runs when Brokers is empty. Default 127.0.0.1:9092.
	EmbeddedListen string `koanf:"embedded_listen"`
	// MaxMessageBytes is the largest event readside publishes; a larger row
	// stops the tailer with an error naming it. Default 1 MiB.
	MaxMessageBytes int `koanf:"max_message_bytes"`
	// Compression of the tailer's record batches: lz4 (default), snappy,
	// zstd, gzip or none. lz4 took a third less tailer CPU than snappy on
	// update events (bench/results/history/tuning-log.md).
	Compression Compression `koanf:"compression"`
	// Format is the encoding of the table topics: readside (default),
	// debezium or debezium-avro (docs/debezium.md).
	Format Format `koanf:"format"`
	// Debezium is how kafka.format: debezium encodes values, under
	// Debezium's setting names. Default: Debezium's defaults.
	Debezium Debezium `koanf:"debezium"`
	// SchemaRegistry is where kafka.format: debezium-avro registers its
	// schemas. Required with debezium-avro, refused with other formats.
	SchemaRegistry SchemaRegistry `koanf:"schema_registry"`
}

// Sink is a MySQL server holding read tables, or a set of shards.
type Sink struct {
	DSN     Secret  `koanf:"dsn"`
	DSNFile string  `koanf:"dsn_file"`
	Shards  []Shard `koanf:"shards"`
	// Consistency is row (the default) or transaction
	// (docs/design/consistent-sinks.md).
	Consistency Consistency `koanf:"consistency"`
}

// Shard is one key range of a sharded sink (Vitess-style hex ranges).
type Shard struct {
	KeyRange string `koanf:"keyrange"`
	DSN      Secret `koanf:"dsn"`
	DSNFile  string `koanf:"dsn_file"`
}

// Projection is a declared read model.
type Projection struct {
	From       string            `koanf:"from"`
	Sink       string            `koanf:"sink"`
	Table      string            `koanf:"table"`
	Key        []string          `koanf:"key"`
	ShardBy    string            `koanf:"shard_by"`
	Columns    map[string]string `koanf:"columns"`
	Where      string            `koanf:"where"`
	Join       []Join            `koanf:"join"`
	OnError    OnError           `koanf:"on_error"`
	Replicated bool              `koanf:"replicated"`
	// ApplyConcurrency is how many sink transactions apply one polled
	// batch at once, each over its own partitions. 0: the default (2).
	ApplyConcurrency int `koanf:"apply_concurrency"`
	// FanOut is when a parent change reaches the read rows of the
	// parent's other children: in_batch (the default: in the batch's own
	// transaction) or background (right after it, in short transactions
	// of their own; docs/design/joins.md, "Fan-out in the background").
	FanOut string `koanf:"fan_out"`
	// ColumnTypes overrides the read column definition worked out for a
	// computed column (a `columns` value that is an expression rather
	// than a source column's name), e.g. {month: "char(7)"}, where the
	// inferred type is wider than the values need. Nullability stays
	// inferred.
	ColumnTypes map[string]string `koanf:"column_types"`
	// GroupBy makes this an aggregate projection: one read row per group
	// (read columns, source columns or expressions), holding Aggregates.
	GroupBy []string `koanf:"group_by"`
	// Aggregates maps a read column to an aggregate of the group's source
	// rows: count(*), count(col), sum(col), min(col), max(col),
	// count_if(cond), sum_if(cond, col), avg(col).
	Aggregates map[string]string `koanf:"aggregates"`
	// Children maps a JSON array read column to the child rows it nests.
	Children map[string]Children `koanf:"children"`
}

// Aggregated reports a projection declared as an aggregate (group_by or
// aggregates): its read rows are groups, not source rows.
func (p Projection) Aggregated() bool { return len(p.GroupBy) > 0 || len(p.Aggregates) > 0 }

// Children nests a child table's rows in the parent's read row: a JSON
// array column of one object per child (Columns), in OrderBy order, at most
// Limit of them, and a `<name>_count` column with how many there are.
type Children struct {
	From string `koanf:"from"`
	// On pairs child columns with the parent's (the projection's source)
	// columns: {order_id: id} is order_lines.order_id = orders.id.
	On      map[string]string `koanf:"on"`
	Columns map[string]string `koanf:"columns"`
	OrderBy []string          `koanf:"order_by"`
	Limit   int               `koanf:"limit"`
	// Join copies columns of each child row's own parents into its
	// element, as a projection's join does into its rows.
	Join []Join `koanf:"join"`
}

// Join is a denormalized copy of a parent row's columns.
type Join struct {
	From string `koanf:"from"`
	// As names this join so that a later join can hang off it (Via).
	As string `koanf:"as"`
	// Via, when set, is the As of an earlier join: On then pairs this
	// join's parent columns with columns of that join's parent (a
	// parent's parent), not of the projection's source table.
	Via     string            `koanf:"via"`
	On      map[string]string `koanf:"on"`
	Columns map[string]string `koanf:"columns"`
}

// Verify schedules verification.
type Verify struct {
	Every time.Duration `koanf:"every"`
}

// Log configures logging.
type Log struct {
	// Level: debug, info, warn, error. Default info.
	Level LogLevel `koanf:"level"`
	// Format: text or json. Default text.
	Format LogFormat `koanf:"format"`
	// ProgressEvery is how often `readside run` logs a summary of what it
	// committed since the previous one (nothing when nothing was); 0 turns
	// the summary off. Default 1m.
	ProgressEvery time.Duration `koanf:"progress_every"`
}

// Default is the default layer every loaded config starts from.
func Default() Config {
	return Config{
		Source: Source{HeartbeatPeriod: 2 * time.Second, TLS: TLS{Mode: TLSDisabled}, MaxEventBytes: 64 << 20,
			Snapshot: Snapshot{Mode: SnapshotInitial, ChunkRows: 10000, SignalDB: "readside"}},
		Kafka: Kafka{
			TopicPrefix:       "readside",
			Partitions:        6,
			ReplicationFactor: -1,
			CommitEvery:       20000,
			CommitInterval:    200 * time.Millisecond,
			MaxMessageBytes:   1 << 20,
			Compression:       CompressionLZ4,
			EmbeddedListen:    "127.0.0.1:9092",
			Format:            FormatReadside,
			Debezium:          defaultDebezium(),
		},
		Input:           Input{Kind: InputReadside, Format: InputJSON, Debezium: defaultInputDebezium()},
		DataDir:         "./data",
		Log:             Log{Level: LogInfo, Format: LogText, ProgressEvery: time.Minute},
		HTTP:            HTTP{ReadyMaxLag: 30 * time.Second},
		ShutdownTimeout: 30 * time.Second,
		Check:           Check{ExpectedDowntime: 24 * time.Hour},
	}
}
