package main

import (
	"strings"
	"testing"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// TestGroupStatements: B2 of an aggregate writes, per batch of records,
// each group the batch touched once with its values as of the batch's
// end (a group's other rows included), and deletes the groups left
// empty; a row that moves leaves its old group. Its rows are what the
// projector's read table must equal (benchall's b2_check), so the values
// are checked here against what GROUP BY gives.
func TestGroupStatements(t *testing.T) {
	// Source rows (id, customer_id, total, at): values in the copy's
	// column order; at[] maps the columns.
	row := func(id, cust, total, at string) projections.Write {
		return projections.Write{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(id, cust, total, at)}
	}
	del := func(id string) projections.Write { return projections.Write{Kind: projections.Delete, Key: id} }
	g := &grouping{
		group:   []string{"customer_id"},
		at:      map[string]int{"id": 0, "customer_id": 1, "total": 2, "at": 3},
		numeric: map[string]bool{"total": true},
		aggs: []aggregate{
			{column: "n", fn: "count"},
			{column: "first", fn: "min", arg: "at"},
			{column: "hi", fn: "max", arg: "total"},
			{column: "sum", fn: "sum", arg: "total"},
		},
	}
	for _, c := range []struct {
		why    string
		writes [][]projections.Write
		pt     benchio.Point
		want   []string // each connection's transactions, statements joined by " ; "
		rows   int
	}{
		{"one batch: each group once, with every row of it",
			[][]projections.Write{{row("1", "7", "5", "2026-01-02")}, {row("2", "7", "10", "2026-01-01")}, {row("3", "8", "3", "2026-01-03")}},
			benchio.Point{BatchRows: 10, Connections: 1},
			[]string{"INSERT INTO `t` VALUES ('7',2,'2026-01-01','10',15),('8',1,'2026-01-03','3',3) ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `first` = VALUES(`first`), `hi` = VALUES(`hi`), `sum` = VALUES(`sum`)"},
			2},
		{"max compares numbers as numbers (9 < 10), not as text",
			[][]projections.Write{{row("1", "7", "9", "2026-01-02")}, {row("2", "7", "10", "2026-01-01")}},
			benchio.Point{BatchRows: 10, Connections: 1},
			[]string{"INSERT INTO `t` VALUES ('7',2,'2026-01-01','10',19) ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `first` = VALUES(`first`), `hi` = VALUES(`hi`), `sum` = VALUES(`sum`)"},
			1},
		{"a move leaves its old group, which is deleted when empty; a batch per record",
			[][]projections.Write{{row("1", "7", "5", "2026-01-02")}, {del("1"), row("1", "8", "6", "2026-01-02")}},
			benchio.Point{BatchRows: 1, Connections: 1},
			[]string{
				"INSERT INTO `t` VALUES ('7',1,'2026-01-02','5',5) ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `first` = VALUES(`first`), `hi` = VALUES(`hi`), `sum` = VALUES(`sum`)",
				"INSERT INTO `t` VALUES ('8',1,'2026-01-02','6',6) ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `first` = VALUES(`first`), `hi` = VALUES(`hi`), `sum` = VALUES(`sum`) ; DELETE FROM `t` WHERE (customer_id) IN (('7'))"},
			3},
		{"an update within the group replaces the row's contribution (no double count); the extreme that left is recomputed",
			[][]projections.Write{{row("1", "7", "50", "2026-01-02")}, {row("2", "7", "10", "2026-01-01")}, {row("1", "7", "1", "2026-01-02")}},
			benchio.Point{BatchRows: 10, Connections: 1},
			[]string{"INSERT INTO `t` VALUES ('7',2,'2026-01-01','10',11) ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `first` = VALUES(`first`), `hi` = VALUES(`hi`), `sum` = VALUES(`sum`)"},
			1},
	} {
		conns, rows, _ := g.statements("t", c.writes, c.pt)
		var got []string
		for _, txn := range conns[0] {
			got = append(got, strings.Join(txn, " ; "))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") || rows != c.rows {
			t.Errorf("%s:\n got %d rows:\n%s\nwant %d rows:\n%s", c.why, rows, strings.Join(got, "\n"), c.rows, strings.Join(c.want, "\n"))
		}
	}
}

// TestParseAggregates: -aggregate computes aggregates of plain source
// columns and says so for anything else, rather than measuring other
// values than the projector's.
func TestParseAggregates(t *testing.T) {
	for _, c := range []struct {
		why     string
		d       config.Projection
		wantErr string
	}{
		{"every function of a plain column, and count(*)", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"n": "count(*)", "s": "SUM(total)", "lo": "min( at )", "a": "avg(x)"}}, ""},
		{"count(distinct) of a plain column", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"u": "count(DISTINCT status)"}}, ""},
		{"sum(distinct) is not the projector's", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"u": "sum(distinct total)"}}, "aggregates.u"},
		{"count(distinct *) is no aggregate", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"u": "count(distinct *)"}}, "aggregates.u"},
		{"an expression is not computed here", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"s": "sum(total / 100)"}}, "aggregates.s"},
		{"count_if is not computed here", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"p": "count_if(status = 'paid')"}}, "aggregates.p"},
		{"sum(*) is no aggregate", config.Projection{GroupBy: []string{"c"}, Aggregates: map[string]string{"s": "sum(*)"}}, "aggregates.s"},
		{"a group expression is not a source column", config.Projection{GroupBy: []string{"DATE(at)"}, Aggregates: map[string]string{"n": "count(*)"}}, "group_by"},
		{"a filter would need evaluating", config.Projection{GroupBy: []string{"c"}, Where: "c > 1", Aggregates: map[string]string{"n": "count(*)"}}, "where"},
		{"no aggregate projection", config.Projection{Key: []string{"id"}}, "no group_by"},
	} {
		_, err := parseAggregates("p", c.d)
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: got %v, want an error naming %q", c.why, err, c.wantErr)
		}
	}
}

// TestGroupStatementsDistinct: count(distinct) in B2 is the number of
// distinct non-NULL values the group's rows hold as of the batch's end,
// and B2 writes the reference counts any exact incremental design keeps
// for it: per batch, the (group, value) counts it changed, coalesced.
func TestGroupStatementsDistinct(t *testing.T) {
	row := func(id, cust string, total any) projections.Write {
		return projections.Write{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(id, cust, total)}
	}
	g := &grouping{group: []string{"customer_id"}, at: map[string]int{"id": 0, "customer_id": 1, "total": 2},
		aggs: []aggregate{{column: "u", fn: "count_distinct", arg: "total"}}}
	writes := [][]projections.Write{{row("1", "7", "5")}, {row("2", "7", "5")}, {row("3", "7", "6")}, {row("4", "7", nil)}, {row("5", "8", nil)},
		{{Kind: projections.Delete, Key: "3"}}}
	for _, c := range []struct {
		why  string
		pt   benchio.Point
		want []string // the transactions, statements joined by " ; "
		refs int
	}{
		{"one batch: a value held twice is one, NULL is none; a value added and withdrawn within the batch writes no reference count",
			benchio.Point{BatchRows: 10, Connections: 1},
			[]string{"INSERT INTO `t` VALUES ('7',1),('8',0) ON DUPLICATE KEY UPDATE `u` = VALUES(`u`) ; INSERT INTO `t_dst_u` VALUES ('7','5',2) ON DUPLICATE KEY UPDATE `refs` = VALUES(`refs`)"},
			1},
		{"two batches: the second withdraws the last row holding 6, whose reference count is deleted",
			benchio.Point{BatchRows: 3, Connections: 1},
			[]string{"INSERT INTO `t` VALUES ('7',2) ON DUPLICATE KEY UPDATE `u` = VALUES(`u`) ; INSERT INTO `t_dst_u` VALUES ('7','5',2),('7','6',1) ON DUPLICATE KEY UPDATE `refs` = VALUES(`refs`)",
				"INSERT INTO `t` VALUES ('7',1),('8',0) ON DUPLICATE KEY UPDATE `u` = VALUES(`u`) ; DELETE FROM `t_dst_u` WHERE (customer_id, `value`) IN (('7','6'))"},
			3},
	} {
		conns, _, refs := g.statements("t", writes, c.pt)
		var got []string
		for _, txn := range conns[0] {
			got = append(got, strings.Join(txn, " ; "))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") || refs != c.refs {
			t.Errorf("%s:\n got %d reference count rows:\n%s\nwant %d:\n%s", c.why, refs, strings.Join(got, "\n"), c.refs, strings.Join(c.want, "\n"))
		}
	}
}
