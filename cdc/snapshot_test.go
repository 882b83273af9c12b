package cdc

import (
	"database/sql"
	"reflect"
	"testing"
)

func TestChunkQuery(t *testing.T) {
	intPK := &table{db: "shop", name: "items", columns: []column{{name: "id", kind: kindInt}, {name: "v", kind: kindText}}, pk: []int{0}}
	pair := &table{db: "shop", name: "lines", columns: []column{{name: "o", kind: kindInt}, {name: "n", kind: kindInt}, {name: "f", kind: kindFloat32}}, pk: []int{0, 1}}
	mixed := &table{db: "shop", name: "m", columns: []column{{name: "a", kind: kindInt}, {name: "b", kind: kindText}}, pk: []int{0, 1}}
	textPK := &table{db: "shop", name: "t", columns: []column{{name: "k", kind: kindText}}, pk: []int{0}}
	cases := []struct {
		why   string
		tbl   *table
		task  SnapshotTask
		query string
		args  []any
	}{
		{"the first chunk has no key to start after; integers read as text (the driver would parse and box them)", intPK, SnapshotTask{},
			"SELECT CAST(`id` AS CHAR), `v` FROM `shop`.`items` ORDER BY `id` LIMIT 10", nil},
		{"an integer key is written into the statement: no prepare, rows in the text protocol", intPK, SnapshotTask{After: [][]byte{[]byte("-42")}},
			"SELECT CAST(`id` AS CHAR), `v` FROM `shop`.`items` WHERE ((`id` > -42)) ORDER BY `id` LIMIT 10", nil},
		{"a composite integer key, spelled out so every server uses the index; FLOAT read as DOUBLE", pair, SnapshotTask{After: [][]byte{[]byte("7"), []byte("18446744073709551615")}},
			"SELECT CAST(`o` AS CHAR), CAST(`n` AS CHAR), (`f` + 0E0) FROM `shop`.`lines` WHERE ((`o` > 7) OR (`o` = 7 AND `n` > 18446744073709551615)) ORDER BY `o`, `n` LIMIT 10", nil},
		{"a text key stays a parameter: compared as a string in the column's collation", textPK, SnapshotTask{After: [][]byte{[]byte("a' OR 1=1")}},
			"SELECT `k` FROM `shop`.`t` WHERE ((`k` > ?)) ORDER BY `k` LIMIT 10", []any{[]byte("a' OR 1=1")}},
		{"a text key holding digits stays a parameter: written as 10 it would compare as a number, not in the column's collation", textPK, SnapshotTask{After: [][]byte{[]byte("10")}},
			"SELECT `k` FROM `shop`.`t` WHERE ((`k` > ?)) ORDER BY `k` LIMIT 10", []any{[]byte("10")}},
		{"a key with any non-integer column is all parameters, in placeholder order", mixed, SnapshotTask{After: [][]byte{[]byte("1"), []byte("x")}},
			"SELECT CAST(`a` AS CHAR), `b` FROM `shop`.`m` WHERE ((`a` > ?) OR (`a` = ? AND `b` > ?)) ORDER BY `a`, `b` LIMIT 10", []any{[]byte("1"), []byte("1"), []byte("x")}},
		{"an integer column whose stored value is not an integer (a damaged checkpoint) is never written into SQL", intPK, SnapshotTask{After: [][]byte{[]byte("1; DROP TABLE x")}},
			"SELECT CAST(`id` AS CHAR), `v` FROM `shop`.`items` WHERE ((`id` > ?)) ORDER BY `id` LIMIT 10", []any{[]byte("1; DROP TABLE x")}},
		{"a where is ANDed before the key range (keyset.Page's order: the same rows as after it)", intPK, SnapshotTask{After: [][]byte{[]byte("5")}, Where: "v <> ''"},
			"SELECT CAST(`id` AS CHAR), `v` FROM `shop`.`items` WHERE (v <> '') AND ((`id` > 5)) ORDER BY `id` LIMIT 10", nil},
	}
	for _, c := range cases {
		q, args := chunkQuery(c.tbl, &c.task, 10)
		if q != c.query || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s:\n got %s %q\nwant %s %q", c.why, q, args, c.query, c.args)
		}
	}
}

func TestAppendSQLValueInteger(t *testing.T) {
	col := &column{name: "n", kind: kindInt}
	cases := []struct {
		why, in, want string
		bad           bool
	}{
		{"a plain integer is copied", "42", "42", false},
		{"a negative one too", "-9223372036854775808", "-9223372036854775808", false},
		{"the largest unsigned BIGINT (20 digits) is checked the long way", "18446744073709551615", "18446744073709551615", false},
		{"zero stays zero", "0", "0", false},
		{"a ZEROFILL column's padding is dropped: 00042 is no JSON number, and the binlog path publishes 42", "00042", "42", false},
		{"text is refused, not published as a number", "4x", "", true},
		{"nor an empty value", "", "", true},
		{"a sign alone is no number", "-", "", true},
	}
	for _, c := range cases {
		got, err := col.appendSQLValue(nil, []byte(c.in))
		if (err != nil) != c.bad || string(got) != c.want {
			t.Errorf("%s: appendSQLValue(%q) = %q, %v; want %q (error %v)", c.why, c.in, got, err, c.want, c.bad)
		}
	}
}

// TestRawRows: a chunk's values come back as they were read, NULL and the
// empty string apart, also from a buffer used before.
func TestRawRows(t *testing.T) {
	rows := [][]sql.RawBytes{
		{sql.RawBytes("1"), nil, sql.RawBytes("abc")},
		{sql.RawBytes("2"), sql.RawBytes{}, nil},
		{nil, sql.RawBytes("x"), sql.RawBytes{}},
	}
	r := newRawRows(5, 1)
	r.add(sql.RawBytes("left over from an earlier chunk"))
	r.reset(3)
	for _, row := range rows {
		for _, v := range row {
			r.add(v)
		}
	}
	if r.rows() != len(rows) {
		t.Fatalf("rows() = %d, want %d", r.rows(), len(rows))
	}
	vals := make([]sql.RawBytes, 3)
	for i, want := range rows {
		r.row(i, vals)
		for j := range want {
			if (vals[j] == nil) != (want[j] == nil) || string(vals[j]) != string(want[j]) {
				t.Errorf("row %d column %d = %q (nil %v), want %q (nil %v): NULL and '' must stay apart", i, j, vals[j], vals[j] == nil, want[j], want[j] == nil)
			}
		}
	}
}

func TestDDLMayTouch(t *testing.T) {
	const table = "shop.items"
	cases := []struct {
		why  string
		sql  string
		want bool
	}{
		{"an ALTER of the table by its bare name (the statement's default database)", "ALTER TABLE items ADD COLUMN c INT", true},
		{"an ALTER of the table qualified and quoted", "ALTER TABLE `shop`.`items` DROP COLUMN b", true},
		{"names compare without case: unsure is yes", "alter table SHOP.ITEMS modify v text", true},
		{"an index made on the table changes no column, but names it: a needless restart costs a few chunks", "CREATE INDEX i ON items (v)", true},
		{"a DROP DATABASE of the table's database names no table", "DROP DATABASE shop", true},
		{"a rename of the table away", "RENAME TABLE shop.items TO shop.old_items", true},
		{"another table of the same database is not the snapshot's", "ALTER TABLE shop.orders ADD COLUMN c INT", false},
		{"a table whose name only starts like the snapshot's", "ALTER TABLE items2 ADD COLUMN c INT", false},
		{"the name inside a comment or a string is not a name", "ALTER TABLE orders /* items */ COMMENT 'items'", false},
		{"a statement without names (savepoints come as query events too)", "SAVEPOINT sp1", false},
	}
	for _, c := range cases {
		if got := ddlMayTouch(c.sql, table); got != c.want {
			t.Errorf("%s: ddlMayTouch(%q) = %v, want %v", c.why, c.sql, got, c.want)
		}
	}
}
