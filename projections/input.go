package projections

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sourcedb"
)

// TopicOf is the topic the projections read source table db.tbl from:
// readside's topic names (event.TopicFor), or Debezium's when they read
// Debezium's envelope — a connector's under input.topic_prefix, or
// readside's tailer's own under kafka.format: debezium or debezium-avro.
func TopicOf(cfg config.Config, db, tbl string) string {
	if cfg.ReadsDebezium() {
		return debezium.Topic(cfg.TablePrefix(), db, tbl)
	}
	return event.TopicFor(cfg.Kafka.TopicPrefix, db, tbl)
}

// Decoder reads a record value into a change event. Decode is
// synchronous; Recycle hands back an event the caller is done with (and
// with anything holding its images), so the decoder may reuse them.
type Decoder interface {
	Decode(value []byte) (event.Event, error)
	Recycle(e event.Event)
}

var (
	_ Decoder = (*event.Decoder)(nil)
	_ Decoder = (*debezium.Decoder)(nil)
	_ Decoder = (*debezium.AvroDecoder)(nil)
	_ Decoder = (*debezium.LiveDecoder)(nil)
)

// NewDecoder is a decoder of the envelope p's topics carry, for one run
// of records (a poll) whose schemas LoadSchemas loaded: not safe for
// concurrent use.
func (p *Projection) NewDecoder() Decoder {
	if p.avro != nil {
		return p.avro.Decoder()
	}
	if p.live != nil {
		return p.live.Decoder()
	}
	if p.debezium {
		return new(debezium.Decoder)
	}
	return new(event.Decoder)
}

// LoadSchemas fetches what decoding values needs from outside the records
// (over Avro topics, the writer schemas from the registry; nothing
// otherwise). It blocks on the registry; an error wrapping
// debezium.ErrSchemaUnusable is one no retry changes. The caller decodes
// none of values until LoadSchemas succeeded: a record is never taken for
// bad data because the registry did not answer.
func (p *Projection) LoadSchemas(ctx context.Context, values iter.Seq[[]byte]) error {
	var err error
	switch {
	case p.avro != nil:
		err = p.avro.Load(ctx, values)
	case p.live != nil:
		err = p.live.Load(ctx, values)
	}
	if err != nil {
		return fmt.Errorf("projection %s: %w", p.Name, err)
	}
	return nil
}

// avroInput is the writer schemas' holder when cfg's projections read
// Avro, else nil.
func avroInput(cfg config.Config) *debezium.AvroSchemas {
	url, key, ok := cfg.ReadsAvro()
	if !ok {
		return nil
	}
	return debezium.NewAvroSchemas(debezium.NewSchemaRegistry(url, key))
}

// liveInput is the live schemas' holder when cfg's projections read
// Debezium's JSON without the schema block, and the source reader it
// reads column types with; nil, nil otherwise.
func liveInput(cfg config.Config) (*debezium.LiveSchemas, *sourceColumns) {
	modes, key, ok := cfg.Schemaless()
	if !ok {
		return nil, nil
	}
	src := &sourceColumns{dsn: cfg.Source.DSN.Reveal(), tls: cfg.Source.TLS}
	return debezium.NewLiveSchemas(src, modes, key), src
}

// CloseInput releases what decoding p's records holds open: the source
// pool of Debezium's JSON without the schema block. The projector calls
// it when it stops; p stays usable, the next read opens a pool again.
func (p *Projection) CloseInput() error {
	if p.liveSource == nil {
		return nil
	}
	return p.liveSource.Close()
}

// sourceColumns reads tables' columns from information_schema on the
// source, over a pool of one connection opened on first use (reads are
// rare: once per table and per DDL) with source.tls as every source
// connection (sourcedb), and closed by Close.
type sourceColumns struct {
	dsn string
	tls config.TLS

	// mu serializes the reads with Close, which so never cuts one off.
	mu sync.Mutex
	db *sql.DB
}

var _ debezium.ColumnSource = (*sourceColumns)(nil)

func (s *sourceColumns) Columns(ctx context.Context, db, table string) ([]debezium.Column, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		pool, err := sourcedb.Open(s.dsn, sourcedb.Options{MaxConns: 1, TLS: s.tls})
		if err != nil {
			return nil, fmt.Errorf("reading the columns of %s.%s from the source: %w", db, table, err)
		}
		pool.SetConnMaxIdleTime(time.Minute)
		s.db = pool
	}
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0),
		COALESCE(DATETIME_PRECISION, 0), COALESCE(CHARACTER_MAXIMUM_LENGTH, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []debezium.Column
	for rows.Next() {
		var name, dataType, colType string
		var prec, scale, dt, maxLen int64
		if err := rows.Scan(&name, &dataType, &colType, &prec, &scale, &dt, &maxLen); err != nil {
			return nil, err
		}
		cols = append(cols, debezium.LiveColumn(name, dataType, colType, prec, scale, dt, maxLen))
	}
	return cols, rows.Err()
}

// Close closes the pool, if one is open; a later Columns opens another.
func (s *sourceColumns) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}
