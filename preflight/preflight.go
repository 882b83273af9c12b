// Package preflight is `readside check`: it checks a config against the
// live broker and sinks (the source checks live with the tailer, in
// cdc.CheckSource) and reports every finding with its fix.
package preflight

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/internal/sqlquote"
)

// Finding is one result, with the part of the pipeline it concerns.
type Finding struct {
	Area string // "source", "broker", "sink <name>", "projections"
	cdc.Finding
}

// Broker checks that kafka.brokers answer, or, with the embedded broker,
// that its data directory under dataDir is writable.
func Broker(ctx context.Context, kafka config.Kafka, dataDir string) []Finding {
	f := func(sev, fix, format string, args ...any) []Finding {
		return []Finding{{Area: "broker", Finding: cdc.Finding{Severity: sev, What: fmt.Sprintf(format, args...), Fix: fix}}}
	}
	if len(kafka.Brokers) == 0 {
		dir := filepath.Join(dataDir, "kafka")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return f("error", "set data_dir to a directory readside may write", "embedded broker: cannot create its data directory %s: %v", dir, err)
		}
		probe, err := os.CreateTemp(dir, ".check-*")
		if err != nil {
			return f("error", "set data_dir to a directory readside may write", "embedded broker: cannot write to %s: %v", dir, err)
		}
		probe.Close()
		os.Remove(probe.Name())
		return f("ok", "", "no kafka.brokers: run starts the embedded broker on %s with its data in %s (writable)", kafka.EmbeddedListen, dir)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.Brokers...))
	if err != nil {
		return f("error", "fix kafka.brokers", "kafka.brokers: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return f("error", "check kafka.brokers (host:port of at least one broker) and that the brokers run and are reachable from here", "kafka.brokers %s do not answer: %v", strings.Join(kafka.Brokers, ","), err)
	}
	return f("ok", "", "broker cluster %s answers: %d broker(s)", md.Cluster, len(md.Brokers))
}

// Registry checks that the schema registries the config uses answer:
// kafka.schema_registry with kafka.format: debezium-avro (reporting its
// global compatibility: the rule a table change's new schema will be held
// to), and input.schema_registry with input.format: avro.
func Registry(ctx context.Context, cfg config.Config) []Finding {
	var out []Finding
	if cfg.Kafka.Format == config.FormatDebeziumAvro {
		out = append(out, registry(ctx, cfg.Kafka.SchemaRegistry.URL, "kafka.schema_registry.url",
			"a table change whose schema it refuses stops the tailer (docs/debezium.md)")...)
	}
	if cfg.Input.Kind == config.InputDebezium && cfg.Input.Format == config.InputAvro {
		out = append(out, registry(ctx, cfg.Input.SchemaRegistry.URL, "input.schema_registry.url",
			"the projectors read the connector's schemas from it")...)
	}
	return out
}

func registry(ctx context.Context, url, key, role string) []Finding {
	f := func(sev, fix, format string, args ...any) []Finding {
		return []Finding{{Area: "registry", Finding: cdc.Finding{Severity: sev, What: fmt.Sprintf(format, args...), Fix: fix}}}
	}
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return f("error", "fix "+key, "%s %s: %v", key, url, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r := cl.Compatibility(ctx)
	if len(r) == 0 || r[0].Err != nil {
		var err error = errors.New("no answer")
		if len(r) > 0 {
			err = r[0].Err
		}
		return f("error", "check "+key+" (the base URL of a Confluent-compatible registry; Apicurio's ccompat API is /apis/ccompat/v7) and that the registry runs and is reachable from here",
			"schema registry %s does not answer: %v", url, err)
	}
	return f("ok", "", "schema registry %s answers; its global compatibility is %s: %s", url, r[0].Level, role)
}

// Sinks checks every sink (and shard) is reachable and writable.
func Sinks(ctx context.Context, sinks map[string]config.Sink) []Finding {
	var out []Finding
	// In name order, so that two runs list their findings alike.
	for _, name := range slices.Sorted(maps.Keys(sinks)) {
		s := sinks[name]
		if s.DSN != "" {
			out = append(out, sink(ctx, name, s.DSN)...)
		}
		for _, sh := range s.Shards {
			out = append(out, sink(ctx, name+"/"+sh.KeyRange, sh.DSN)...)
		}
	}
	return out
}

func sink(ctx context.Context, name string, dsn config.Secret) []Finding {
	area := "sink " + name
	f := func(sev, fix, format string, args ...any) []Finding {
		return []Finding{{Area: area, Finding: cdc.Finding{Severity: sev, What: fmt.Sprintf(format, args...), Fix: fix}}}
	}
	dcfg, err := driver.ParseDSN(dsn.Reveal())
	if err != nil {
		return f("error", "use the form user:password@tcp(host:3306)/database", "sinks.%s.dsn %s: %v", name, dsn, err)
	}
	if dcfg.DBName == "" {
		return f("error", "end the DSN with /<database>", "sinks.%s.dsn %s names no database for the read tables", name, dsn)
	}
	conn, err := driver.NewConnector(dcfg)
	if err != nil {
		return f("error", "", "sinks.%s.dsn: %v", name, err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return f("error", "check the host, port, user, password and database in the DSN", "cannot connect to sink %s (%s): %v", name, dsn, err)
	}
	account := fmt.Sprintf("'%s'@'<host>'", dcfg.User)
	fix := fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP ON %s.* TO %s; and make sure the server is not read_only", sqlquote.Ident(dcfg.DBName), account)
	// Write where readside writes: its offsets table inside a transaction
	// that rolls back, or, before the first run, a scratch table.
	var n int
	err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_readside_offsets'").Scan(&n)
	if err != nil {
		return f("error", fix, "sink %s: reading information_schema: %v", name, err)
	}
	if n == 1 {
		tx, err := db.BeginTx(ctx, nil)
		if err == nil {
			_, err = tx.ExecContext(ctx, "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES ('_readside_check', '', -1, 0) ON DUPLICATE KEY UPDATE next_offset = next_offset")
			err = errors.Join(err, tx.Rollback())
		}
		if err != nil {
			return f("error", fix, "sink %s is not writable: %v", name, err)
		}
	} else {
		_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `_readside_check` (id INT PRIMARY KEY)")
		if err == nil {
			_, err = db.ExecContext(ctx, "INSERT INTO `_readside_check` VALUES (1) ON DUPLICATE KEY UPDATE id = id")
			_, derr := db.ExecContext(ctx, "DROP TABLE `_readside_check`")
			err = errors.Join(err, derr)
		}
		if err != nil {
			return f("error", fix, "sink %s is not writable (create, insert, drop of a scratch table): %v", name, err)
		}
	}
	return f("ok", "", "sink %s (%s) is reachable and writable", name, dsn)
}
