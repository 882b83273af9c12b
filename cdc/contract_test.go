package cdc

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"

	"github.com/readside/readside/event"
)

var updateEnvelopes = flag.Bool("update", false, "rewrite ../event/testdata/envelopes.golden with what the tailer writes now")

// envelopesGolden is the change-event contract as bytes: one envelope of
// each op, written by the tailer here and decoded by the projections'
// tests, so a change on either side fails a test on the other.
const envelopesGolden = "../event/testdata/envelopes.golden"

// TestEnvelopesGolden: the tailer writes each op's envelope exactly as
// the golden file holds it (docs/events.md, "Envelope").
func TestEnvelopesGolden(t *testing.T) {
	def := &tableDef{Columns: []colDef{{Name: "id", Type: "int"}, {Name: "status", Type: "varchar", Charset: "utf8mb4"}, {Name: "total", Type: "decimal", Prec: 10, Scale: 2}}, PK: []string{"id"}}
	tm := &replication.TableMapEvent{Schema: []byte("shop"), Table: []byte("orders"), ColumnCount: 3,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_NEWDECIMAL}, ColumnMeta: []uint16{0, 400, 10<<8 | 2}}
	tbl, err := trackedTable(tm, def, "readside.shop.orders", nil, nil, func(uint64) string { return "utf8mb4" })
	if err != nil {
		t.Fatal(err)
	}
	src := &source{flavor: "mariadb", serverID: 1, file: "binlog.000003", pos: 1234, gtid: "0-1-977", ts: 1763769600}
	before := []any{int32(42), "new", decimal.RequireFromString("19.99")}
	after := []any{int32(42), "paid", decimal.RequireFromString("19.99")}
	truncated := &table{db: "shop", name: "orders", schema: []byte(`"` + event.FieldSchema + `":null`)}
	var got []byte
	for i, c := range []struct {
		op            event.Op
		before, after []any
	}{
		{event.OpCreate, nil, after},
		{event.OpUpdate, before, after},
		{event.OpDelete, after, nil},
		{event.OpRead, nil, after},
		{event.OpTruncate, nil, nil},
	} {
		e := envelope{op: c.op, version: 1882516407456715 + uint64(i), src: src, txnSeq: i}
		if c.op == event.OpTruncate {
			got = appendEvent(got, truncated, e, nil, nil, nil)
		} else {
			key, err := tbl.appendKey(nil, append(c.after, c.before...))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = appendChange(got, tbl, e, key, c.before, c.after); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, '\n')
	}
	if *updateEnvelopes {
		if err := os.WriteFile(envelopesGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(envelopesGolden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the tailer's envelopes differ from %s (the contract projections decode; -update rewrites it, and docs/events.md must say the same):\n got:\n%s\nwant:\n%s", envelopesGolden, got, want)
	}
}
