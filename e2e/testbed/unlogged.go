package testbed

import (
	"database/sql"
	"database/sql/driver"
	"testing"
)

// Unlogged runs statements on one connection of db with the binary log
// off for that session (sql_log_bin = 0): writes no tailer may see, or
// bulk loads no tailer needs. The connection is discarded afterwards, not
// returned to db's pool: a pooled session still without binlog would hide
// a later test's writes from every tailer.
func Unlogged(t testing.TB, db *sql.DB, statements ...string) {
	t.Helper()
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// driver.ErrBadConn makes database/sql close the connection.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
		t.Fatal(err)
	}
	for _, st := range statements {
		if _, err := conn.ExecContext(ctx, st); err != nil {
			t.Fatalf("%.80s: %v", st, err)
		}
	}
}
