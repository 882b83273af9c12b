package cdc

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestCollationChangeIsANewShape: a table map that differs from the one
// a table was built from only in a column's collation (a DDL from
// utf8mb4_general_ci to utf8mb4_bin: same type, same length) is another
// shape, and the table built from it has another schema version, while
// the same map again keeps both.
func TestCollationChangeIsANewShape(t *testing.T) {
	tableMap := func(collation uint64) *replication.TableMapEvent {
		return &replication.TableMapEvent{Schema: []byte("db"), Table: []byte("t"), ColumnCount: 2,
			ColumnType: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR}, ColumnMeta: []uint16{0, 80},
			ColumnName: [][]byte{[]byte("id"), []byte("buyer")}, PrimaryKey: []uint64{0},
			DefaultCharset: []uint64{collation}, NullBitmap: []byte{0}, SignednessBitmap: []byte{0}}
	}
	charsetOf := func(uint64) string { return "utf8mb4" }
	collationOf := func(id uint64) string { return map[uint64]string{45: "utf8mb4_general_ci", 46: "utf8mb4_bin"}[id] }
	build := func(tm *replication.TableMapEvent) *table {
		tbl, err := newTable(tm, "topic", nil, nil, charsetOf)
		if err != nil {
			t.Fatal(err)
		}
		tbl.setCollations(tm, collationOf)
		return tbl
	}
	ci := build(tableMap(45))
	if !ci.sameShape(tableMap(45)) {
		t.Error("the same table map again is not the same shape")
	}
	if ci.sameShape(tableMap(46)) {
		t.Error("a table map with another collation for buyer is taken for the same shape")
	}
	bin := build(tableMap(46))
	if ci.schemaVersion == bin.schemaVersion {
		t.Errorf("schema version %s under both collations", ci.schemaVersion)
	}
	if again := build(tableMap(45)); again.schemaVersion != ci.schemaVersion {
		t.Errorf("schema version %s, then %s for the same table map", ci.schemaVersion, again.schemaVersion)
	}
}
