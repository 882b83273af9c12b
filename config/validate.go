package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Validate checks the config without I/O and returns every problem, each
// naming the key and the fix. Checks that need the live servers belong to
// `readside check`.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Source.DSN == "" {
		bad("source.dsn is empty: set it (or source.dsn_file) to the replication user's DSN, e.g. \"repl:${MYSQL_PASSWORD}@tcp(127.0.0.1:3306)/\"")
	} else if _, err := mysql.ParseDSN(c.Source.DSN.Reveal()); err != nil {
		bad("source.dsn %s is not a valid DSN: %v; use the form user:password@tcp(host:port)/", c.Source.DSN, err)
	}
	if c.Source.ServerID == 0 {
		bad("source.server_id is 0 or missing: set a number unique among the source's replicas, e.g. 4242")
	}
	if c.Source.MaxEventBytes < 1<<20 {
		bad("source.max_event_bytes is %d: set at least 1048576 (1 MiB; default 64 MiB)", c.Source.MaxEventBytes)
	}
	if len(c.Source.Tables) == 0 {
		bad("source.tables is empty: list the tables to capture as db.table")
	}
	seen := map[string]bool{}
	for _, t := range c.Source.Tables {
		if _, _, ok := SplitTable(t); !ok && strings.Count(t, ".") > 1 {
			bad("source.tables entry %q: want db.table; a database or table whose name holds a dot cannot be captured (readside names a table db.table everywhere, its topic prefix.db.table): rename it (RENAME TABLE) before capturing it", t)
		} else if !ok {
			bad("source.tables entry %q: want db.table", t)
		}
		if seen[t] {
			bad("source.tables lists %q twice: remove one", t)
		}
		seen[t] = true
	}
	for _, col := range c.Source.ExcludeColumns {
		if strings.Count(col, ".") != 2 {
			bad("source.exclude_columns entry %q: want db.table.column", col)
		}
	}
	errs = append(errs, c.Source.validateKeys()...)
	if err := c.Source.Flavor.Check(); err != nil {
		bad("source.flavor %v", err)
	}
	if c.Source.HeartbeatPeriod <= 0 {
		bad("source.heartbeat_period must be positive, e.g. 2s")
	}
	if err := c.Source.Snapshot.Mode.Check(); err != nil {
		bad("source.snapshot.mode %v", err)
	}
	if c.Source.Snapshot.ChunkRows <= 0 {
		bad("source.snapshot.chunk_rows must be positive, e.g. 10000")
	}
	if c.Source.Snapshot.SignalDB == "" {
		bad("source.snapshot.signal_db is empty: name a database readside may write its watermark table to, e.g. readside")
	}
	if err := c.Source.TLS.Mode.Check(); err != nil {
		bad("source.tls.mode %v", err)
	}
	errs = append(errs, c.Kafka.errors()...)
	errs = append(errs, c.formatErrors()...)
	errs = append(errs, c.inputErrors()...)
	errs = append(errs, c.sinkModeErrors()...)
	if err := c.Log.Level.Check(); err != nil {
		bad("log.level %v", err)
	}
	if err := c.Log.Format.Check(); err != nil {
		bad("log.format %v", err)
	}
	if c.Log.ProgressEvery < 0 {
		bad("log.progress_every %s is negative: want a duration like 1m, or 0 for no progress summary", c.Log.ProgressEvery)
	}
	if len(c.Kafka.Brokers) == 0 {
		if err := CheckLoopback(c.Kafka.EmbeddedListen); err != nil {
			bad("kafka.embedded_listen: %v", err)
		}
		if c.DataDir == "" {
			bad("data_dir is empty: the embedded broker (no kafka.brokers) keeps its data there; set it, e.g. ./data")
		}
	}
	if c.HTTP.ReadyMaxLag <= 0 {
		bad("http.ready_max_lag must be positive, e.g. 30s")
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown_timeout must be positive, e.g. 30s")
	}
	if c.Check.ExpectedDowntime < 0 {
		bad("check.expected_downtime must not be negative, e.g. 24h")
	}
	return errors.Join(errs...)
}

// CheckLoopback accepts host:port with a loopback IP or "localhost": the
// embedded broker has no authentication, so it never listens beyond the
// machine.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (%v): use e.g. 127.0.0.1:9092", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number: use e.g. 127.0.0.1:9092", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address: the embedded broker has no authentication and listens on loopback only; use 127.0.0.1:PORT, or run a real broker and set kafka.brokers", addr)
	}
	return nil
}

// SplitTable splits "db.table" into its parts.
func SplitTable(s string) (db, table string, ok bool) {
	db, table, ok = strings.Cut(s, ".")
	return db, table, ok && db != "" && table != "" && !strings.Contains(table, ".")
}

// TransactionalID is the tailer's Kafka transactional id.
func (c Config) TransactionalID() string { return c.Kafka.TailerTransactionalID(c.Source.ServerID) }

// TailerTransactionalID is the Kafka transactional id of the tailer that
// connects to the source as serverID: kafka.transactional_id, else
// readside-tailer-<server_id>.
func (k Kafka) TailerTransactionalID(serverID uint32) string {
	if k.TransactionalID != "" {
		return k.TransactionalID
	}
	return fmt.Sprintf("readside-tailer-%d", serverID)
}

// TransactionalSinks reports a sink with consistency: transaction: the
// tailer's checkpoints then carry the cut it applies up to.
func (c Config) TransactionalSinks() bool {
	for _, sink := range c.Sinks {
		if sink.Consistency.Transactional() {
			return true
		}
	}
	return false
}

// validTopicPart reports whether s can start a Kafka topic name: Kafka
// allows only ASCII letters, digits, '.', '_' and '-' (and 249 characters
// in all, which leaves the table part room).
func validTopicPart(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// sinkModeErrors are the sinks' enumerated settings that are out of their
// choices, in sink name order.
func (c Config) sinkModeErrors() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Sinks)) {
		if err := c.Sinks[name].Consistency.Check(); err != nil {
			errs = append(errs, fmt.Errorf("sinks.%s.consistency %v", name, err))
		}
	}
	return errs
}

// errors are the kafka section's own problems (its format's are
// formatErrors': they depend on other sections too).
func (k Kafka) errors() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !validTopicPart(k.TopicPrefix) {
		bad("kafka.topic_prefix %q: want a non-empty name of letters, digits, '.', '_' or '-'", k.TopicPrefix)
	}
	if k.Partitions <= 0 {
		bad("kafka.partitions must be positive, e.g. 6")
	}
	if k.CommitEvery <= 0 {
		bad("kafka.commit_every must be positive, e.g. 20000")
	}
	if k.CommitInterval <= 0 {
		bad("kafka.commit_interval must be positive, e.g. 200ms")
	}
	if k.MaxMessageBytes < 1024 {
		bad("kafka.max_message_bytes must be at least 1024, e.g. 1048576")
	}
	if err := k.Compression.Check(); err != nil {
		bad("kafka.compression %v", err)
	}
	return errs
}
