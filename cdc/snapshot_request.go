package cdc

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
)

// A snapshot request is a row of the source's request table, so it can be
// written by hand, by an older binary, or meet a table or column dropped
// after it was written. Its chunk query then fails the same way on every
// retry: such a request is recorded in the failures table, logged and
// dropped, and the tailer goes on streaming. Anything else (a lost
// connection, a lock wait) is retried like any read of the source.

// requestErrors are the server errors a retry of the same query cannot
// cure: the request itself is wrong for the source as it is now.
var requestErrors = map[uint16]string{
	1049: "unknown database",
	1052: "ambiguous column",
	1054: "unknown column",
	1064: "SQL syntax error",
	1111: "invalid use of a group function",
	1142: "table access denied",
	1143: "column access denied",
	1146: "no such table",
	1241: "operand should contain other columns",
	1242: "subquery returns more than one row",
	1267: "illegal mix of collations",
	1305: "no such function",
	1630: "no such function",
}

// isRequestError reports whether err is one of requestErrors, or a table
// the source cannot snapshot as it is now.
func isRequestError(err error) bool {
	var un *unsnapshottable
	if errors.As(err, &un) {
		return true
	}
	var me *driver.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	_, ok := requestErrors[me.Number]
	return ok
}

// chunkFailed handles a failed chunk of s.snapshots[0] (its table's
// columns or its query): a request
// the source cannot run is failed and skipped; other errors are returned
// for the stream to retry.
func (s *stream) chunkFailed(ctx context.Context, err error) error {
	task := s.snapshots[0]
	s.stopReader()
	if !isRequestError(err) {
		return fmt.Errorf("reading snapshot chunk of %s: %w", task.Table, err)
	}
	s.snapshots = s.snapshots[1:]
	s.snapshotDropped(task, "failed")
	s.t.log.Error("snapshot request failed and was skipped; the tailer goes on streaming",
		"request", task.ID, "table", task.Table, "where", task.Where, "err", err,
		"fix", "fix the table or --where and request it again with readside snapshot; failed requests are in "+
			s.t.cfg.Source.Snapshot.SignalDB+"."+failedTable)
	if _, ierr := s.src.db.ExecContext(ctx, "INSERT INTO "+quoteIdent(s.t.cfg.Source.Snapshot.SignalDB)+"."+failedTable+
		" (request_id, server_id, table_name, where_clause, error) VALUES (?, ?, ?, ?, ?)",
		task.ID, s.t.cfg.Source.ServerID, task.Table, task.Where, err.Error()); ierr != nil {
		// The ERROR line above is the report; the row is a convenience.
		s.t.log.Warn("could not record the failed snapshot request on the source", "request", task.ID, "err", ierr)
	}
	return nil
}

// cancelled drops the queued snapshots whose request rows were deleted
// (readside snapshot --cancel, or by hand). Tasks from a checkpoint
// written before requests carried ids match by table.
func (s *stream) cancelled(rows [][]any) {
	for _, row := range rows {
		if len(row) < 3 || fmt.Sprint(row[1]) != fmt.Sprint(s.t.cfg.Source.ServerID) {
			continue
		}
		id, table := rowID(row[0]), fmt.Sprint(row[2])
		if id == 0 {
			continue
		}
		kept := s.snapshots[:0]
		for i, task := range s.snapshots {
			if task.ID == id || task.ID == 0 && task.Table == table {
				if i == 0 {
					s.stopReader() // its chunks' watermarks are then ignored
				}
				s.snapshotDropped(task, "cancelled")
				s.t.log.Info("snapshot request cancelled", "request", id, "table", task.Table, "rows_published", task.Rows)
				continue
			}
			kept = append(kept, task)
		}
		s.snapshots = kept
	}
}

// rowID reads the request table's id column from a binlog row.
func rowID(v any) uint64 {
	id, _ := strconv.ParseUint(fmt.Sprint(v), 10, 64)
	return id
}

// CancelSnapshot deletes the pending snapshot requests of table (db.table)
// for the tailer with serverID and returns how many it deleted. The tailer
// sees the deletes in the binlog and drops those snapshots, even one it
// has begun.
func CancelSnapshot(ctx context.Context, dsn string, tlsCfg config.TLS, signalDB string, serverID uint32, table string) (int64, error) {
	src, err := openSource(ctx, dsn, "", tlsCfg)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if err := src.ensureSignalTables(ctx, signalDB); err != nil {
		return 0, err
	}
	res, err := src.db.ExecContext(ctx, "DELETE FROM "+quoteIdent(signalDB)+"."+requestTable+" WHERE server_id = ? AND table_name = ?", serverID, table)
	if err != nil {
		return 0, fmt.Errorf("deleting the snapshot requests of %s: %w", table, err)
	}
	return res.RowsAffected()
}
