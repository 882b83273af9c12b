package sinks

import (
	"reflect"
	"testing"
)

// TestScanSQL: a reshard copy's reads, golden. The key is the table's
// primary key; its values come back as Chunk.Last gives them (text a
// string, compared under the column's collation; binary []byte, byte for
// byte; BIT its number), so the next chunk starts after the right row.
func TestScanSQL(t *testing.T) {
	ts := TableScan{Table: "rm_orders", Key: []string{"region", "id"}}
	scoped := TableScan{Table: "_readside_tombstones", Key: []string{"projection", "pk"}, Where: "projection = ?", Args: []any{"orders"}}
	for _, c := range []struct {
		why   string
		sql   func() (string, []any)
		want  string
		wargs []any
	}{
		{"the first chunk: no keyset condition", func() (string, []any) { return ts.chunkSQL(nil, 500) },
			"SELECT * FROM `rm_orders` ORDER BY `region`, `id` LIMIT 500", nil},
		{"the next chunk: the composite key's tuple comparison spelled out",
			func() (string, []any) { return ts.chunkSQL([]any{"eu", []byte{1, 2}}, 500) },
			"SELECT * FROM `rm_orders` WHERE ((`region` > ?) OR (`region` = ? AND `id` > ?)) ORDER BY `region`, `id` LIMIT 500",
			[]any{"eu", "eu", []byte{1, 2}}},
		{"a bookkeeping table's rows of one projection: its filter's parameters come first",
			func() (string, []any) { return scoped.chunkSQL([]any{"orders", "k"}, 10) },
			"SELECT * FROM `_readside_tombstones` WHERE (projection = ?) AND ((`projection` > ?) OR (`projection` = ? AND `pk` > ?))" +
				" ORDER BY `projection`, `pk` LIMIT 10",
			[]any{"orders", "orders", "orders", "k"}},
		{"rows by key: as many as keys, in key order",
			func() (string, []any) { return ts.keysSQL([][]any{{"eu", "1"}, {"us", "2"}}) },
			"SELECT * FROM `rm_orders` WHERE (((`region` = ? AND `id` = ?) OR (`region` = ? AND `id` = ?))) ORDER BY `region`, `id` LIMIT 2",
			[]any{"eu", "1", "us", "2"}},
		{"one key column: an IN list", func() (string, []any) {
			return TableScan{Table: "t", Key: []string{"id"}}.keysSQL([][]any{{"1"}, {"2"}})
		}, "SELECT * FROM `t` WHERE (`id` IN (?, ?)) ORDER BY `id` LIMIT 2", []any{"1", "2"}},
	} {
		stmt, args := c.sql()
		if stmt != c.want || !reflect.DeepEqual(args, c.wargs) {
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", c.why, stmt, args, c.want, c.wargs)
		}
	}
}
