package cdc

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
)

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
	var op Op
	step := 1
	switch h.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		op = OpCreate
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		op, step = OpUpdate, 2
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		op = OpDelete
	default:
		return fatalf("unknown rows event %s for %s at %s:%d", h.EventType, name, s.file, h.LogPos)
	}
	for i := 0; i+step <= len(e.Rows); i += step {
		version := s.clock.Next(h.Timestamp)
		var err error
		switch {
		case op == OpCreate:
			err = s.emit(ctx, tbl, src, OpCreate, version, nil, e.Rows[i])
		case op == OpDelete:
			err = s.emit(ctx, tbl, src, OpDelete, version, e.Rows[i], nil)
		case tbl.keyChanged(e.Rows[i], e.Rows[i+1]):
			// A primary key change is a delete of the old key and a create
			// of the new one, with one version: they may land in different
			// partitions and the version guard makes their order irrelevant.
			if err = s.emit(ctx, tbl, src, OpDelete, version, e.Rows[i], nil); err == nil {
				err = s.emit(ctx, tbl, src, OpCreate, version, nil, e.Rows[i+1])
			}
		default:
			err = s.emit(ctx, tbl, src, OpUpdate, version, e.Rows[i], e.Rows[i+1])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// emit encodes and produces one change (and a tombstone after a delete).
func (s *stream) emit(ctx context.Context, tbl *table, src *source, op Op, version uint64, before, after []any) error {
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
	if op == OpDelete {
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
