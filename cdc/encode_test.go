package cdc

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"

	"github.com/readside/readside/event"
)

// TestAppendChangeMatchesAppendEvent: the tailer's one-buffer encoder
// writes exactly what appendEvent writes from separately encoded images.
func TestAppendChangeMatchesAppendEvent(t *testing.T) {
	def := &tableDef{Columns: []colDef{{Name: "id", Type: "int"}, {Name: "amount", Type: "decimal", Prec: 10, Scale: 2}, {Name: "name", Type: "varchar", Charset: "utf8mb4"}}, PK: []string{"id"}}
	tm := &replication.TableMapEvent{Schema: []byte("shop"), Table: []byte("d"), ColumnCount: 3,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR}, ColumnMeta: []uint16{0, 10<<8 | 2, 400}}
	tbl, err := trackedTable(tm, def, "topic", nil, nil, func(uint64) string { return "utf8mb4" })
	if err != nil {
		t.Fatal(err)
	}
	src := &source{flavor: "mariadb", serverID: 1, file: "binlog.000001", pos: 42, gtid: "0-1-7", ts: 1700000000}
	before := []any{int32(7), decimal.RequireFromString("1.50"), `quote " and \ and é`}
	after := []any{int32(7), decimal.RequireFromString("2.00"), "line\nbreak"}
	for _, c := range []struct {
		op            event.Op
		before, after []any
	}{{event.OpCreate, nil, after}, {event.OpUpdate, before, after}, {event.OpDelete, before, nil}} {
		e := envelope{op: c.op, version: 99, src: src, txnSeq: 3}
		key, err := tbl.appendKey(nil, append(c.after, c.before...))
		if err != nil {
			t.Fatal(err)
		}
		var b, a []byte
		if c.before != nil {
			b, _ = tbl.appendRow(nil, c.before)
		}
		if c.after != nil {
			a, _ = tbl.appendRow(nil, c.after)
		}
		want := appendEvent(nil, tbl, e, key, b, a)
		got, err := appendChange(make([]byte, 0, 8), tbl, e, key, c.before, c.after)
		if err != nil || string(got) != string(want) {
			t.Errorf("op %c: appendChange =\n%s (%v)\nappendEvent =\n%s", c.op, got, err, want)
		}
	}
}

// TestAppendReadMatchesAppendEvent: a snapshot chunk's events, written
// from the members its rows share, are byte for byte appendEvent's.
func TestAppendReadMatchesAppendEvent(t *testing.T) {
	tbl := &table{db: "shop", name: `odd "name"`, columns: []column{{name: "id", kind: kindInt}, {name: "v", kind: kindText}}, pk: []int{0}}
	tbl.encodeSchema()
	cases := []struct {
		why     string
		src     *source
		version uint64
		seq     int
		key     string
	}{
		{"with a GTID, which the txn id repeats", &source{flavor: "mariadb", serverID: 7, file: "bin.000002", pos: 1234, start: 1200, gtid: "0-7-99", ts: 1700000000}, 1, 0, `{"id":1}`},
		{"without GTIDs, large numbers", &source{flavor: "mysql", serverID: 4294967295, file: `we"ird`, pos: 4294967295, ts: 4294967295}, 1<<63 + 5, 123456, `{"id":-9}`},
	}
	for _, c := range cases {
		after := []byte(`{"id":1,"v":"x\"y"}`)
		want := appendEvent(nil, tbl, envelope{op: event.OpRead, version: c.version, src: c.src, txnSeq: c.seq}, []byte(c.key), nil, after)
		got, keyAt := newReadFrame(tbl, c.src).appendRead([]byte{}, c.version, c.seq, []byte(c.key), after)
		if k := string(got[keyAt : keyAt+len(c.key)]); k != c.key {
			t.Errorf("%s: the key in the value at %d is %q, want %q", c.why, keyAt, k, c.key)
		}
		if string(got) != string(want) {
			t.Errorf("%s: appendRead =\n%s\nappendEvent =\n%s", c.why, got, want)
		}
	}
}

// TestValuesEqual: the fast paths agree with comparing printed forms,
// which is what a key change is defined by.
func TestValuesEqual(t *testing.T) {
	cases := []struct {
		a, b any
		want bool
	}{
		{int64(5), int64(5), true}, {int64(5), int64(6), false},
		{int32(-1), int32(-1), true}, {int32(1), int32(2), false},
		{uint64(1 << 63), uint64(1 << 63), true}, {uint64(1), uint64(2), false},
		{"a", "a", true}, {"a", "b", false},
		{[]byte("x"), []byte("x"), true}, {[]byte("x"), []byte("y"), false},
		{decimal.RequireFromString("1.50"), decimal.RequireFromString("1.50"), true},
		{decimal.RequireFromString("1.50"), decimal.RequireFromString("1.51"), false},
		{int64(5), int32(5), true}, // mixed types: printed form
		{int8(3), int8(3), true}, {int8(3), int8(4), false},
		{nil, nil, true}, {nil, int64(0), false},
	}
	for _, c := range cases {
		if got := valuesEqual(c.a, c.b); got != c.want {
			t.Errorf("valuesEqual(%#v, %#v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// BenchmarkAppendChange is the tailer's encoding of one narrow insert (the
// bench workload narrow_insert's row: ~150 bytes, as go-mysql decodes it
// with rowdecode.Options) into its key and envelope: the part of the
// tailer's CPU per event that is readside's own, beside go-mysql's
// decoding and franz-go's producing (make bench-instructions).
func BenchmarkAppendChange(b *testing.B) {
	def := &tableDef{Columns: []colDef{
		{Name: "id", Type: "bigint"}, {Name: "k", Type: "int"}, {Name: "a", Type: "int"},
		{Name: "b", Type: "varchar", Charset: "utf8mb4"}, {Name: "c", Type: "decimal", Prec: 12, Scale: 2},
		{Name: "d", Type: "datetime", FSP: 6}, {Name: "commit_us", Type: "bigint"},
	}, PK: []string{"id"}}
	tm := &replication.TableMapEvent{Schema: []byte("src"), Table: []byte("narrow_insert"), ColumnCount: 7,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR,
			mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_LONGLONG},
		ColumnMeta: []uint16{0, 0, 0, 240, 12<<8 | 2, 6, 0}}
	tbl, err := trackedTable(tm, def, "topic", nil, nil, func(uint64) string { return "utf8mb4" })
	if err != nil {
		b.Fatal(err)
	}
	src := &source{flavor: "mariadb", serverID: 1, file: "binlog.000001", pos: 123456, gtid: "0-1-4242", ts: 1780000001}
	after := []any{int64(17), int32(17), int32(482211), "name-17-2kq9x8v1r0s3", "81234.55",
		time.Date(2026, 1, 9, 11, 52, 16, 123456000, time.UTC), int64(1780000000123456)}
	key, _ := tbl.appendKey(nil, after)
	v, err := appendChange(nil, tbl, envelope{op: event.OpCreate, version: 1869683302580224001, src: src, txnSeq: 12}, key, nil, after)
	if want := `"after":{"id":17,"k":17,"a":482211,"b":"name-17-2kq9x8v1r0s3","c":"81234.55","d":"2026-01-09 11:52:16.123456","commit_us":1780000000123456}`; err != nil || !strings.Contains(string(v), want) {
		b.Fatalf("encoded %s (%v), want it to hold %s", v, err, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		key, err := tbl.appendKey(nil, after)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := appendChange(make([]byte, 0, 640), tbl, envelope{op: event.OpCreate, version: 1869683302580224001, src: src, txnSeq: 12}, key, nil, after); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEnvelopeTxnID: txn.id repeats source.gtid's encoded bytes (encoded
// once per event); both decode to the GTID, whatever its characters.
func TestEnvelopeTxnID(t *testing.T) {
	tbl := &table{db: "shop", name: "orders", schema: []byte(`"schema":null`)}
	for _, gtid := range []string{"", "0-1-977", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-23", `odd "gtid" \ é`} {
		src := &source{flavor: "mysql", serverID: 1, file: "binlog.000001", pos: 4, gtid: gtid, ts: 1}
		v := appendEvent([]byte("prefix"), tbl, envelope{op: event.OpCreate, version: 5, src: src}, []byte(`{"id":1}`), nil, []byte(`{"id":1}`))
		var e struct {
			Source struct{ GTID string } `json:"source"`
			Txn    struct{ ID string }   `json:"txn"`
		}
		if err := json.Unmarshal(v[len("prefix"):], &e); err != nil {
			t.Fatalf("%q: %v in %s", gtid, err, v)
		}
		if e.Source.GTID != gtid || e.Txn.ID != gtid {
			t.Errorf("gtid %q: source.gtid %q, txn.id %q", gtid, e.Source.GTID, e.Txn.ID)
		}
	}
}
