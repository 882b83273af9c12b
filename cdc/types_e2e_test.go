package cdc

import (
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// matrixColumn is one column of the type matrix and how its value is
// compared with what the source itself says.
type matrixColumn struct {
	name, def string
	cmp       string // "text": CAST AS CHAR; "float32"/"float64": numeric; "hex": bytes; "bit": c+0
	wantType  string // the envelope's schema type, when asserted
}

var matrix = []matrixColumn{
	{"ti", "TINYINT", "text", "tinyint"}, {"tiu", "TINYINT UNSIGNED", "text", "tinyint unsigned"},
	{"si", "SMALLINT", "text", ""}, {"siu", "SMALLINT UNSIGNED", "text", ""},
	{"mi", "MEDIUMINT", "text", ""}, {"miu", "MEDIUMINT UNSIGNED", "text", "mediumint unsigned"},
	{"i", "INT", "text", ""}, {"iu", "INT UNSIGNED", "text", ""},
	{"bi", "BIGINT", "text", ""}, {"biu", "BIGINT UNSIGNED", "text", "bigint unsigned"},
	{"d1", "DECIMAL(65,30)", "text", "decimal(65,30)"}, {"d2", "DECIMAL(38,0)", "text", ""},
	{"d3", "DECIMAL(38,38)", "text", ""}, {"d4", "DECIMAL(10,2) UNSIGNED", "text", ""},
	{"f", "FLOAT", "float32", "float"}, {"dbl", "DOUBLE", "float64", "double"},
	{"dt0", "DATETIME", "text", "datetime"}, {"dt6", "DATETIME(6)", "text", "datetime(6)"},
	{"ts6", "TIMESTAMP(6) NULL", "text", "timestamp(6)"},
	{"t0", "TIME", "text", "time"}, {"t2", "TIME(2)", "text", "time(2)"}, {"t6", "TIME(6)", "text", ""},
	{"y", "YEAR", "text", "year"}, {"dte", "DATE", "text", "date"},
	{"c_latin1", "CHAR(10) CHARACTER SET latin1", "text", "char"},
	{"vc_utf8", "VARCHAR(50) CHARACTER SET utf8mb4", "text", "varchar"},
	{"tx", "TEXT CHARACTER SET utf8mb4", "text", "text"},
	{"vc_gbk", "VARCHAR(20) CHARACTER SET gbk", "text", ""},
	{"bn", "BINARY(4)", "hex", "binary(4)"}, {"vb", "VARBINARY(16)", "hex", "varbinary"}, {"bl", "BLOB", "hex", "blob"},
	{"j", "JSON", "text", ""},
	{"e", "ENUM('a','b','c')", "text", "enum"}, {"s", "SET('x','y','z')", "text", "set"},
	{"b1", "BIT(1)", "bit", "bit(1)"}, {"b64", "BIT(64)", "bit", "bit(64)"},
	{"g", "INT AS (tiu + 1) VIRTUAL", "text", ""}, {"gs", "INT AS (tiu * 2) STORED", "text", ""},
}

// matrixRows are the edge values, one row per line: maxima, minima and
// zeros, NULLs, and the invalid ENUM member (index 0).
var matrixRows = []string{
	`(1, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
	 '99999999999999999999999999999999999.999999999999999999999999999990', 99999999999999999999999999999999999999,
	 0.99999999999999999999999999999999999999, 12345678.90,
	 0.1, 1.7976931348623157e308,
	 '9999-12-31 23:59:59', '2020-01-02 03:04:05.012300', '2038-01-19 03:14:07.999999',
	 '838:59:59', '-838:59:59.00', '-00:00:00.000001', 2155, '9999-12-31',
	 'áé', '😀 “quotes” \\ back \ttab', 'line1\nline2 \0 nul', '中文',
	 'ab', 0x00ff, 0x000102fffe, '{"f": 32.0, "n": null, "big": 18446744073709551615}', 'c', 'x,z', b'1', 0xFFFFFFFFFFFFFFFF)`,
	`(2, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
	 '-99999999999999999999999999999999999.000000000000000000000000000001', -99999999999999999999999999999999999999,
	 -0.00000000000000000000000000000000000001, 0,
	 -1.5e-38, 4.9e-324,
	 '0000-00-00 00:00:00', '2020-00-00 00:00:00.000000', '1970-01-01 00:00:01.000000',
	 '-838:59:59', '00:00:00', '00:00:00.000001', 1901, '0000-00-00',
	 '', '', '', '',
	 '', '', '', '"text"', 'a', '', b'0', 0)`,
	`(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
}

// TestTypeMatrix: every column type's values in the events equal what the
// source returns for them (as text, numerically for floats, as bytes for
// binary), for inserts, an update and a delete.
func TestTypeMatrix(t *testing.T) {
	bed := testbed.Get(t)
	testTypeMatrix(t, bed, bed.MySQL)
}

// testTypeMatrix runs the type matrix against src.
func testTypeMatrix(t *testing.T, bed *testbed.Bed, src *testbed.MySQL) {
	ctx := t.Context()
	db, err := src.CreateDatabase(ctx, "types")
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	for _, c := range matrix {
		defs = append(defs, c.name+" "+c.def)
	}
	if err := src.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.m (id INT UNSIGNED PRIMARY KEY, %s)", db, strings.Join(defs, ", "))); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".m")
	cfg.Source.DSN = config.Secret(src.ReplDSN())
	startTailer(t, cfg)
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "m"))
	waitForTailerOn(t, bed, src, cfg)

	// One connection in UTC so TIMESTAMP text matches the events' UTC text.
	conn, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, conn, "SET time_zone = '+00:00'")
	var cols []string
	for _, c := range matrix {
		if !strings.HasPrefix(c.name, "g") {
			cols = append(cols, c.name)
		}
	}
	for _, row := range matrixRows {
		mustExec(t, conn, fmt.Sprintf("INSERT INTO `%s`.m (id, %s) VALUES %s", db, strings.Join(cols, ", "), row))
	}
	// ENUM index 0 (the "invalid value" member) needs a non-strict mode.
	mustExec(t, conn, "SET SESSION sql_mode = ''")
	mustExec(t, conn, fmt.Sprintf("INSERT INTO `%s`.m (id, e, s) VALUES (4, 'bogus', 'y')", db))
	inserted := expectRows(t, conn, db)
	mustExec(t, conn, fmt.Sprintf("UPDATE `%s`.m SET vc_utf8 = 'ü updated', biu = 18446744073709551614, d1 = -0.5 WHERE id = 1", db))
	updated := expectRows(t, conn, db)
	mustExec(t, conn, fmt.Sprintf("DELETE FROM `%s`.m WHERE id = 2", db))

	events := cons.next(6, 60*time.Second)
	byID := func(e testEvent) int {
		img := e.After
		if img == nil {
			img = e.Before
		}
		n, _ := strconv.Atoi(fmt.Sprint(img["id"]))
		return n
	}
	var ops []string
	for _, e := range events {
		id := byID(e)
		ops = append(ops, fmt.Sprintf("%s%d", e.Op, id))
		if want := fmt.Sprintf(`{"id":%d}`, id); e.recKey != want || string(e.Key) != want {
			t.Errorf("event %s%d: record key %s, envelope key %s, want %s", e.Op, id, e.recKey, e.Key, want)
		}
		switch e.Op {
		case "c":
			compareImage(t, "insert", id, e.After, inserted[id])
		case "u":
			compareImage(t, "update before", id, e.Before, inserted[id])
			compareImage(t, "update after", id, e.After, updated[id])
		case "d":
			compareImage(t, "delete before", id, e.Before, updated[id])
		}
	}
	if got := strings.Join(ops, " "); !sameMultiset(got, "c1 c2 c3 c4 u1 d2") {
		t.Errorf("ops = %s, want c1 c2 c3 c4 u1 d2", got)
	}
	for _, c := range matrix {
		if c.wantType != "" && events[0].Schema.Columns[c.name] != c.wantType {
			t.Errorf("schema type of %s = %q, want %q", c.name, events[0].Schema.Columns[c.name], c.wantType)
		}
	}
	// Versions increase in commit order.
	for i := 1; i < len(events); i++ {
		if events[i].Version <= events[i-1].Version && events[i].part == events[i-1].part {
			t.Errorf("version %d after %d in one partition", events[i].Version, events[i-1].Version)
		}
	}
}

func sameMultiset(a, b string) bool {
	count := map[string]int{}
	for _, f := range strings.Fields(a) {
		count[f]++
	}
	for _, f := range strings.Fields(b) {
		count[f]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

func mustExec(t *testing.T, conn *sql.Conn, q string) {
	t.Helper()
	if _, err := conn.ExecContext(t.Context(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// expectRows reads what the source says each column holds, in the form the
// comparison of that column uses. A nil entry is SQL NULL.
func expectRows(t *testing.T, conn *sql.Conn, db string) map[int]map[string]*string {
	t.Helper()
	exprs := []string{"id"}
	for _, c := range matrix {
		switch c.cmp {
		case "hex":
			exprs = append(exprs, "HEX("+c.name+")")
		case "bit":
			exprs = append(exprs, "CAST("+c.name+"+0 AS CHAR)")
		default:
			exprs = append(exprs, "CAST("+c.name+" AS CHAR)")
		}
	}
	rows, err := conn.QueryContext(t.Context(), fmt.Sprintf("SELECT %s FROM `%s`.m", strings.Join(exprs, ", "), db))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]map[string]*string{}
	for rows.Next() {
		var id int
		vals := make([]sql.NullString, len(matrix))
		ptrs := []any{&id}
		for i := range vals {
			ptrs = append(ptrs, &vals[i])
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]*string{}
		for i, c := range matrix {
			if vals[i].Valid {
				v := vals[i].String
				m[c.name] = &v
			} else {
				m[c.name] = nil
			}
		}
		out[id] = m
	}
	return out
}

func compareImage(t *testing.T, what string, id int, img map[string]any, want map[string]*string) {
	t.Helper()
	if img == nil || want == nil {
		t.Errorf("%s of row %d: image %v, source %v", what, id, img, want)
		return
	}
	for _, c := range matrix {
		got, w := img[c.name], want[c.name]
		if w == nil || got == nil {
			if (w == nil) != (got == nil) {
				t.Errorf("%s row %d column %s: event %v, source %v (NULL must stay NULL)", what, id, c.name, got, deref(w))
			}
			continue
		}
		var gs string
		switch v := got.(type) {
		case string:
			gs = v
		case json.Number:
			gs = v.String()
		default:
			t.Errorf("%s row %d column %s: unexpected JSON %T", what, id, c.name, got)
			continue
		}
		ok := gs == *w
		switch c.cmp {
		case "hex":
			b, err := base64.StdEncoding.DecodeString(gs)
			ok = err == nil && strings.EqualFold(hex.EncodeToString(b), *w)
			gs = hex.EncodeToString(b)
		case "float32", "float64":
			g, err1 := strconv.ParseFloat(gs, 64)
			s, err2 := strconv.ParseFloat(*w, 64)
			ok = err1 == nil && err2 == nil && (g == s || (c.cmp == "float32" && float32(g) == float32(s)))
		}
		if !ok {
			t.Errorf("%s row %d column %s: event %q, source %q", what, id, c.name, gs, *w)
		}
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// waitForTailer waits until the tailer has written its first checkpoint,
// so writes made after it returns are captured.
func waitForTailer(t *testing.T, bed *testbed.Bed, cfg config.Config) {
	t.Helper()
	waitForTailerOn(t, bed, bed.MySQL, cfg)
}

// waitForTailerOn is waitForTailer for a tailer on src.
func waitForTailerOn(t *testing.T, bed *testbed.Bed, src *testbed.MySQL, cfg config.Config) {
	t.Helper()
	testbed.WaitForTailer(t, src, bed.Kafka.Brokers(), event.CheckpointTopic(cfg.Kafka.TopicPrefix))
}
