package shards

import (
	"reflect"
	"testing"

	"github.com/readside/readside/projections"
)

// TestScanSQL: the scan's pages, golden. The key is the source's primary
// key in its order (a composite one spelled out column by column), each
// value bound back as it was read: text under the column's collation,
// bytes byte for byte (binaryColumns).
func TestScanSQL(t *testing.T) {
	p := &projections.Projection{SourceDB: "shop", SourceTbl: "orders",
		Columns: []projections.Column{{Name: "region", Source: "region"}, {Name: "total", Source: "total"}}}
	by := p.Columns[0]
	sizes := "IFNULL(LENGTH(CAST(s.`region` AS BINARY)), 0) + IFNULL(LENGTH(CAST(s.`total` AS BINARY)), 0)"
	for _, c := range []struct {
		why   string
		width int
		pk    []string
		every int64
		after []any
		want  string
		args  []any
	}{
		{"the first page: no keyset condition", 0, []string{"id"}, 1, nil,
			"SELECT s.`id`, s.`region`, " + sizes + ", 1 FROM `shop`.`orders` s ORDER BY s.`id` LIMIT 100", nil},
		{"a composite key: the tuple comparison spelled out, a binary value bound as bytes", 0, []string{"tenant", "uuid"}, 1,
			[]any{"acme", []byte{0, 0xff}},
			"SELECT s.`tenant`, s.`uuid`, s.`region`, " + sizes + ", 1 FROM `shop`.`orders` s" +
				" WHERE ((s.`tenant` > ?) OR (s.`tenant` = ? AND s.`uuid` > ?)) ORDER BY s.`tenant`, s.`uuid` LIMIT 100",
			[]any{"acme", "acme", []byte{0, 0xff}}},
		{"a sample filters on the server before the keyset condition; a BIT by column is read as its number", 3, []string{"id"}, 7,
			[]any{"41"},
			"SELECT s.`id`, (s.`region`) + 0, " + sizes + ", 1 FROM `shop`.`orders` s" +
				" WHERE (MOD(CRC32(CONCAT_WS(0x00, s.`id`)), 7) = 0) AND ((s.`id` > ?)) ORDER BY s.`id` LIMIT 100",
			[]any{"41"}},
	} {
		q := newScan(p, by, c.width, c.pk, c.every, 100)
		got, args := q.page.SQL(c.after)
		if got != c.want || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", c.why, got, args, c.want, c.args)
		}
	}
}
