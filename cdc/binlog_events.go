package cdc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

func (s *stream) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	s.t.heard()
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.file = string(e.NextLogName)
	case *replication.MariadbGTIDEvent:
		s.beginTxn(e.GTID.String(), !e.IsStandalone())
		s.xa = e.Flags&mariadbPreparedXA != 0
		if s.meta != nil {
			// The MariaDB connector's transaction starts here, DDL included.
			return s.txnBegin(ctx, h, s.txnGTID)
		}
	case *replication.GTIDEvent:
		next, err := e.GTIDNext()
		if err != nil {
			return fatalf("decoding GTID event at %s:%d: %w", s.file, h.LogPos, err)
		}
		s.beginTxn(next.String(), false)
	case *replication.QueryEvent:
		return s.query(ctx, h, e)
	case *replication.RowsEvent:
		return s.rows(ctx, h, e)
	case *replication.TransactionPayloadEvent:
		// MySQL 8 binlog_transaction_compression: the whole transaction
		// (BEGIN, table maps, rows, XID) is inside, its events written
		// with LogPos 0. go-mysql stamps them with the payload's start
		// and, on the last (the XID), its end; an unstamped one gets the
		// end so a checkpoint never lands at offset 0.
		for _, inner := range e.Events {
			if inner.Header.LogPos == 0 {
				inner.Header.LogPos = h.LogPos
			}
			if err := s.handle(ctx, inner); err != nil {
				return err
			}
		}
	case *replication.XIDEvent:
		if err := s.txnEnd(ctx, h); err != nil {
			return err
		}
		return s.endTxn(ctx, h)
	case *replication.GenericEvent:
		if h.EventType == replication.XA_PREPARE_LOG_EVENT {
			// The end of an XA transaction's first part (xa.go).
			return s.xaEnd(ctx, h)
		}
	case *replication.HeartbeatEvent:
		// (go-mysql 1.16 decodes heartbeats to HeartbeatEvent, not
		// GenericEvent.) The source has nothing newer: once everything
		// read is committed to Kafka the tailer is caught up, and the
		// binlog it needs is the one being written now.
		if s.sched.txns == 0 && !s.inTxn() {
			s.t.needsFrom.Store(s.t.now().Unix())
			if !s.pub.committing() {
				s.t.markCaughtUp()
			}
		}
	}
	return nil
}

func (s *stream) beginTxn(gtid string, begun bool) {
	s.txnGTID, s.txnBegun, s.txnEvents, s.xa = gtid, begun, 0, false
}

// endTxn records a complete source transaction and commits the Kafka
// transaction when it is big or old enough.
func (s *stream) endTxn(ctx context.Context, h *replication.EventHeader) error {
	if s.txnGTID != "" && s.gtids != nil {
		if err := s.gtids.Update(s.txnGTID); err != nil {
			return fatalf("tracking GTID %s: %w", s.txnGTID, err)
		}
	}
	if h.LogPos == 0 && s.gtids == nil {
		// Offset 0 is the start of the file: resuming there would replay it.
		return fatalf("transaction end at %s with no binlog offset (LogPos 0) on a source without GTIDs: readside cannot checkpoint after it. Enable GTIDs on the source (gtid_mode=ON)", s.file)
	}
	// With GTIDs the GTID set is the position; at offset 0 the file/offset
	// stays at the last known one.
	s.sched.completed(time.Now(), s.file, h.LogPos, int64(h.Timestamp))
	s.txnGTID, s.txnBegun = "", false
	if s.meta != nil {
		s.meta.txn.End() // a DDL's: Debezium writes no END for it
	}
	s.t.metrics.transactions.Inc()
	return s.maybeCommit(ctx, false)
}

// query handles a QUERY event: transaction control, and DDL or statement
// DML that touches a captured table.
func (s *stream) query(ctx context.Context, h *replication.EventHeader, e *replication.QueryEvent) error {
	st := parseStatement(string(e.Schema), string(e.Query))
	ddl := st.kind != "begin" && st.kind != "commit" && st.kind != "dml" && st.kind != "xa"
	var sql string
	var textErr error
	if ddl && (s.guard != nil || s.schema != nil) {
		sql, textErr = ddlText(e, s.charsetOf)
	}
	if ddl && s.guard != nil {
		// The guard only looks for index and column names: the bytes as
		// sent serve when the client's charset cannot be decoded.
		text := sql
		if textErr != nil {
			text = string(e.Query)
		}
		s.guard.apply(string(e.Schema), text)
	}
	if ddl && s.reader != nil {
		s.snapshotDDL(e, sql, textErr)
	}
	if ddl && versioningDDL(string(e.Query)) {
		// The live schema stands for the one after this DDL (a table made
		// system-versioned or not); tables are rebuilt from their next map.
		rowEnds, err := s.src.rowEndColumns(ctx, slices.Collect(maps.Keys(s.captured)))
		if err != nil {
			return err
		}
		s.rowEnds = rowEnds
		clear(s.tables)
	}
	if ddl && s.schema != nil {
		if textErr != nil {
			return fatalf("at %s:%d: %w", s.file, h.LogPos, textErr)
		}
		changed, err := s.schema.apply(string(e.Schema), sql)
		if err != nil {
			return fatalf("at %s:%d: %w", s.file, h.LogPos, err)
		}
		if len(changed) > 0 {
			if err := s.pub.produceSchemaHistory(ctx, s.schema, changed); err != nil {
				return err
			}
			clear(s.tables) // rebuild every table from the new schema
		}
	}
	switch st.kind {
	case "begin":
		s.txnBegun = true
		if s.meta != nil && s.src.flavor == "mysql" {
			// The MySQL connector's transaction starts at BEGIN; the
			// MariaDB connector's started at the GTID event.
			return s.txnBegin(ctx, h, mysqlTxnID(s.txnGTID, s.file, h.LogPos))
		}
		return nil
	case "commit":
		if err := s.txnEnd(ctx, h); err != nil {
			return err
		}
		return s.endTxn(ctx, h)
	case "xa":
		return s.xaStatement(ctx, h, string(e.Query))
	case "dml":
		for _, t := range st.tables {
			if _, ok := s.captured[t]; ok {
				return fatalf("statement-format DML on captured table %s at %s:%d (a session set binlog_format=STATEMENT?): the binlog has no row images for it. Fix the writer and re-snapshot %s", t, s.file, h.LogPos, t)
			}
		}
	case "truncate":
		if topic, ok := s.captured[st.tables[0]]; ok {
			if err := s.truncate(ctx, h, st.tables[0], topic); err != nil {
				return err
			}
		}
	case "rename":
		// RENAME TABLE t TO t_old, t_new TO t moves every pair at once: the
		// captured name t stays bound, to the table built beside it. That
		// is the cut-over of an online schema change (gh-ost,
		// pt-online-schema-change, Spirit), whose new table holds t's rows
		// in the new shape: t is followed, each event decoded by its own
		// table map. A captured table renamed away with nothing taking its
		// name stops the tailer: its rows would go on under a name
		// readside does not capture.
		rebound := map[string]bool{}
		for _, m := range st.moves {
			rebound[m[1]] = true
		}
		for _, m := range st.moves {
			_, fromCaptured := s.captured[m[0]]
			_, toCaptured := s.captured[m[1]]
			if fromCaptured && !toCaptured && rebound[m[0]] {
				s.t.log.Info("captured table swapped for another in one RENAME TABLE (an online schema change's cut-over): following the table that now has its name; "+
					"if that table's rows are not the old one's, request a snapshot of it (readside snapshot --table)", "table", m[0], "old_table_now", m[1], "position", fmt.Sprintf("%s:%d", s.file, h.LogPos))
				continue
			}
			if fromCaptured && !toCaptured {
				return fatalf("captured table %s was renamed to %s at %s:%d, which is not in source.tables: add %s to source.tables (and point projections at it), then restart", m[0], m[1], s.file, h.LogPos, m[1])
			}
		}
	case "partition":
		s.partitionMaintenance(st, string(e.Query), fmt.Sprintf("%s:%d", s.file, h.LogPos))
	case "drop":
		for _, t := range st.tables {
			if _, ok := s.captured[t]; ok {
				s.t.log.Warn("captured table dropped on the source; its read tables keep their rows", "table", t, "file", s.file, "pos", h.LogPos)
			}
		}
	}
	// DDL and other statements outside BEGIN...COMMIT are transactions of
	// their own.
	if !s.txnBegun {
		return s.endTxn(ctx, h)
	}
	return nil
}

// truncate publishes a 't' event to every partition of the table's topic.
func (s *stream) truncate(ctx context.Context, h *replication.EventHeader, name, topic string) error {
	if s.debeziumFormat() {
		// Debezium skips truncates by default (skipped.operations=t):
		// its consumers get no record, and neither do readside's own
		// projections of the table, whose read tables keep the rows.
		s.t.log.Warn("TRUNCATE of a captured table not published: kafka.format debezium skips truncates as the connector does by default (skipped.operations=t), "+
			"so consumers of its topic, readside's projections of it included, keep the rows it removed; "+
			"fix: readside verify --projection P --repair for each projection of the table (it deletes the rows the source no longer has), or truncate the consumers' copies too",
			"table", name, "position", fmt.Sprintf("%s:%d", s.file, h.LogPos))
		return nil
	}
	db, tbl, _ := config.SplitTable(name)
	t := &table{db: db, name: tbl, topic: topic, schema: []byte(`"` + event.FieldSchema + `":null`)}
	src := s.source(h)
	version := s.clock.Next(h.Timestamp)
	for p := range s.partitions[topic] {
		value := appendEvent(nil, t, envelope{op: event.OpTruncate, version: version, src: src, txnSeq: s.txnEvents}, nil, nil, nil)
		if err := s.pub.produce(ctx, newRecord(topic, nil, value, int32(p))); err != nil {
			return err
		}
	}
	s.txnEvents++
	s.t.metrics.events.WithLabelValues(name, "t").Inc()
	return nil
}

func (s *stream) source(h *replication.EventHeader) *source {
	return &source{flavor: s.src.flavor, serverID: h.ServerID, file: s.file, pos: h.LogPos, start: h.LogPos - h.EventSize, gtid: s.txnGTID, ts: h.Timestamp}
}

func (s *stream) charsetOf(collation uint64) string { return s.charsets[collation] }

// collationOf is a collation id's name, "" when the source does not list it.
func (s *stream) collationOf(collation uint64) string { return s.collations[collation] }
