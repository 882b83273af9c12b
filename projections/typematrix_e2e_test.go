package projections_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// typeMatrix is the tailer's type matrix (cdc/types_e2e_test.go) less its
// generated columns, with the edges of TIMESTAMP (a second column without
// fractions) and ENUM and SET columns of latin1 with non-ASCII members.
var typeMatrix = []struct{ name, def string }{
	{"ti", "TINYINT"}, {"tiu", "TINYINT UNSIGNED"}, {"si", "SMALLINT"}, {"siu", "SMALLINT UNSIGNED"},
	{"mi", "MEDIUMINT"}, {"miu", "MEDIUMINT UNSIGNED"}, {"i", "INT"}, {"iu", "INT UNSIGNED"},
	{"bi", "BIGINT"}, {"biu", "BIGINT UNSIGNED"},
	{"d1", "DECIMAL(65,30)"}, {"d2", "DECIMAL(38,0)"}, {"d3", "DECIMAL(38,38)"}, {"d4", "DECIMAL(10,2) UNSIGNED"},
	{"f", "FLOAT"}, {"dbl", "DOUBLE"},
	{"dt0", "DATETIME"}, {"dt6", "DATETIME(6)"}, {"ts0", "TIMESTAMP NULL"}, {"ts6", "TIMESTAMP(6) NULL"},
	{"t0", "TIME"}, {"t2", "TIME(2)"}, {"t6", "TIME(6)"}, {"y", "YEAR"}, {"dte", "DATE"},
	{"c_latin1", "CHAR(10) CHARACTER SET latin1"}, {"vc_utf8", "VARCHAR(50) CHARACTER SET utf8mb4"},
	{"tx", "TEXT CHARACTER SET utf8mb4"}, {"vc_gbk", "VARCHAR(20) CHARACTER SET gbk"},
	{"bn", "BINARY(4)"}, {"vb", "VARBINARY(16)"}, {"bl", "BLOB"}, {"j", "JSON"},
	{"e", "ENUM('a','b','c')"}, {"s", "SET('x','y','z')"},
	{"el", "ENUM('a','ünï','€','Ä') CHARACTER SET latin1"}, {"sl", "SET('x','é','ß','µ') CHARACTER SET latin1"},
	{"b1", "BIT(1)"}, {"b64", "BIT(64)"},
}

// typeMatrixRows are the values, in typeMatrix's order: maxima, minima and
// zeros (zero dates, YEAR 0000, TIMESTAMP's first second), the zero
// TIMESTAMP and NULLs.
var typeMatrixRows = []string{
	`127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
	 '99999999999999999999999999999999999.999999999999999999999999999990', 99999999999999999999999999999999999999,
	 0.99999999999999999999999999999999999999, 12345678.90, 0.1, 1.7976931348623157e308,
	 '9999-12-31 23:59:59', '2020-01-02 03:04:05.012300', '2038-01-19 03:14:07', '2038-01-19 03:14:07.999999',
	 '838:59:59', '-838:59:59.00', '-00:00:00.000001', 2155, '9999-12-31',
	 'áé', '😀 “quotes” \\ back \ttab', 'line1\nline2 \0 nul', '中文',
	 'ab', 0x00ff, 0x000102fffe, '{"f": 32.0, "n": null, "big": 18446744073709551615}', 'c', 'x,z', 'ünï', 'é,ß', b'1', 0xFFFFFFFFFFFFFFFF`,
	`-128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
	 '-99999999999999999999999999999999999.000000000000000000000000000001', -99999999999999999999999999999999999999,
	 -0.00000000000000000000000000000000000001, 0, -1.5e-38, 4.9e-324,
	 '0000-00-00 00:00:00', '2020-00-00 00:00:00.000000', '1970-01-01 00:00:01', '1970-01-01 00:00:01.000001',
	 '-838:59:59', '00:00:00', '00:00:00.000001', 0, '0000-00-00',
	 '', '', '', '', '', '', '', '"text"', 'a', '', '€', 'x,µ', b'0', 0`,
	`1, 1, 1, 1, 1, 1, 1, 1, 1, 1, '0.000000000000000000000000000001', 1, 0.1, 0.01, 1.5, 0.5,
	 '1000-01-01 00:00:00', '1000-01-01 00:00:00.000000', '0000-00-00 00:00:00', '1970-01-01 05:30:00.500000',
	 '00:00:01', '00:00:00.01', '-00:00:01.5', 1901, '1000-01-01',
	 'Ä', 'ü', 'x', '表', 0x00000000, 0x00, 0x00, '[]', 'b', 'y', 'Ä', '', b'0', 1`,
	`NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`,
}

// TestTypeMatrixIntoANonUTCSink: the type matrix projected, re-keyed (rk,
// then the source key under another name), into a read table on a sink
// server of its own whose global time_zone is +05:30 and whose sql_mode
// is the server default. Rows written before the first start
// (snapshot), inserted live, updated (a key move among them) and deleted
// land byte for byte: every column's HEX(CAST(col AS BINARY)) in the read
// table equals the source's, TIMESTAMPs read in UTC on both servers, and
// so does ENUM index 0 (the invalid-value member), snapshotted and live,
// by its index (e+0): the sink's strict sql_mode refuses it otherwise.
func TestTypeMatrixIntoANonUTCSink(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	sinkServer, err := testbed.StartMariaDBWith(ctx, filepath.Join(bed.Dir(), "ist-sink"), testbed.MariaDBOptions{ServerID: 23, Args: []string{"--default-time-zone=+05:30"}})
	t.Cleanup(func() {
		if sinkServer != nil {
			if err := sinkServer.Close(); err != nil {
				t.Errorf("closing the sink server: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var zone string
	if err := sinkServer.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.time_zone").Scan(&zone); err != nil || zone != "+05:30" {
		t.Fatalf("the sink server's time_zone is %q (%v), want +05:30", zone, err)
	}

	src, err := bed.MySQL.CreateDatabase(ctx, "matrix")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := sinkServer.CreateDatabase(ctx, "matrixreads")
	if err != nil {
		t.Fatal(err)
	}
	// Written and read in UTC, so TIMESTAMP literals are UTC instants.
	srcDB := openUTC(t, bed.MySQL.AdminDSN()+src)
	sinkRead := openUTC(t, sinkServer.AdminDSN()+sinkDB)
	var names, defs []string
	for _, c := range typeMatrix {
		names = append(names, c.name)
		defs = append(defs, c.name+" "+c.def)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := srcDB.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%.300s: %v", q, err)
		}
	}
	exec("CREATE TABLE m (id INT UNSIGNED PRIMARY KEY, rk VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL, " + strings.Join(defs, ", ") + ")")
	insert := func(id int, rk string, row string) {
		t.Helper()
		exec(fmt.Sprintf("INSERT INTO m (id, rk, %s) VALUES (%d, '%s', %s)", strings.Join(names, ", "), id, rk, row))
	}
	// Before the first start: snapshotted.
	for i, row := range typeMatrixRows {
		insert(1+i, "snap-"+strconv.Itoa(len(typeMatrixRows)-i), row)
	}
	// ENUM index 0, the invalid-value member a non-strict source stores.
	enumZero := func(id int) {
		t.Helper()
		exec(fmt.Sprintf("SET STATEMENT sql_mode = '' FOR UPDATE m SET e = 'bogus', el = 'bogus' WHERE id = %d", id))
	}
	insert(9, "snap-zero", typeMatrixRows[0])
	enumZero(9)

	columns := map[string]string{"row_id": "id", "rk": "rk"}
	for _, n := range names {
		columns[n] = n
	}
	sink := config.Sink{DSN: config.Secret(sinkServer.AdminDSN() + sinkDB)}
	cfg := bed.Config("matrix", src+".m")
	cfg.Source.Snapshot.Mode = "initial"
	cfg.Kafka.Partitions = 3
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"matrix_by_rk": {From: src + ".m", Sink: "reads", Key: []string{"rk", "row_id"}, Columns: columns}}
	p, ddl := compileOne(ctx, t, bed, cfg)
	sk := openSink(ctx, t, sink, ddl)
	runTailer(t, bed, cfg)
	stop := startProjector(t, p, sk, cfg.Kafka.Brokers)
	defer stop()

	// Live: the same values again, then updates (one moving its row to
	// another read key) and deletes of snapshotted and live rows.
	for i, row := range typeMatrixRows {
		insert(11+i, "live-"+strconv.Itoa(i), row)
	}
	insert(19, "live-zero", typeMatrixRows[1])
	enumZero(19)
	exec("UPDATE m SET vc_utf8 = 'ü updated', biu = 18446744073709551614, d1 = -0.5, y = 0, el = '€', sl = 'x,é,ß,µ', " +
		"ts0 = '1970-01-01 00:00:01', ts6 = '2038-01-19 03:14:07.999999', dte = '0000-00-00', bl = 0x0000ff00 WHERE id IN (1, 11)")
	exec("UPDATE m SET y = 1901, el = 'ünï', ts0 = '2038-01-19 03:14:07', rk = 'moved' WHERE id = 12")
	exec("UPDATE m SET y = 2155, el = 'Ä', sl = 'µ', b64 = 0x8000000000000001, dt0 = '0000-00-00 00:00:00' WHERE id = 2")
	exec("DELETE FROM m WHERE id IN (3, 13)")

	exprs := func(key string) string {
		out := []string{"rk", key + " AS row_id", "e+0 AS e_index", "el+0 AS el_index"}
		for _, n := range names {
			out = append(out, "HEX(CAST("+n+" AS BINARY)) AS "+n)
		}
		return strings.Join(out, ", ")
	}
	srcQuery := "SELECT " + exprs("id") + " FROM m ORDER BY rk, id"
	sinkQuery := "SELECT " + exprs("row_id") + " FROM matrix_by_rk ORDER BY rk, row_id"
	var want, got [][]string
	deadline := time.Now().Add(120 * time.Second)
	for {
		want, got = rowsOf(t, srcDB, srcQuery), rowsOf(t, sinkRead, sinkQuery)
		if fmt.Sprint(want) == fmt.Sprint(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read table differs from the source after 120s:\n%s", matrixDiff(want, got))
		}
		time.Sleep(300 * time.Millisecond)
	}
	var session [3]string
	if err := sk.Shards[0].DB().QueryRowContext(ctx, "SELECT @@SESSION.time_zone, @@SESSION.sql_mode, @@SESSION.character_set_connection").Scan(&session[0], &session[1], &session[2]); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows of %d columns equal byte for byte on a +05:30 sink (its sessions: time_zone %s, sql_mode %s, %s)", len(want), len(typeMatrix), session[0], session[1], session[2])
}

// openUTC opens dsn (a server's admin DSN and a database) with sessions in
// UTC.
func openUTC(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// rowsOf is query's rows, each a column name=value list (NULL as NULL).
func rowsOf(t *testing.T, db *sql.DB, query string) [][]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatalf("%.200s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = cols[i] + "=NULL"
			if v.Valid {
				row[i] = cols[i] + "=" + v.String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// matrixDiff names, row by row, the columns whose values differ.
func matrixDiff(want, got [][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "source %d rows, read table %d rows\n", len(want), len(got))
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			fmt.Fprintf(&b, "row %d missing from the read table: %s %s\n", i, want[i][0], want[i][1])
			continue
		case i >= len(want):
			fmt.Fprintf(&b, "row %d extra in the read table: %s %s\n", i, got[i][0], got[i][1])
			continue
		}
		for j := range want[i] {
			if want[i][j] != got[i][j] {
				fmt.Fprintf(&b, "row %d (%s %s): source %s, read %s\n", i, want[i][0], want[i][1], want[i][j], got[i][j])
			}
		}
	}
	return b.String()
}
