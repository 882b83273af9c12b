package cdc

import (
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestEnumSetMembersDecoded: the binlog carries ENUM and SET member names
// in the column's charset; published, they are UTF-8, as the snapshot
// reads them. Collation ids are the servers' own (8 latin1_swedish_ci,
// 9 latin2_general_ci, 51 cp1251_general_ci, 45 utf8mb4_general_ci,
// 63 binary).
func TestEnumSetMembersDecoded(t *testing.T) {
	charsets := map[uint64]string{8: "latin1", 9: "latin2", 51: "cp1251", 45: "utf8mb4", 63: "binary"}
	charsetOf := func(c uint64) string { return charsets[c] }
	for _, c := range []struct {
		why     string
		typ     byte
		coll    uint64
		members []string
		value   int64
		want    string
	}{
		{"latin1 ENUM member with non-ASCII letters (the reported \\ufffdn\\ufffd)", mysql.MYSQL_TYPE_ENUM, 8, []string{"a", "\xfcn\xef"}, 2, `"ünï"`},
		{"latin1 SET members joined after decoding", mysql.MYSQL_TYPE_SET, 8, []string{"\xe9t\xe9", "b", "\xa3"}, 0b101, `"été,£"`},
		{"MySQL's latin1 is Windows-1252: 0x80 is the euro sign", mysql.MYSQL_TYPE_ENUM, 8, []string{"\x80"}, 1, `"€"`},
		{"the five bytes Windows-1252 leaves undefined are C1 controls, as the server converts them", mysql.MYSQL_TYPE_ENUM, 8, []string{"a\x81\x8d\x8f\x90\x9d\xff"}, 1, "\"a\u0081\u008d\u008f\u0090\u009d\u00ff\""},
		{"latin2 has its own letters at the same bytes", mysql.MYSQL_TYPE_ENUM, 9, []string{"\xb3\xf3d\xbc"}, 1, `"łódź"`},
		{"cp1251 Cyrillic", mysql.MYSQL_TYPE_SET, 51, []string{"\xe4\xe0", "\xed\xe5\xf2"}, 0b11, `"да,нет"`},
		{"utf8mb4 members are already UTF-8", mysql.MYSQL_TYPE_ENUM, 45, []string{"ünï"}, 1, `"ünï"`},
		{"binary members are bytes: left as they are", mysql.MYSQL_TYPE_ENUM, 63, []string{"ab"}, 1, `"ab"`},
		{"index 0 is MySQL's invalid-value member, whatever the charset", mysql.MYSQL_TYPE_ENUM, 8, []string{"\xfc"}, 0, `""`},
	} {
		tm := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_STRING},
			ColumnMeta: []uint16{uint16(c.typ)<<8 | 1}, EnumSetDefaultCharset: []uint64{c.coll}}
		raw := make([][]byte, len(c.members))
		for i, m := range c.members {
			raw[i] = []byte(m)
		}
		if c.typ == mysql.MYSQL_TYPE_ENUM {
			tm.EnumStrValue = [][][]byte{raw}
		} else {
			tm.SetStrValue = [][][]byte{raw}
		}
		col, err := newColumn(tm, 0, "c", charsetOf)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		got, err := col.appendValue(nil, c.value)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: published %s (%v), want %s", c.why, got, err, c.want)
		}
	}
}

// TestEnumSetMembersUndecodable: a member charset readside cannot decode
// (none today; a server's future one) is refused with the fix, not
// published as replacement characters.
func TestEnumSetMembersUndecodable(t *testing.T) {
	tm := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_STRING},
		ColumnMeta: []uint16{uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1}, EnumSetDefaultCharset: []uint64{99},
		EnumStrValue: [][][]byte{{[]byte("x")}}}
	_, err := newColumn(tm, 0, "c", func(uint64) string { return "utf64" })
	if err == nil || !strings.Contains(err.Error(), "convert the column to utf8mb4") {
		t.Fatalf("newColumn = %v, want the charset refused with the fix", err)
	}
}
