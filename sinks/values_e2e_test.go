package sinks_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestApplyWritesValuesExactly: values that a statement's text could get
// wrong — quotes, backslashes, NUL and Ctrl-Z, every byte value in a blob,
// a `?` or a comment opener inside a string, 4-byte UTF-8, exact decimals,
// the full unsigned range, bits, geometry — arrive in the read table byte
// for byte as a plain prepared INSERT stores them in the source table. The
// sink writes parameters into the statement text (interpolation), so this
// is checked under the server's default escaping and under
// NO_BACKSLASH_ESCAPES, where a backslash is an ordinary character.
func TestApplyWritesValuesExactly(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "vsrc")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, s VARCHAR(200) CHARACTER SET utf8mb4, b VARBINARY(300), bl BLOB, "+
		"d DECIMAL(40,10), bt BIT(64), u BIGINT UNSIGNED, g GEOMETRY)"); err != nil {
		t.Fatal(err)
	}
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	point := func(id int) []byte { // SRID 0 + WKB POINT(id, -id)
		var wkb []byte
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT ST_AsBinary(POINT(?, ?))", id, -id).Scan(&wkb); err != nil {
			t.Fatal(err)
		}
		return append([]byte{0, 0, 0, 0}, wkb...)
	}
	strs := []string{"plain", "it's", `back\slash`, `\'; DROP TABLE t; --`, "nul\x00byte", "ctrl-z\x1a", `"double"`,
		"question ? mark", "/* not a comment */", "-- nor this", "# nor this", "emoji 🦀 and ✓", "", `trailing\`, "%_like_"}
	type row struct {
		id   int
		vals []any // s, b, bl, d, bt, u, g
	}
	var rows []row
	for i, s := range strs {
		rows = append(rows, row{i + 1, []any{s, []byte(s), every, fmt.Sprintf("%d.%010d", 123456789012345*int64(i+1), i*7919), uint64(1)<<63 | uint64(i), ^uint64(0) - uint64(i), point(i + 1)}})
	}
	rows = append(rows, row{len(strs) + 1, []any{nil, nil, nil, nil, nil, nil, nil}})
	for _, r := range rows {
		if _, err := bed.MySQL.DB().ExecContext(ctx, "INSERT INTO `"+src+"`.t VALUES (?, ?, ?, ?, ?, ?, ?, ?)", append([]any{r.id}, r.vals...)...); err != nil {
			t.Fatal(err)
		}
	}
	const cols = "id, HEX(s), HEX(b), HEX(bl), d, bt + 0, u, HEX(g)"
	want := testbed.RowsText(t, bed.MySQL.DB(), "SELECT "+cols+" FROM `"+src+"`.t ORDER BY id")

	for _, mode := range []string{"", "NO_BACKSLASH_ESCAPES"} {
		t.Run("sql_mode="+mode, func(t *testing.T) {
			sinkDB, err := bed.MySQL.CreateDatabase(ctx, "vsink")
			if err != nil {
				t.Fatal(err)
			}
			var params string
			if mode != "" {
				params = "?sql_mode=" + url.QueryEscape("'"+mode+"'")
			}
			p, sink := copyTableAs(t, bed, src, sinkDB, "t_copy", map[string]string{"id": "id", "s": "s", "b": "b", "bl": "bl", "d": "d", "bt": "bt", "u": "u", "g": "g"}, params)
			if mode != "" {
				var got string
				if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&got); err != nil || !strings.Contains(got, mode) {
					t.Fatalf("sink session sql_mode %q (%v), want it to contain %s", got, err, mode)
				}
			}
			b := &projections.Batch{Offsets: event.Offsets{}}
			b.Offsets.Set(p.Topic, 0, int64(len(rows)))
			for _, r := range rows {
				byName := map[string]any{"id": r.id, "s": r.vals[0], "b": r.vals[1], "bl": r.vals[2], "d": r.vals[3], "bt": r.vals[4], "u": r.vals[5], "g": r.vals[6]}
				var vals []any
				for _, c := range p.Columns {
					vals = append(vals, byName[c.Name])
				}
				b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(r.id), Values: projections.ValuesOf(vals...), Version: uint64(100 + r.id)})
			}
			prepared := func() (n int64) {
				var name string
				if err := bed.MySQL.DB().QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_stmt_prepare'").Scan(&name, &n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			before := prepared()
			if err := sink.Apply(ctx, p, b); err != nil {
				t.Fatal(err)
			}
			// The interpolated path is the one under test: nothing prepared.
			if n := prepared() - before; n != 0 {
				t.Fatalf("the sink prepared %d statements for one batch; it should write the values into the statement text", n)
			}
			got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT "+cols+" FROM `"+sinkDB+"`.t_copy ORDER BY id")
			if got != want {
				t.Fatalf("read table differs from the source:\nsource:\n%s\nread:\n%s", want, got)
			}
			t.Logf("%d rows of quotes, backslashes, NULs, every byte, decimals, bits, unsigned and geometry arrived exactly", len(rows))
		})
	}
}

// TestApplyLateUpsertsUnderTruncateAndTombstones: after a truncation at
// version 20, upserts older than it are skipped in every 500-row chunk of a
// batch (the floor is read with the first chunk's tombstones), newer ones
// land, and a delete's tombstone keeps an older upsert of its key out. Each
// batch's count of skipped upserts (the stale-skipped metric) is checked.
func TestApplyLateUpsertsUnderTruncateAndTombstones(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "t", "id INT PRIMARY KEY, v INT")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	up := func(id int, version uint64) projections.Write {
		vals := make([]any, len(p.Columns))
		for i, c := range p.Columns {
			vals[i] = map[string]any{"id": id, "v": int(version)}[c.Name]
		}
		return projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Values: projections.ValuesOf(vals...), Version: version}
	}
	apply := func(skipped int64, ws ...projections.Write) {
		t.Helper()
		var stale atomic.Int64
		if err := sink.Apply(ctx, p, &projections.Batch{Writes: ws, Stale: &stale}); err != nil {
			t.Fatal(err)
		}
		if got := stale.Load(); got != skipped {
			t.Fatalf("the sink skipped %d upserts of the batch as shadowed, want %d", got, skipped)
		}
	}
	rows := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT id, v FROM `"+sinkDB+"`.t_copy ORDER BY id")
	}
	apply(0, up(1, 10), up(2, 10))
	apply(0, projections.Write{Kind: projections.Truncate, Version: 20})
	var late []projections.Write
	for id := 1; id <= 1200; id++ { // three chunks, all older than the truncation
		late = append(late, up(id, 15))
	}
	apply(1200, append(late, up(1201, 25), up(1202, 25))...)
	del := projections.Write{Kind: projections.Delete, Key: "1202", Values: projections.ValuesOf(1202), Version: 30} // Values: the key columns
	apply(0, del)
	apply(1, up(1202, 28), up(1201, 26))
	if got, want := rows(), "1201|26|\n"; got != want {
		t.Fatalf("read table after truncation, late upserts and a delete:\n%swant:\n%s", got, want)
	}
	// Newer than the tombstone and the truncation: back, nothing skipped.
	apply(0, up(1202, 31), up(1203, 32))
	// A batch whose oldest upsert is shadowed and whose other is not: only
	// that one is skipped.
	apply(1, up(1202, 30), up(1204, 33))
	if got, want := rows(), "1201|26|\n1202|31|\n1203|32|\n1204|33|\n"; got != want {
		t.Fatalf("read table after upserts newer than the tombstone:\n%swant:\n%s", got, want)
	}
}

// TestSinkConnectionsReadCommitted: apply's join argument (a parent change
// and a child write meet at the state-row lock, and the second one's
// fan-out reads the first one's committed rows) needs READ COMMITTED,
// which every sink connection gets when it opens — checked on several
// connections of the pool, not only the first.
func TestSinkConnectionsReadCommitted(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "rcsink")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.Open(ctx, bed.MySQL.AdminDSN()+sinkDB)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	// Both pools: the batches' (multi-statement packets) and the rest.
	if sink.BatchDB() == nil {
		t.Fatal("no batch pool on a utf8mb4 sink: batches would not be pipelined")
	}
	var conns []*sql.Conn
	for _, db := range []*sql.DB{sink.DB(), sink.BatchDB()} {
		for range 3 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
	}
	for i, c := range conns {
		var level string
		// MariaDB before 11.1 names the variable tx_isolation; MySQL 8 only transaction_isolation.
		if err := c.QueryRowContext(ctx, "SELECT @@SESSION.tx_isolation").Scan(&level); err != nil {
			if err := c.QueryRowContext(ctx, "SELECT @@SESSION.transaction_isolation").Scan(&level); err != nil {
				t.Fatal(err)
			}
		}
		if level != "READ-COMMITTED" {
			t.Errorf("sink connection %d runs at %s, want READ-COMMITTED", i, level)
		}
		c.Close()
	}
}

// TestSinkSessionWhateverTheDefaults: a sink whose sessions start in
// another time zone, in a latin1 connection charset and under a sql_mode
// that refuses zero dates and changes how statements parse (all set by
// the DSN here, as a server's defaults would be) still gets exact values:
// every pooled connection of both pools runs in UTC, utf8mb4 and
// readside's sql_mode, and TIMESTAMP's first second, zero dates, an
// invalid day the source allowed, YEAR 0000 and 4-byte UTF-8 land as the
// source holds them.
func TestSinkSessionWhateverTheDefaults(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "ssrc")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"SET time_zone = '+00:00', sql_mode = 'ALLOW_INVALID_DATES'",
		"CREATE TABLE `" + src + "`.t (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, dz DATE, dtz DATETIME, di DATE, y YEAR, s VARCHAR(20) CHARACTER SET utf8mb4)",
		"INSERT INTO `" + src + "`.t VALUES (1, '1970-01-01 00:00:01.000001', '0000-00-00', '2020-00-00 00:00:00', '2020-02-31', 0, 'ünï 😀'), " +
			"(2, '2038-01-19 03:14:07.999999', '2020-01-00', '0000-00-00 00:00:00', '2021-04-31', 2155, '€')",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows := [][]any{
		{1, "1970-01-01 00:00:01.000001", "0000-00-00", "2020-00-00 00:00:00", "2020-02-31", "0000", "ünï 😀"},
		{2, "2038-01-19 03:14:07.999999", "2020-01-00", "0000-00-00 00:00:00", "2021-04-31", "2155", "€"},
	}
	const cols = "id, HEX(CAST(ts AS BINARY)), HEX(CAST(dz AS BINARY)), HEX(CAST(dtz AS BINARY)), HEX(CAST(di AS BINARY)), HEX(CAST(y AS BINARY)), HEX(s)"
	want := testbed.RowsText(t, bed.MySQL.DB(), "SELECT "+cols+" FROM `"+src+"`.t ORDER BY id")

	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "ssink")
	if err != nil {
		t.Fatal(err)
	}
	params := "?charset=latin1&time_zone=" + url.QueryEscape("'+05:30'") +
		"&sql_mode=" + url.QueryEscape("'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ANSI_QUOTES,PAD_CHAR_TO_FULL_LENGTH'")
	p, sink := copyTableAs(t, bed, src, sinkDB, "t_copy", map[string]string{"id": "id", "ts": "ts", "dz": "dz", "dtz": "dtz", "di": "di", "y": "y", "s": "s"}, params)
	pools := map[string]*sql.DB{"statements": sink.Shards[0].DB(), "batches": sink.Shards[0].BatchDB()}
	for name, db := range pools {
		if db == nil {
			t.Fatalf("no %s pool: a latin1 connection charset should still pipeline", name)
		}
		// Several connections held at once: each is a new one.
		var held []*sql.Conn
		for range 3 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
			var zone, mode, client, connection, results string
			if err := c.QueryRowContext(ctx, "SELECT @@SESSION.time_zone, @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.character_set_connection, @@SESSION.character_set_results").
				Scan(&zone, &mode, &client, &connection, &results); err != nil {
				t.Fatal(err)
			}
			if zone != "+00:00" || mode != "STRICT_ALL_TABLES,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION" || client != "utf8mb4" || connection != "utf8mb4" || results != "utf8mb4" {
				t.Errorf("%s pool connection: time_zone %s, sql_mode %s, charsets %s/%s/%s; want +00:00, readside's sql_mode and utf8mb4", name, zone, mode, client, connection, results)
			}
		}
		for _, c := range held {
			c.Close()
		}
	}
	b := &projections.Batch{Offsets: event.Offsets{}}
	b.Offsets.Set(p.Topic, 0, int64(len(rows)))
	for _, r := range rows {
		byName := map[string]any{"id": r[0], "ts": r[1], "dz": r[2], "dtz": r[3], "di": r[4], "y": r[5], "s": r[6]}
		var vals []any
		for _, c := range p.Columns {
			vals = append(vals, byName[c.Name])
		}
		b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(r[0]), Values: projections.ValuesOf(vals...), Version: uint64(100 + r[0].(int))})
	}
	if err := sink.Apply(ctx, p, b); err != nil {
		t.Fatal(err)
	}
	got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT "+cols+" FROM `"+sinkDB+"`.t_copy ORDER BY id")
	if got != want {
		t.Fatalf("read table differs from the source:\nsource:\n%s\nread:\n%s", want, got)
	}
	t.Logf("TIMESTAMP edges, zero and invalid dates, YEAR 0000 and 4-byte UTF-8 arrived exactly through sessions set up for another zone, latin1 and NO_ZERO_DATE")
}
