package testbed

// SQL that differs between MySQL and MariaDB, for tests that must run on
// either (E2E_MYSQL_DSN may name a MySQL 8.4 server): statements come
// from the server's sqlflavor.Dialect, read once when the test bed
// connects, exactly as readside itself chooses them.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/readside/readside/internal/sqlflavor"
)

// Dialect is the server's statement table (sqlflavor.For of its version).
func (m *MySQL) Dialect() sqlflavor.Dialect { return m.dialect }

// Seq is a derived table (with its alias) of the integers 1..n in a BIGINT
// column seq, for INSERT ... SELECT seq, ... FROM <Seq(n)>. It replaces
// MariaDB's seq_1_to_N tables, which only its Sequence engine has: this
// cross join of digit rows runs on MySQL 5.7+ and MariaDB alike.
func Seq(n int) string {
	const digit = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
		"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	k := len(fmt.Sprint(max(n-1, 1)))
	var from, sum []string
	scale := 1
	for i := range k {
		from = append(from, fmt.Sprintf("%s AS d%d", digit, i))
		sum = append(sum, fmt.Sprintf("%d * d%d.d", scale, i))
		scale *= 10
	}
	expr := strings.Join(sum, " + ")
	return fmt.Sprintf("(SELECT %s + 1 AS seq FROM %s WHERE %s < %d) AS seq_rows", expr, strings.Join(from, " CROSS JOIN "), expr, max(n, 0))
}

// LastGTID returns a GTID (MariaDB: the session's last transaction,
// @@last_gtid) or GTID set (MySQL, which keeps no per-session GTID
// readable over SQL: @@GLOBAL.gtid_executed, read on the same connection
// right after the commit, so it holds that transaction) covering the last
// write on conn: what readside's /wait takes.
func (m *MySQL) LastGTID(ctx context.Context, conn *sql.Conn) (string, error) {
	q := "SELECT @@GLOBAL.gtid_executed"
	if m.dialect.Server.Flavor == sqlflavor.MariaDB {
		q = "SELECT @@last_gtid"
	}
	var gtid sql.NullString
	if err := conn.QueryRowContext(ctx, q).Scan(&gtid); err != nil {
		return "", fmt.Errorf("%s: %w", q, err)
	}
	return strings.ReplaceAll(gtid.String, "\n", ""), nil
}
