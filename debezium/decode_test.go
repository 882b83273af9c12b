package debezium

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// encodeOne is the record value Table.Value writes for one change of a
// table (id INT key, c of typ) with c = raw (readside's encoding).
func encodeOne(t *testing.T, typ string, m config.Debezium, op byte, raw string, src Source) []byte {
	t.Helper()
	tbl, err := NewTable("p", "mariadb", "d", "t", []Column{{Name: "id", Type: "int"}, {Name: "c", Type: typ, Optional: true}}, []int{0}, m)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	row := Row{[]byte("7"), []byte(raw)}
	var before, after Row
	if op == 'd' {
		before = row
	} else {
		after = row
	}
	v, err := tbl.Value(nil, op, before, after, src, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatalf("%s %s: %v", typ, raw, err)
	}
	return v
}

var streamed = Source{TsSec: 1700000000, ServerID: 1, GTID: "0-1-5", File: "mariadb-bin.000003", Pos: 4242, Row: 1}

// roundTripCase is one column value, what decoding Debezium's encoding
// of it gives back, and the column type the decoded event names.
type roundTripCase struct {
	why  string
	typ  string
	m    config.Debezium
	raw  string
	want string // "" : raw itself
	kind string // the column's type in the event's schema
}

// roundTripCases are TestDecodeRoundTrip's cases; TestAvroDirect encodes
// each in Avro too.
func roundTripCases() []roundTripCase {
	def := config.Default().Kafka.Debezium
	with := func(f func(*config.Debezium)) config.Debezium {
		m := def
		f(&m)
		return m
	}
	precise := with(func(m *config.Debezium) { m.Bigint.Unsigned.Handling.Mode = config.UnsignedPrecise })
	str := with(func(m *config.Debezium) { m.Decimal.Handling.Mode = config.DecimalString })
	dbl := with(func(m *config.Debezium) { m.Decimal.Handling.Mode = config.DecimalDouble })
	connect := with(func(m *config.Debezium) { m.Time.Precision.Mode = config.TimeConnect })
	return []roundTripCase{
		{"INT as it is", "int", def, `-5`, "", "int"},
		{"TINYINT stays a number (Debezium's int16)", "tinyint", def, `-128`, "", "smallint"},
		{"INT UNSIGNED is an int64 and needs no wrap", "int unsigned", def, `4294967295`, "", "bigint"},
		{"BIGINT UNSIGNED below 2^63 is exact under long", "bigint unsigned", def, `9223372036854775807`, "", "bigint"},
		{"BIGINT UNSIGNED at 2^63 wraps under long: Debezium's loss, kept (docs: set precise)", "bigint unsigned", def, `9223372036854775808`, `-9223372036854775808`, "bigint"},
		{"precise keeps 2^64-1, as a decimal of scale 0 (the same number as text)", "bigint unsigned", precise, `18446744073709551615`, `"18446744073709551615"`, "decimal(20,0)"},
		{"precise decimal: base64 unscaled + scale back to the scale's digits", "decimal(10,2)", def, `"12345678.91"`, "", "decimal(10,2)"},
		{"a negative decimal's two's complement", "decimal(10,2)", def, `"-0.05"`, "", "decimal(10,2)"},
		{"a decimal of scale = precision keeps its 0 before the point", "decimal(5,5)", def, `"0.12345"`, "", "decimal(5,5)"},
		{"a decimal wider than 64 bits", "decimal(30,0)", def, `"123456789012345678901234567890"`, "", "decimal(30,0)"},
		{"a negative decimal wider than 64 bits", "decimal(38,4)", def, `"-1234567890123456789012345678.1234"`, "", "decimal(38,4)"},
		{"a positive decimal with the top bit set (a leading zero byte)", "decimal(5,0)", def, `"128"`, "", "decimal(5,0)"},
		{"zero with a scale", "decimal(6,3)", def, `"0.000"`, "", "decimal(6,3)"},
		{"decimal.handling.mode=string: the text as it is", "decimal(10,2)", str, `"-0.50"`, "", "varchar"},
		{"decimal.handling.mode=double: the double's digits (Debezium's loss)", "decimal(10,2)", dbl, `"-0.50"`, `-0.5`, "double"},
		{"BIT(1) is a boolean, back to its number", "bit(1)", def, `1`, "", "bit(1)"},
		{"BIT(1) zero", "bit(1)", def, `0`, "", "bit(1)"},
		{"BIT(n): little-endian bytes back to the number", "bit(16)", def, `32769`, "", "bit(16)"},
		{"BIT(64) all ones", "bit(64)", def, `18446744073709551615`, "", "bit(64)"},
		{"DATE: days back to the date", "date", def, `"2024-02-29"`, "", "date"},
		{"a date before the epoch (negative days)", "date", def, `"1901-12-13"`, "", "date"},
		{"connect mode DATE is days too", "date", connect, `"2024-02-29"`, "", "date"},
		{"DATETIME(0): milliseconds, no fraction", "datetime", def, `"2024-02-29 13:14:15"`, "", "datetime(3)"},
		{"DATETIME(3)", "datetime(3)", def, `"2024-02-29 13:14:15.123"`, "", "datetime(3)"},
		{"DATETIME(6): microseconds", "datetime(6)", def, `"2024-02-29 13:14:15.123456"`, "", "datetime(6)"},
		{"DATETIME(6) with trailing zeros: one text per instant, zeros dropped", "datetime(6)", def, `"2024-02-29 13:14:15.120000"`, `"2024-02-29 13:14:15.12"`, "datetime(6)"},
		{"DATETIME before the epoch", "datetime(6)", def, `"1969-12-31 23:59:59.999999"`, "", "datetime(6)"},
		{"connect mode DATETIME(6) keeps milliseconds (Debezium's loss)", "datetime(6)", connect, `"2024-02-29 13:14:15.123456"`, `"2024-02-29 13:14:15.123"`, "datetime(3)"},
		{"TIMESTAMP: the UTC string back", "timestamp", def, `"2024-03-01 00:14:15"`, "", "timestamp(6)"},
		{"TIMESTAMP(6)", "timestamp(6)", def, `"2024-03-01 00:14:15.654321"`, "", "timestamp(6)"},
		{"TIMESTAMP(6) whose binlog text keeps zeros: dropped, as a snapshot's", "timestamp(6)", def, `"2024-03-01 00:14:15.654300"`, `"2024-03-01 00:14:15.6543"`, "timestamp(6)"},
		{"TIME: microseconds, negative kept", "time", def, `"-838:59:59"`, "", "time(6)"},
		{"TIME over 24 hours", "time(3)", def, `"25:00:00.5"`, "", "time(6)"},
		{"TIME just below zero", "time(6)", def, `"-00:00:01.000001"`, "", "time(6)"},
		{"connect mode TIME: milliseconds of the day", "time(3)", connect, `"23:59:59.999"`, "", "time(3)"},
		{"connect mode TIME past 24 h is null (Debezium's loss)", "time(3)", connect, `"25:00:00.500"`, `null`, "time(3)"},
		{"binary: base64 as it is", "varbinary", def, `"/wA="`, "", "varbinary"},
		{"BINARY padding kept", "binary(4)", def, `"AQIAAA=="`, "", "varbinary"},
		{"text as it is, escapes too", "varchar", def, `"h\u00e9\"llo"`, "", "varchar"},
		{"JSON (MySQL's type) as its text", "json", def, `"{\"a\":1}"`, "", "json"},
		{"ENUM as its member", "enum", def, `"b"`, "", "enum"},
		{"SET as its members", "set", def, `"a,c"`, "", "set"},
		{"YEAR as a number", "year", def, `2024`, "", "year"},
		{"FLOAT as its number", "float", def, `1.5`, "", "float"},
		{"DOUBLE as its number", "double", def, `-2.25e-10`, "", "double"},
		{"NULL is null in every type", "decimal(10,2)", def, `null`, "", "decimal(10,2)"},
	}
}

// TestDecodeRoundTrip: readside's value → Debezium's encoding (value.go)
// → Decode is the value readside started from, for every column type
// under every mode readside encodes, or the documented loss of that mode.
func TestDecodeRoundTrip(t *testing.T) {
	for _, c := range roundTripCases() {
		v := encodeOne(t, c.typ, c.m, 'c', c.raw, streamed)
		var d Decoder
		e, err := d.Decode(v)
		if err != nil {
			t.Errorf("%s: %v\n%s", c.why, err, v)
			continue
		}
		want := c.want
		if want == "" {
			want = c.raw
		}
		got, ok := e.After.Get("c")
		if !ok || string(got) != want {
			t.Errorf("%s: %s %s decoded as %s, want %s", c.why, c.typ, c.raw, got, want)
		}
		if id, _ := e.After.Get("id"); string(id) != "7" {
			t.Errorf("%s: key column decoded as %s", c.why, id)
		}
		if typ := e.Schema.Columns["c"]; typ != c.kind {
			t.Errorf("%s: column type %q, want %q", c.why, typ, c.kind)
		}
	}
}

// TestDecodeEnvelope: op, images, source and version of whole records.
func TestDecodeEnvelope(t *testing.T) {
	def := config.Default().Kafka.Debezium
	var d Decoder
	e, err := d.Decode(encodeOne(t, "int", def, 'd', `3`, streamed))
	if err != nil {
		t.Fatal(err)
	}
	if e.Op != event.OpDelete || e.After != nil || e.Before == nil {
		t.Errorf("a delete has only a before image: op %s before %v after %v", e.Op, e.Before, e.After)
	}
	if e.Source.GTID != "0-1-5" || e.SourceTS != 1700000000 {
		t.Errorf("source: gtid %q ts %d, want the transaction's GTID and the binlog time in seconds", e.Source.GTID, e.SourceTS)
	}
	if want, _ := VersionAt("mariadb-bin.000003", 4242, 1, false); e.Version != want {
		t.Errorf("version %d, want %d: from source.file, pos and row", e.Version, want)
	}
	snap := Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4000}
	e, err = d.Decode(encodeOne(t, "int", def, 'r', `3`, snap))
	if err != nil {
		t.Fatal(err)
	}
	if e.Op != event.OpRead || e.After == nil {
		t.Errorf("a snapshot row is an r with an after image: op %s", e.Op)
	}
	if e.Source.GTID != "" {
		t.Errorf("a snapshot row has no GTID, got %q", e.Source.GTID)
	}
}

// TestDecodeSnapshotFirst: the connector marks the first row of a snapshot
// run "first"; only that row is SnapshotFirst (Build warns when one comes
// past the start of a topic: the connector snapshotted again). readside's
// own tailer marks every snapshot row "true".
func TestDecodeSnapshotFirst(t *testing.T) {
	def := config.Default().Kafka.Debezium
	snap := Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4000}
	own := encodeOne(t, "int", def, 'r', `3`, snap)
	if !bytes.Contains(own, []byte(`"snapshot":"true"`)) {
		t.Fatalf("the encoder no longer writes \"snapshot\":\"true\": %s", own)
	}
	for _, c := range []struct {
		marker string
		want   bool
	}{{`"true"`, false}, {`"first"`, true}, {`"last"`, false}, {`"first_in_data_collection"`, false}, {`true`, false}} {
		var d Decoder
		e, err := d.Decode(bytes.Replace(own, []byte(`"snapshot":"true"`), []byte(`"snapshot":`+c.marker), 1))
		if err != nil {
			t.Fatal(err)
		}
		if e.SnapshotFirst != c.want {
			t.Errorf("source.snapshot %s: SnapshotFirst %v, want %v", c.marker, e.SnapshotFirst, c.want)
		}
	}
}

// TestDecodeKeyChange: Debezium's key change is a d of the old key and a
// c of the new one at one source position: readside's key move, one
// version for both (docs/events.md), whichever partitions they land in.
func TestDecodeKeyChange(t *testing.T) {
	m := config.Default().Kafka.Debezium
	tbl, err := NewTable("p", "mariadb", "d", "t", []Column{{Name: "id", Type: "int"}, {Name: "v", Type: "varchar", Optional: true}}, []int{0}, m)
	if err != nil {
		t.Fatal(err)
	}
	old, moved := Row{[]byte("1"), []byte(`"x"`)}, Row{[]byte("2"), []byte(`"x"`)}
	del, err := tbl.Value(nil, 'd', old, nil, streamed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tbl.Value(nil, 'c', nil, moved, streamed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	a, err := d.Decode(del)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Decode(ins)
	if err != nil {
		t.Fatal(err)
	}
	if a.Op != event.OpDelete || b.Op != event.OpCreate {
		t.Errorf("a key change is d then c, got %s then %s", a.Op, b.Op)
	}
	if a.Version != b.Version {
		t.Errorf("the key change's d has version %d and its c %d: readside's key move gives both one version", a.Version, b.Version)
	}
	if k, _ := a.Before.Get("id"); string(k) != "1" {
		t.Errorf("the d removes the old key, got %s", k)
	}
	if k, _ := b.After.Get("id"); string(k) != "2" {
		t.Errorf("the c writes the new key, got %s", k)
	}
}

func TestDecodeRefused(t *testing.T) {
	noSchema := config.Default().Kafka.Debezium
	noSchema.Schemas.Enable = false
	cases := []struct {
		why   string
		value string
		want  string
	}{
		{"a bare payload names the converter setting that fixes it", string(encodeOne(t, "int", noSchema, 'c', `1`, streamed)), "schemas.enable=true"},
		{"not JSON", `{"schema":`, "decoding Debezium record"},
		{"an AvroConverter's record names input.format", "\x00\x00\x00\x00\x02\x02\x0a", "set input.format: avro"},
		{"an op readside does not know", strings.Replace(string(encodeOne(t, "int", config.Default().Kafka.Debezium, 'c', `1`, streamed)), `"op":"c"`, `"op":"m"`, 1), `op "m"`},
		{"a binlog file without a number cannot be versioned", strings.Replace(string(encodeOne(t, "int", config.Default().Kafka.Debezium, 'c', `1`, streamed)), "mariadb-bin.000003", "mariadb-bin", 1), "no binlog file number"},
		{"a Debezium type readside has no encoding for names the column and the fix", strings.Replace(string(encodeOne(t, "int", config.Default().Kafka.Debezium, 'c', `1`, streamed)), `"type":"int32","optional":true,"field":"c"`, `"type":"struct","optional":true,"name":"io.debezium.data.geometry.Geometry","field":"c"`, 1), "column.exclude.list"},
	}
	for _, c := range cases {
		var d Decoder
		_, err := d.Decode([]byte(c.value))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.why, err, c.want)
		}
	}
	var d Decoder
	if _, err := d.Decode(encodeOne(t, "int", noSchema, 'c', `1`, streamed)); !errors.Is(err, ErrNoSchema) {
		t.Errorf("a bare payload: %v, want ErrNoSchema", err)
	}
}

// TestVersionAt: the order of versions is the binlog's, snapshot rows
// below every streamed change from their position on.
func TestVersionAt(t *testing.T) {
	v := func(file string, pos, row int64, snapshot bool) uint64 {
		t.Helper()
		n, err := VersionAt(file, pos, row, snapshot)
		if err != nil {
			t.Fatalf("%s:%d row %d: %v", file, pos, row, err)
		}
		return n
	}
	less := []struct {
		why  string
		a, b uint64
	}{
		{"a later row of one rows event is newer", v("b.000001", 100, 0, false), v("b.000001", 100, 1, false)},
		{"a later rows event is newer than every row of an earlier one (rows < event length)", v("b.000001", 100, 30, false), v("b.000001", 131, 0, false)},
		{"a later file is newer whatever the position", v("b.000001", 1<<32-2, 1, false), v("b.000002", 4, 0, false)},
		{"a snapshot row is below a streamed change at its very position", v("b.000002", 500, 0, true), v("b.000002", 500, 0, false)},
		{"… and below every later one", v("b.000002", 500, 0, true), v("b.000002", 501, 0, false)},
		{"a snapshot row is above every streamed change before its position", v("b.000002", 499, 0, false), v("b.000002", 500, 0, true)},
		{"file numbers past 999999 (MySQL's seven digits)", v("b.999999", 9, 0, false), v("b.1000000", 4, 0, false)},
		{"the largest file number and position still fit", v("b.2147483646", 1<<32-1, 0, false), v("b.2147483647", 1<<32-1, 0, false)},
	}
	for _, c := range less {
		if c.a >= c.b {
			t.Errorf("%s: %d is not below %d", c.why, c.a, c.b)
		}
	}
	if v("b.000001", 100, 2, false) != v("b.000001", 100, 2, false) {
		t.Error("a record written again after a connector restart must get the same version")
	}
	for _, bad := range []struct {
		why      string
		file     string
		pos, row int64
		snapshot bool
	}{
		{"no file number", "binlog", 4, 0, false},
		{"a file number over 2^31-1", "b.2147483648", 4, 0, false},
		{"a position past 32 bits", "b.000001", 1 << 32, 0, false},
		{"negative row", "b.000001", 4, -1, false},
		{"a snapshot at position 0 of file 0 has no version", "b.000000", 0, 0, true},
	} {
		if _, err := VersionAt(bad.file, bad.pos, bad.row, bad.snapshot); err == nil {
			t.Errorf("%s: accepted", bad.why)
		}
	}
}
