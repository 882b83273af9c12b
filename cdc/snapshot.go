package cdc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/internal/keyset"
)

// Snapshots follow Netflix's DBLog, interleaved with the live binlog and
// taking no locks:
//
//  1. write a low watermark row (an UPDATE of readside's own table on the
//     source), read one chunk of the table by primary key range with a
//     plain SELECT, write a high watermark row;
//  2. while streaming, drop from the chunk every key a live change touched
//     between the two watermarks (the live event is newer);
//  3. when the high watermark arrives in the binlog, publish what is left
//     of the chunk as 'r' events with versions from the clock at that
//     point, which are above every version published before it.
//
// A reader goroutine does step 1 (and encodes the rows) for the next
// chunks while the stream waits for the high watermark of the one before
// (snapshot_reader.go): it writes a chunk's low watermark only after the
// previous chunk's high watermark committed, so the chunks' windows follow
// each other in the binlog and step 2 applies to one chunk at a time, the
// head of the chunks in flight, exactly as with one chunk.
//
// Progress (the last key of the last published chunk) travels in the
// checkpoint, committed with the chunk's events, so a crash redoes at most
// the chunks in flight and a restart resumes where it stopped.

// SnapshotTask is one table's snapshot, queued in the checkpoint.
type SnapshotTask struct {
	ID    uint64   `json:"id,omitempty"` // the request row's id; 0 for the initial snapshot
	Table string   `json:"table"`
	Where string   `json:"where,omitempty"`
	After [][]byte `json:"after,omitempty"` // primary key of the last row published
	Rows  int64    `json:"rows"`
}

// SnapshotFinished is a requested snapshot the tailer completed.
type SnapshotFinished struct {
	ID         uint64    `json:"id"`
	Table      string    `json:"table"`
	Rows       int64     `json:"rows"`
	Seconds    float64   `json:"seconds"`
	FinishedAt time.Time `json:"finished_at"`
}

// maxFinished bounds Checkpoint.Finished: enough for the requests a few
// operators wait on at once, small in every checkpoint.
const maxFinished = 16

// SnapshotRequested is the request RequestSnapshotID wrote.
type SnapshotRequested struct {
	ID uint64
	// Estimate is the table's row estimate (information_schema
	// TABLE_ROWS) when the request has no where; nil otherwise.
	Estimate *int64
}

// The source tables readside writes (in source.snapshot.signal_db).
const (
	watermarkTable = "_readside_watermarks"
	requestTable   = "_readside_snapshot_requests"
	failedTable    = "_readside_snapshot_failures"
)

// ensureSignalTables creates readside's tables on the source.
func (s *sourceDB) ensureSignalTables(ctx context.Context, db string) error {
	for _, stmt := range []string{
		"CREATE DATABASE IF NOT EXISTS " + quoteIdent(db),
		"CREATE TABLE IF NOT EXISTS " + quoteIdent(db) + "." + watermarkTable +
			" (server_id INT UNSIGNED PRIMARY KEY, chunk CHAR(32) NOT NULL, mark VARCHAR(8) NOT NULL, at TIMESTAMP(6) NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + quoteIdent(db) + "." + requestTable +
			" (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, server_id INT UNSIGNED NOT NULL, table_name VARCHAR(200) NOT NULL," +
			" where_clause TEXT, requested_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
		"CREATE TABLE IF NOT EXISTS " + quoteIdent(db) + "." + failedTable +
			" (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, request_id BIGINT UNSIGNED NOT NULL, server_id INT UNSIGNED NOT NULL," +
			" table_name VARCHAR(200) NOT NULL, where_clause TEXT, error TEXT NOT NULL, failed_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
	} {
		if strings.HasPrefix(stmt, "CREATE TABLE") {
			stmt += signalCharset
		}
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("creating readside's snapshot tables on the source (%s): %w; grant the tailer's user CREATE, INSERT and UPDATE on %s.*, or set source.snapshot.mode: never", stmt, err, db)
		}
	}
	return s.utf8SignalTables(ctx, db)
}

// signalCharset: the signal tables hold table names and where clauses in
// any script whatever the signal database's default character set (a
// latin1 one refused a request for table 表1), compared byte for byte as
// the tailer compares them.
const signalCharset = " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

// utf8SignalTables converts signal tables created in another character
// set to signalCharset's.
func (s *sourceDB) utf8SignalTables(ctx context.Context, db string) error {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT TABLE_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?, ?, ?)"+
		" AND CHARACTER_SET_NAME IS NOT NULL AND COLLATION_NAME <> 'utf8mb4_bin' ORDER BY TABLE_NAME", db, watermarkTable, requestTable, failedTable)
	if err != nil {
		return fmt.Errorf("reading the character set of readside's snapshot tables on the source: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		stmt := "ALTER TABLE " + quoteIdent(db) + "." + quoteIdent(t) + " CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s (table names and where clauses of snapshot requests in any script): %w; grant the tailer's user ALTER on %s.*", stmt, err, db)
		}
	}
	return nil
}

// RequestSnapshot asks the running tailer with serverID to snapshot table
// (db.table), optionally only rows matching where (SQL, trusted operator
// input). The request is a row in the source's request table: the tailer
// sees it in the binlog, in order with everything else.
func RequestSnapshot(ctx context.Context, dsn string, tlsCfg config.TLS, signalDB string, serverID uint32, table, where string) error {
	_, err := RequestSnapshotID(ctx, dsn, tlsCfg, signalDB, serverID, table, where)
	return err
}

// RequestSnapshotID is RequestSnapshot returning the request's id (which
// the tailer's checkpoint names while it runs and once it finished) and
// the table's row estimate.
func RequestSnapshotID(ctx context.Context, dsn string, tlsCfg config.TLS, signalDB string, serverID uint32, table, where string) (SnapshotRequested, error) {
	src, err := openSource(ctx, dsn, "", tlsCfg)
	if err != nil {
		return SnapshotRequested{}, err
	}
	defer src.Close()
	if err := src.checkSnapshotRequest(ctx, table, where); err != nil {
		return SnapshotRequested{}, err
	}
	if err := src.ensureSignalTables(ctx, signalDB); err != nil {
		return SnapshotRequested{}, err
	}
	res, err := src.db.ExecContext(ctx, "INSERT INTO "+quoteIdent(signalDB)+"."+requestTable+" (server_id, table_name, where_clause) VALUES (?, ?, ?)",
		serverID, table, sql.NullString{String: where, Valid: where != ""})
	if err != nil {
		return SnapshotRequested{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return SnapshotRequested{}, fmt.Errorf("reading the snapshot request's id: %w", err)
	}
	req := SnapshotRequested{ID: uint64(id)}
	if where == "" {
		db, name, _ := strings.Cut(table, ".")
		var n int64
		// An estimate only: a table without one is followed without a total.
		if src.db.QueryRowContext(ctx, "SELECT COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, name).Scan(&n) == nil {
			req.Estimate = &n
		}
	}
	return req, nil
}

// checkSnapshotRequest runs the shape of the snapshot's chunk query once,
// reading no rows, so that a table the source does not have or a where it
// does not accept is refused before the request is written: the tailer
// would otherwise meet it only when it reads the request from the binlog.
func (s *sourceDB) checkSnapshotRequest(ctx context.Context, table, where string) error {
	db, name, _ := strings.Cut(table, ".")
	q := "SELECT 1 FROM " + quoteIdent(db) + "." + quoteIdent(name)
	if where != "" {
		q += " WHERE (" + where + ")"
	}
	rows, err := s.db.QueryContext(ctx, q+" LIMIT 0")
	if err == nil {
		return rows.Close()
	}
	var me *driver.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == 1146: // ER_NO_SUCH_TABLE
		return fmt.Errorf("table %s does not exist on the source (%w): name an existing table in --table db.table", table, err)
	case where != "":
		return fmt.Errorf("--where %q is not a condition the source accepts on %s (%w): fix the SQL; it is used as written in SELECT ... FROM %s WHERE (<where>); nothing was requested", where, table, err, table)
	}
	return fmt.Errorf("reading %s on the source: %w", table, err)
}

// chunkQuery selects the rows after task.After in key order. An integer
// key is written into the statement (keyset.Page.IntegerKey): without
// parameters it is not prepared first (a round trip) and its rows come in
// the text protocol, as they are encoded from. Other keys are parameters,
// compared as the strings they were read as.
func chunkQuery(tbl *table, task *SnapshotTask, limit int) (string, []any) {
	var cols, pk []string
	for _, c := range tbl.columns {
		expr := quoteIdent(c.name)
		switch c.kind {
		case kindFloat32:
			// FLOAT prints with 6 significant digits; as a DOUBLE it keeps
			// every bit of the float32, like the binlog.
			expr = "(" + expr + " + 0E0)"
		case kindInt:
			// As text, an integer reaches the encoder as the digits the
			// server sent: the driver parses an integer column's digits
			// into an int64 (boxed) and database/sql formats it back, a
			// fifth of the snapshot's CPU on a narrow table. The encoder
			// checks the digits either way.
			expr = "CAST(" + expr + " AS CHAR)"
		}
		cols = append(cols, expr)
	}
	integer := true
	for _, i := range tbl.pk {
		pk = append(pk, quoteIdent(tbl.columns[i].name))
		integer = integer && tbl.columns[i].kind == kindInt
	}
	p := keyset.Page{Select: strings.Join(cols, ", "), From: quoteIdent(tbl.db) + "." + quoteIdent(tbl.name),
		Key: pk, Limit: limit, IntegerKey: integer}
	if task.Where != "" {
		p.Where = []string{task.Where}
	}
	var after []any
	if len(task.After) > 0 && len(task.After) == len(pk) {
		after = make([]any, len(pk))
		for i, v := range task.After {
			after[i] = v
		}
	}
	return p.SQL(after)
}

// signal handles a rows event of readside's own source tables.
func (s *stream) signal(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent, table string) error {
	switch h.EventType {
	case replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
		if table == requestTable {
			s.cancelled(e.Rows)
		}
		return nil
	}
	step := 1
	if h.EventType == replication.UPDATE_ROWS_EVENTv1 || h.EventType == replication.UPDATE_ROWS_EVENTv2 {
		step = 2
	}
	for i := step - 1; i < len(e.Rows); i += step {
		row := e.Rows[i]
		if len(row) < 4 || fmt.Sprint(row[1]) != fmt.Sprint(s.t.cfg.Source.ServerID) && table == requestTable {
			continue
		}
		switch table {
		case watermarkTable:
			if fmt.Sprint(row[0]) != fmt.Sprint(s.t.cfg.Source.ServerID) {
				continue // another tailer's
			}
			c, err := s.watermarked(fmt.Sprint(row[1]))
			if err != nil || c == nil {
				return err // nil: a chunk from before a restart or a cancel
			}
			switch fmt.Sprint(row[2]) {
			case "low":
				if c.opensAtPrev {
					return fmt.Errorf("snapshot chunk %s met a low watermark, but its window opens at the previous chunk's high one (a bug); the stream restarts from its checkpoint", c.id)
				}
				c.lowSeen = true
			case "high":
				if err := s.publishChunk(ctx, h); err != nil {
					return err
				}
			}
		case requestTable:
			task := SnapshotTask{ID: rowID(row[0]), Table: fmt.Sprint(row[2])}
			if w, ok := row[3].(string); ok {
				task.Where = w
			} else if w, ok := row[3].([]byte); ok {
				task.Where = string(w)
			}
			s.t.log.Info("snapshot requested", "request", task.ID, "table", task.Table, "where", task.Where)
			s.snapshots = append(s.snapshots, task)
			s.cover(task.Table)
			s.lastRequest = max(s.lastRequest, task.ID)
		}
	}
	return nil
}

// touched drops the keys of a live change from the chunk between its
// watermarks: the head of the chunks in flight, once its low watermark
// was seen (the windows of the chunks follow each other in the binlog).
func (s *stream) touched(tbl *table, rows [][]any) error {
	if len(s.inflight) == 0 {
		return nil
	}
	c := s.inflight[0]
	if !c.lowSeen || c.db != tbl.db || c.name != tbl.name {
		return nil
	}
	for _, r := range rows {
		key, err := tbl.appendKey(nil, r)
		if err != nil {
			return err
		}
		c.dropped[string(key)] = true
	}
	return nil
}

// publishChunk emits what is left of the chunk in flight whose high
// watermark the stream met as 'r' events, at versions from the clock now.
// When it returns, the chunk's rows of its table are published: the
// task's After and Rows say so, and the checkpoint carries them.
func (s *stream) publishChunk(ctx context.Context, h *replication.EventHeader) error {
	c, err := s.popChunk(ctx)
	if err != nil {
		return err
	}
	task := &s.snapshots[0]
	if err := s.checkKey(task.Table, c.table, fmt.Sprintf("%s:%d", s.file, h.LogPos)); err != nil {
		return err
	}
	src := s.source(h)
	frame := newReadFrame(c.table, src)
	// The chunk's records are one slice, and share one timestamp (franz-go
	// reads the clock for each record without one): they are produced
	// together, acknowledged together, handed back together.
	recs := s.recs.get(len(c.keys))
	now := time.Now()
	emitted := 0
	for i, key := range c.keys {
		if c.dropped[string(key)] {
			continue
		}
		after := c.afters[i]
		if s.debeziumFormat() {
			s.clock.Next(h.Timestamp) // the versions stay those of readside's envelope
			if err := s.publishDebezium(ctx, c.table, src, after); err != nil {
				return err
			}
			emitted++
			continue
		}
		value, keyAt := frame.appendRead(s.slab.room(len(key)+len(after)+len(frame.table)+len(frame.source)+len(frame.schema)+64),
			s.clock.Next(h.Timestamp), s.txnEvents, key, after)
		value = s.slab.keep(value)
		s.txnEvents++
		// The key as the value holds it: the chunk's own bytes go back to
		// the reader once it is published (releaseBufs).
		key = value[keyAt : keyAt+len(key) : keyAt+len(key)]
		recs = append(recs, kgo.Record{Topic: c.table.topic, Key: key, Value: value, Timestamp: now})
		if err := s.pub.produce(ctx, &recs[len(recs)-1]); err != nil {
			return err
		}
		emitted++
	}
	if !s.debeziumFormat() {
		c.releaseBufs() // every record holds copies of its key and image
	}
	s.t.metrics.events.WithLabelValues(task.Table, "r").Add(float64(emitted))
	task.Rows += int64(emitted)
	if c.lastKey != nil {
		task.After = c.lastKey
	}
	if c.complete {
		s.snapshotDone(task)
		s.snapshots = s.snapshots[1:]
		s.stopReader()
		return nil
	}
	if task.Rows/int64(s.t.cfg.Source.Snapshot.ChunkRows)%50 == 0 {
		s.t.log.Info("snapshot progress", "table", task.Table, "rows", task.Rows)
	}
	return s.openNext(c)
}

// openNext opens the window of the chunk after c at c's high watermark,
// the binlog point the stream is at. The reader announced that chunk
// before it handed over c's rows, so it is there unless the reader is
// over (stopped, or failed: the stream takes that up next).
func (s *stream) openNext(c *chunk) error {
	s.take()
	if len(s.inflight) == 0 {
		select {
		case <-s.reader.done:
			return nil
		default:
		}
		return fmt.Errorf("snapshot chunk %s of %s was published and the reader announced no next chunk to open at its high watermark (a bug); the stream restarts from its checkpoint", c.id, c.task.table)
	}
	next := s.inflight[0]
	if !next.opensAtPrev || next.lowSeen {
		return fmt.Errorf("snapshot chunk %s follows chunk %s but has a low watermark of its own (a bug); the stream restarts from its checkpoint", next.id, c.id)
	}
	next.lowSeen = true
	return nil
}
