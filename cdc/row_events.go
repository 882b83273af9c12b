package cdc

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/event"
)

// rows publishes the changes of one rows event of a captured table.
func (s *stream) rows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent) error {
	if s.isSignal(e.Table) {
		return s.signal(ctx, h, e, string(e.Table.Table))
	}
	name := string(e.Table.Schema) + "." + string(e.Table.Table)
	topic, ok := s.captured[name]
	if !ok {
		return nil // its rows were not even decoded (readsRows)
	}
	if s.xa {
		return s.xaRefused(h, name)
	}
	if h.EventType == replication.PARTIAL_UPDATE_ROWS_EVENT {
		return fatalf("partial JSON update of %s at %s:%d (binlog_row_value_options=PARTIAL_JSON in some session): the event holds a diff of the JSON, not its value, and readside publishes whole rows. "+
			"Fix: SET GLOBAL binlog_row_value_options='' (and in the writer's session and my.cnf); every restart meets this event again: start over from a fresh snapshot (docs/operations.md, \"MySQL 8 binlog options\")", name, s.file, h.LogPos)
	}
	tbl, err := s.tableOf(h, e, name, topic)
	if err != nil {
		return err
	}
	if !fullImage(e.ColumnBitmap1, int(e.ColumnCount)) || (e.ColumnBitmap2 != nil && !fullImage(e.ColumnBitmap2, int(e.ColumnCount))) {
		return fatalf("row image of %s at %s:%d is not FULL (a session set binlog_row_image=MINIMAL or NOBLOB?): readside would publish incomplete rows. "+
			"Fix: SET GLOBAL binlog_row_image=FULL (and in the writer's session and my.cnf); every restart meets this event again: start over from a fresh snapshot (docs/operations.md, \"MySQL 8 binlog options\")", name, s.file, h.LogPos)
	}
	if s.guard != nil {
		if err := s.guard.check(name); err != nil {
			return fatalf("at %s:%d: %w", s.file, h.LogPos, err)
		}
	}
	if err := s.touched(tbl, e.Rows); err != nil {
		return &FatalError{err}
	}
	op, step := rowsOp(h.EventType)
	if step == 0 {
		return fatalf("unknown rows event %s for %s at %s:%d", h.EventType, name, s.file, h.LogPos)
	}
	return s.emitRows(ctx, h, tbl, op, step, e.Rows)
}

// tableOf is the table of a rows event, built again from its table map
// when the table id is new or its shape changed.
func (s *stream) tableOf(h *replication.EventHeader, e *replication.RowsEvent, name, topic string) (*table, error) {
	if s.untilNamed && len(e.Table.ColumnName) > 0 {
		// binlog_row_metadata is global: every event from here on names
		// its columns, so checkpoints from here on need no history.
		s.t.log.Info("the binlog names columns from here on (binlog_row_metadata=FULL): schema history no longer used", "position", fmt.Sprintf("%s:%d", s.file, h.LogPos))
		s.schema, s.untilNamed = nil, false
	}
	tbl := s.tables[e.TableID]
	if tbl != nil && tbl.db+"."+tbl.name == name && tbl.sameShape(e.Table) {
		return tbl, nil
	}
	var err error
	if s.schema != nil && len(e.Table.ColumnName) == 0 {
		tbl, err = trackedTable(e.Table, s.schema.def(string(e.Table.Schema), string(e.Table.Table)), topic, s.excluded[name], s.keys[name], s.charsetOf)
	} else {
		tbl, err = newTable(e.Table, topic, s.excluded[name], s.keys[name], s.charsetOf)
	}
	if err != nil {
		return nil, &FatalError{fmt.Errorf("at %s:%d: %w", s.file, h.LogPos, err)}
	}
	tbl.setCollations(e.Table, s.collationOf)
	tbl.setRowEnd(s.rowEnds[name])
	if err := s.checkKey(name, tbl, fmt.Sprintf("%s:%d", s.file, h.LogPos)); err != nil {
		return nil, err
	}
	s.tables[e.TableID] = tbl
	return tbl, nil
}

// rowsOp is the change a rows event type makes and how many row images
// each change has; step 0 for a type that is not a rows event.
func rowsOp(t replication.EventType) (op event.Op, step int) {
	switch t {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return event.OpCreate, 1
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		return event.OpUpdate, 2
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return event.OpDelete, 1
	}
	return 0, 0
}

// emitRows publishes the changes of the row images of one rows event.
func (s *stream) emitRows(ctx context.Context, h *replication.EventHeader, tbl *table, op event.Op, step int, rows [][]any) error {
	src := s.source(h)
	for i := 0; i+step <= len(rows); i += step {
		var before, after []any
		switch op {
		case event.OpCreate:
			after = rows[i]
		case event.OpDelete:
			before = rows[i]
		default:
			before, after = rows[i], rows[i+1]
		}
		op, before, after, ok := tbl.currentChange(op, before, after)
		if !ok {
			continue // a past version of a system-versioned row
		}
		version := s.clock.Next(h.Timestamp)
		var err error
		if s.debeziumFormat() {
			if err := s.emitDebezium(ctx, tbl, src, op, before, after, i/step, op == event.OpUpdate && tbl.keyChanged(before, after)); err != nil {
				return err
			}
			continue
		}
		switch {
		case op == event.OpCreate:
			err = s.emit(ctx, tbl, src, event.OpCreate, version, nil, after)
		case op == event.OpDelete:
			err = s.emit(ctx, tbl, src, event.OpDelete, version, before, nil)
		case tbl.keyChanged(before, after):
			// A primary key change is a delete of the old key and a create
			// of the new one: they may land in different partitions and the
			// version guard makes their order irrelevant. The create takes
			// the clock's next version: under a _ci or PAD SPACE collation
			// the two keys can be one row to the sink ('ab' → 'AB',
			// 'x' → 'x '), and the create must outrank the delete there
			// whichever arrives first.
			if err = s.emit(ctx, tbl, src, event.OpDelete, version, before, nil); err == nil {
				err = s.emit(ctx, tbl, src, event.OpCreate, s.clock.Next(h.Timestamp), nil, after)
			}
		default:
			err = s.emit(ctx, tbl, src, event.OpUpdate, version, before, after)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

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
	// this op, so it rarely grows (its bytes are not written again until
	// the Kafka transaction carrying it committed; see slab).
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
