package cdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
)

// kafka.format: debezium and debezium-avro. The tailer decodes, keys,
// versions, snapshots and checkpoints exactly as for readside's envelope;
// only what goes into a table topic differs: each value is encoded
// readside's way first (that encoding is exact) and package debezium turns
// it into Debezium's, in JSON or in Avro.

// debeziumFormat reports kafka.format: debezium or debezium-avro.
func (s *stream) debeziumFormat() bool { return s.t.cfg.Kafka.Format.Debezium() }

// dbzTable is t's Debezium encoder, compiled on first use (a table is
// rebuilt on every change of its shape, and its encoder with it). Under
// debezium-avro its Avro schemas are registered then, before any event of
// the new shape is produced: a refusal stops the tailer with nothing of
// the change published.
func (s *stream) dbzTable(ctx context.Context, t *table) (*debezium.Table, error) {
	if t.dbz != nil {
		return t.dbz, nil
	}
	var cols []debezium.Column
	at := make([]int, len(t.columns)) // column index -> published index
	for i, c := range t.columns {
		at[i] = -1
		if c.excluded {
			continue
		}
		at[i] = len(cols)
		cols = append(cols, debezium.Column{Name: c.name, Type: c.typeName, Optional: t.nullable == nil || t.nullable(i), Members: c.members})
	}
	key := make([]int, len(t.pk))
	for n, i := range t.pk {
		key[n] = at[i]
	}
	d, err := debezium.NewTable(s.t.cfg.Kafka.TopicPrefix, s.src.flavor, t.db, t.name, cols, key, s.t.cfg.Kafka.Debezium)
	if err != nil {
		return nil, &FatalError{fmt.Errorf("kafka.format: %s: %w", s.t.cfg.Kafka.Format, err)}
	}
	if s.t.registry != nil {
		a, err := debezium.NewAvro(d)
		if err != nil {
			return nil, &FatalError{fmt.Errorf("kafka.format: debezium-avro: %w", err)}
		}
		name := t.db + "." + t.name
		keyID, err := registerSchema(ctx, s.t.registry, name, a.Topic()+"-key", a.KeySchema())
		if err != nil {
			return nil, err
		}
		valueID, err := registerSchema(ctx, s.t.registry, name, a.Topic()+"-value", a.ValueSchema())
		if err != nil {
			return nil, err
		}
		t.dbzAvro, t.keyID, t.valueID = a, keyID, valueID
	}
	t.dbz = d
	return d, nil
}

// dbzKey is the record key of row, in JSON or Avro.
func dbzKey(tbl *table, d *debezium.Table, row debezium.Row) ([]byte, error) {
	if tbl.dbzAvro != nil {
		return tbl.dbzAvro.Key(nil, tbl.keyID, row)
	}
	return d.Key(nil, row)
}

// mustKeyPayload is the key's JSON payload for a message, or why not.
func mustKeyPayload(d *debezium.Table, row debezium.Row) []byte {
	b, err := d.KeyPayload(nil, row)
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

// dbzValue appends the record value of one change, in JSON or Avro.
func dbzValue(buf []byte, tbl *table, d *debezium.Table, op event.Op, before, after debezium.Row, src debezium.Source) ([]byte, error) {
	if tbl.dbzAvro != nil {
		return tbl.dbzAvro.Value(buf, tbl.valueID, byte(op), before, after, src, time.Now())
	}
	return d.Value(buf, byte(op), before, after, src, time.Now())
}

// dbzRow is a binlog row image as debezium.Row: readside's encoding of
// each published column, all in one buffer (one allocation per row, not
// per column).
func dbzRow(t *table, row []any) (debezium.Row, error) {
	if row == nil {
		return nil, nil
	}
	var buf []byte
	ends := make([]int, 0, len(t.columns))
	for i := range t.columns {
		c := &t.columns[i]
		if c.excluded {
			continue
		}
		var err error
		if buf, err = c.appendValue(buf, row[i]); err != nil {
			return nil, err
		}
		ends = append(ends, len(buf))
	}
	out := make(debezium.Row, len(ends))
	start := 0
	for i, end := range ends {
		out[i], start = buf[start:end:end], end
	}
	return out, nil
}

// emitDebezium produces one binlog change in Debezium's form. A primary
// key change is Debezium's three records: a delete of the old key and its
// tombstone, both with the new key in a __debezium.newkey header, then a
// create of the new key with the old one in __debezium.oldkey.
func (s *stream) emitDebezium(ctx context.Context, tbl *table, src *source, op event.Op, before, after []any, row int, keyChange bool) error {
	d, err := s.dbzTable(ctx, tbl)
	if err != nil {
		return err
	}
	encodingFailed := func(err error) error {
		return &FatalError{fmt.Errorf("encoding %s.%s at %s:%d for kafka.format: debezium: %w", tbl.db, tbl.name, src.file, src.pos, err)}
	}
	b, err := dbzRow(tbl, before)
	if err != nil {
		return encodingFailed(err)
	}
	a, err := dbzRow(tbl, after)
	if err != nil {
		return encodingFailed(err)
	}
	ds := debezium.Source{TsSec: src.ts, ServerID: src.serverID, GTID: src.gtid, File: src.file, Pos: src.start, Row: row}
	if !keyChange {
		ds.Txn = s.txnBlock(tbl)
		return s.produceDebezium(ctx, tbl, d, op, b, a, ds, nil)
	}
	oldKey, err := d.KeyPayload(nil, b)
	if err != nil {
		return encodingFailed(err)
	}
	newKey, err := d.KeyPayload(nil, a)
	if err != nil {
		return encodingFailed(err)
	}
	// Two change records, each counted in the transaction.
	ds.Txn = s.txnBlock(tbl)
	if err := s.produceDebezium(ctx, tbl, d, event.OpDelete, b, nil, ds, []kgo.RecordHeader{{Key: "__debezium.newkey", Value: newKey}}); err != nil {
		return err
	}
	ds.Txn = s.txnBlock(tbl)
	return s.produceDebezium(ctx, tbl, d, event.OpCreate, nil, a, ds, []kgo.RecordHeader{{Key: "__debezium.oldkey", Value: oldKey}})
}

// produceDebezium produces one change (op c, u, d or r) and, after a
// delete, its tombstone with the same headers.
func (s *stream) produceDebezium(ctx context.Context, tbl *table, d *debezium.Table, op event.Op, before, after debezium.Row, src debezium.Source, headers []kgo.RecordHeader) error {
	keyRow := after
	if keyRow == nil {
		keyRow = before
	}
	key, err := dbzKey(tbl, d, keyRow)
	if err == nil {
		var value []byte
		if value, err = dbzValue(s.slab.room(tbl.sizeHint[opSlot(op)]+256), tbl, d, op, before, after, src); err == nil {
			value = s.slab.keep(value)
			tbl.sizeHint[opSlot(op)] = len(value)
			if len(value) > s.t.cfg.Kafka.MaxMessageBytes {
				schemas := "set kafka.debezium.schemas.enable: false (the schema is most of each event), "
				if tbl.dbzAvro != nil { // the schema is in the registry, the key is Avro
					schemas, key = "", mustKeyPayload(d, keyRow)
				}
				return fatalf("change of %s.%s key %s at %s:%d is %d bytes in kafka.format: %s, over kafka.max_message_bytes %d: raise it, %sor exclude the large columns (source.exclude_columns)",
					tbl.db, tbl.name, key, src.File, src.Pos, len(value), s.t.cfg.Kafka.Format, s.t.cfg.Kafka.MaxMessageBytes, schemas)
			}
			s.txnEvents++
			r := newRecord(d.Topic(), key, value, 0)
			r.Headers = headers
			if err := s.pub.produce(ctx, r); err != nil {
				return err
			}
			if op == event.OpDelete {
				t := newRecord(d.Topic(), slices.Clone(key), nil, 0)
				t.Headers = headers
				if err := s.pub.produce(ctx, t); err != nil {
					return err
				}
			}
			if op != event.OpRead { // publishChunk counts a chunk's rows at once
				tbl.counter(s.t.metrics.events, op).Inc()
			}
			return nil
		}
	}
	return &FatalError{fmt.Errorf("encoding %s.%s at %s:%d for kafka.format: %s: %w", tbl.db, tbl.name, src.File, src.Pos, s.t.cfg.Kafka.Format, err)}
}

// publishDebezium produces a snapshot chunk's row (readside's key and
// after image) as Debezium's op r. Debezium's snapshot rows carry no
// server id and no GTID.
func (s *stream) publishDebezium(ctx context.Context, tbl *table, src *source, after []byte) error {
	d, err := s.dbzTable(ctx, tbl)
	if err != nil {
		return err
	}
	row, err := d.SplitRow(after)
	if err != nil {
		return &FatalError{fmt.Errorf("snapshot of %s.%s for kafka.format: debezium: %w", tbl.db, tbl.name, err)}
	}
	return s.produceDebezium(ctx, tbl, d, event.OpRead, nil, row, debezium.Source{Snapshot: true, TsSec: src.ts, File: src.file, Pos: src.start}, nil)
}

// registerSchema is the registry's id of the Avro schema of table (a
// name for messages) under subject, registering it when needed. A
// refusal (an incompatible or invalid schema, access refused) is a
// FatalError naming the registry's verdict, the subject and the fix; any
// other failure is transient, and the tailer retries from its checkpoint.
func registerSchema(ctx context.Context, r *debezium.SchemaRegistry, table, subject, schema string) (int, error) {
	id, err := r.Register(ctx, subject, schema)
	if err != nil {
		return 0, registryError(table, subject, r.URL(), err)
	}
	return id, nil
}

func registryError(table, subject, url string, err error) error {
	var v *debezium.RegistryVerdict
	switch {
	case !errors.As(err, &v):
		return fmt.Errorf("registering the Avro schema of %s under subject %s at %s: %w", table, subject, url, err)
	case v.Status == 0:
		return fatalf("kafka.schema_registry.url: %s", v.Message)
	case v.Access():
		return fatalf("the schema registry at %s refused access registering subject %s (HTTP %d): %s. "+
			"Fix: point kafka.schema_registry.url at a registry that lets readside register schemas without credentials", url, subject, v.Status, v.Message)
	}
	return fatalf("the schema registry at %s refused the Avro schema of %s under subject %s (HTTP %d, error code %d): %s. "+
		"No event of the change was published and the checkpoint stays before it, so nothing is lost. "+
		"Fix: make the table's change one the subject's compatibility accepts (add columns as NULL or with a default, do not drop or retype key columns), "+
		"or set the subject's compatibility (PUT /config/%s) to what its consumers can read, or publish to new subjects with another kafka.topic_prefix; then restart readside",
		url, table, subject, v.Status, v.Code, v.Message, subject)
}
