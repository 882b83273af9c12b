package cdc

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"
)

// TestAppendChangeMatchesAppendEvent: the tailer's one-buffer encoder
// writes exactly what appendEvent writes from separately encoded images.
func TestAppendChangeMatchesAppendEvent(t *testing.T) {
	def := &tableDef{Columns: []colDef{{Name: "id", Type: "int"}, {Name: "amount", Type: "decimal", Prec: 10, Scale: 2}, {Name: "name", Type: "varchar", Charset: "utf8mb4"}}, PK: []string{"id"}}
	tm := &replication.TableMapEvent{Schema: []byte("shop"), Table: []byte("d"), ColumnCount: 3,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR}, ColumnMeta: []uint16{0, 10<<8 | 2, 400}}
	tbl, err := trackedTable(tm, def, "topic", nil, func(uint64) string { return "utf8mb4" })
	if err != nil {
		t.Fatal(err)
	}
	src := &source{flavor: "mariadb", serverID: 1, file: "binlog.000001", pos: 42, gtid: "0-1-7", ts: 1700000000}
	before := []any{int32(7), decimal.RequireFromString("1.50"), `quote " and \ and é`}
	after := []any{int32(7), decimal.RequireFromString("2.00"), "line\nbreak"}
	for _, c := range []struct {
		op            Op
		before, after []any
	}{{OpCreate, nil, after}, {OpUpdate, before, after}, {OpDelete, before, nil}} {
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
