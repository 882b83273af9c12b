package sqlflavor

// Reading the answers of the Dialect's SHOW statements. Their column sets
// differ between releases (MySQL's SHOW BINARY LOGS has Encrypted,
// SHOW REPLICAS says Source_id where SHOW SLAVE HOSTS said Master_id), so
// columns are found by name, never by position past the first.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Result is a whole statement answer: column names and rows, NULL as
// Valid=false.
type Result struct {
	Columns []string
	Rows    [][]sql.NullString
}

// RowsQuerier is what Query reads through (*sql.DB, *sql.Conn, *sql.Tx).
type RowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Query runs stmt and reads its whole answer.
func Query(ctx context.Context, db RowsQuerier, stmt string) (Result, error) {
	rows, err := db.QueryContext(ctx, stmt)
	if err != nil {
		return Result{}, err
	}
	defer rows.Close()
	var r Result
	if r.Columns, err = rows.Columns(); err != nil {
		return r, err
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(r.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return r, err
		}
		r.Rows = append(r.Rows, vals)
	}
	return r, rows.Err()
}

// col is the index of the first column named one of names (any case), or -1.
func (r Result) col(names ...string) int {
	for _, n := range names {
		for i, c := range r.Columns {
			if strings.EqualFold(c, n) {
				return i
			}
		}
	}
	return -1
}

// BinlogStatus is the answer of Dialect.BinlogStatus.
type BinlogStatus struct {
	File string
	Pos  uint32
	// GTIDs is Executed_Gtid_Set (MySQL), without the line breaks MySQL
	// puts after each comma; "" where the statement has no such column.
	GTIDs string
}

// ErrBinlogOff means the server answered the binlog status with no row:
// binary logging is off.
var ErrBinlogOff = errors.New("binary logging is off on the source (no binlog status)")

// ParseBinlogStatus reads the file and position of a binlog status answer.
func ParseBinlogStatus(r Result) (BinlogStatus, error) {
	var st BinlogStatus
	if len(r.Rows) == 0 {
		return st, ErrBinlogOff
	}
	fi, pi := r.col("File"), r.col("Position")
	if fi < 0 || pi < 0 {
		return st, fmt.Errorf("binlog status has no File/Position columns (got %s)", strings.Join(r.Columns, ", "))
	}
	row := r.Rows[0]
	st.File = row[fi].String
	pos, err := strconv.ParseUint(row[pi].String, 10, 32)
	if err != nil {
		return st, fmt.Errorf("binlog status Position %q: %w", row[pi].String, err)
	}
	st.Pos = uint32(pos)
	if gi := r.col("Executed_Gtid_Set"); gi >= 0 {
		st.GTIDs = strings.ReplaceAll(row[gi].String, "\n", "")
	}
	return st, nil
}

// ParseBinaryLogs reads the file names of a SHOW BINARY LOGS answer, oldest first.
func ParseBinaryLogs(r Result) ([]string, error) {
	i := r.col("Log_name")
	if i < 0 {
		return nil, fmt.Errorf("SHOW BINARY LOGS has no Log_name column (got %s)", strings.Join(r.Columns, ", "))
	}
	files := make([]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		files = append(files, row[i].String)
	}
	return files, nil
}

// ReplicaHost is one row of Dialect.ReplicaHosts.
type ReplicaHost struct {
	ServerID uint32
	Host     string
	Port     int
}

// ParseReplicaHosts reads the registered replicas (SHOW REPLICAS, SHOW
// REPLICA HOSTS or SHOW SLAVE HOSTS).
func ParseReplicaHosts(r Result) ([]ReplicaHost, error) {
	si, hi, pi := r.col("Server_id"), r.col("Host"), r.col("Port")
	if si < 0 {
		return nil, fmt.Errorf("replica list has no Server_id column (got %s)", strings.Join(r.Columns, ", "))
	}
	var out []ReplicaHost
	for _, row := range r.Rows {
		var h ReplicaHost
		n, _ := strconv.ParseUint(row[si].String, 10, 32)
		h.ServerID = uint32(n)
		if hi >= 0 {
			h.Host = row[hi].String
		}
		if pi >= 0 {
			h.Port, _ = strconv.Atoi(row[pi].String)
		}
		out = append(out, h)
	}
	return out, nil
}

// ErrReplicationStopped means the server is a replica whose lag column is
// NULL: its replication is stopped.
var ErrReplicationStopped = errors.New("the source is a replica whose replication is stopped (its lag is NULL)")

// ParseReplicaLag reads a replica status answer: isReplica is false when
// the server is not a replica (no row).
func ParseReplicaLag(r Result) (lag time.Duration, isReplica bool, err error) {
	if len(r.Rows) == 0 {
		return 0, false, nil
	}
	i := r.col("Seconds_Behind_Source", "Seconds_Behind_Master")
	if i < 0 {
		return 0, true, fmt.Errorf("replica status has no Seconds_Behind_Source/Seconds_Behind_Master column (got %s)", strings.Join(r.Columns, ", "))
	}
	v := r.Rows[0][i]
	if !v.Valid {
		return 0, true, ErrReplicationStopped
	}
	s, err := strconv.Atoi(v.String)
	if err != nil {
		return 0, true, fmt.Errorf("replica lag %q: %w", v.String, err)
	}
	return time.Duration(s) * time.Second, true, nil
}
