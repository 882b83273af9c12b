package cdc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
)

// What `/status`, `readside status` and `readside snapshot --pending` show
// of snapshot requests is read from the source's signal tables, so a
// process that runs no tailer (or none at all) reports the same.

// FailureWindow is how far back a failed snapshot request is reported.
const FailureWindow = 7 * 24 * time.Hour

// maxFailures bounds the failures reported, newest first.
const maxFailures = 10

// SnapshotFailure is a snapshot request the tailer failed and skipped.
type SnapshotFailure struct {
	Request  uint64    `json:"request"`
	Table    string    `json:"table"`
	Where    string    `json:"where,omitempty"`
	Error    string    `json:"error"`
	Fix      string    `json:"fix"`
	FailedAt time.Time `json:"failed_at"`
}

// SnapshotRequest is a request row the tailer has not read yet.
type SnapshotRequest struct {
	ID          uint64    `json:"id"`
	Table       string    `json:"table"`
	Where       string    `json:"where,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
}

// SnapshotLog reads one tailer's snapshot requests and failures from the
// source, keeping its connection between reads. Safe for concurrent use.
type SnapshotLog struct {
	dsn      string
	tls      config.TLS
	signalDB string
	serverID uint32

	mu  sync.Mutex
	src *sourceDB
}

// NewSnapshotLog prepares a reader for the tailer of src; it does no I/O.
func NewSnapshotLog(src config.Source) *SnapshotLog {
	return &SnapshotLog{dsn: src.DSN.Reveal(), tls: src.TLS, signalDB: src.Snapshot.SignalDB, serverID: src.ServerID}
}

// Close releases the connection.
func (l *SnapshotLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.src == nil {
		return nil
	}
	err := l.src.Close()
	l.src = nil
	return err
}

// query runs q on the source, opening the connection when needed. A
// signal table that does not exist yet holds no rows.
func (l *SnapshotLog) query(ctx context.Context, q string, args []any, row func(*sql.Rows) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.src == nil {
		src, err := openSource(ctx, l.dsn, "", l.tls)
		if err != nil {
			return err
		}
		l.src = src
	}
	rows, err := l.src.db.QueryContext(ctx, q, args...)
	var me *driver.MySQLError
	switch {
	case errors.As(err, &me) && (me.Number == 1146 || me.Number == 1049): // no table, no database
		return nil
	case err != nil:
		return fmt.Errorf("reading readside's snapshot tables in %s on the source: %w", l.signalDB, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Failures are the requests failed within FailureWindow, newest first.
func (l *SnapshotLog) Failures(ctx context.Context) ([]SnapshotFailure, error) {
	var out []SnapshotFailure
	err := l.query(ctx, "SELECT request_id, table_name, COALESCE(where_clause, ''), error, failed_at FROM "+quoteIdent(l.signalDB)+"."+failedTable+
		" WHERE server_id = ? AND failed_at > NOW(6) - INTERVAL ? SECOND ORDER BY id DESC LIMIT ?",
		[]any{l.serverID, int64(FailureWindow.Seconds()), maxFailures}, func(rows *sql.Rows) error {
			var f SnapshotFailure
			var at []byte
			if err := rows.Scan(&f.Request, &f.Table, &f.Where, &f.Error, &at); err != nil {
				return err
			}
			f.FailedAt, _ = time.Parse("2006-01-02 15:04:05.999999", string(at))
			f.Fix = failureFix(f, l.signalDB)
			out = append(out, f)
			return nil
		})
	return out, err
}

// Unread are the request rows with an id above last (Checkpoint.LastRequest):
// written, but not read from the binlog by the tailer yet.
func (l *SnapshotLog) Unread(ctx context.Context, last uint64) ([]SnapshotRequest, error) {
	var out []SnapshotRequest
	err := l.query(ctx, "SELECT id, table_name, COALESCE(where_clause, ''), requested_at FROM "+quoteIdent(l.signalDB)+"."+requestTable+
		" WHERE server_id = ? AND id > ? ORDER BY id", []any{l.serverID, last}, func(rows *sql.Rows) error {
		var r SnapshotRequest
		var at []byte
		if err := rows.Scan(&r.ID, &r.Table, &r.Where, &at); err != nil {
			return err
		}
		r.RequestedAt, _ = time.Parse("2006-01-02 15:04:05.999999", string(at))
		out = append(out, r)
		return nil
	})
	return out, err
}

// failureFix says what to do about a failed request.
func failureFix(f SnapshotFailure, signalDB string) string {
	again := "readside snapshot --table " + f.Table
	if f.Where != "" {
		again += " --where '<fixed condition>'"
	}
	clear := fmt.Sprintf("; it is reported for %s (to clear it sooner: DELETE FROM %s.%s WHERE request_id = %d)", FailureWindow, signalDB, failedTable, f.Request)
	if strings.Contains(f.Error, "does not exist") || strings.Contains(f.Error, "doesn't exist") {
		return "the table is gone from the source: recreate it and request again with `" + again + "`, or remove it from source.tables" + clear
	}
	if f.Where != "" {
		return "fix the --where condition and request again with `" + again + "`" + clear
	}
	return "fix what the error names and request again with `" + again + "`" + clear
}
