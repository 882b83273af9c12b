package sinks

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/readside/readside/projections"
)

// TestDistinctDeltas: a batch's changes to one count(distinct) aggregate
// coalesce per (group, value bytes): a row that keeps its value nets to
// nothing (no reference count write), NULLs are no value, and the other
// aggregates keep none.
func TestDistinctDeltas(t *testing.T) {
	ag := &projections.Aggregation{Aggregates: []projections.Aggregate{
		{Column: "n", Func: projections.AggCount},
		{Column: "u", Func: projections.AggCountDistinct},
	}}
	ds := newDeltas(ag)
	g, h := projections.ValuesOf(7), projections.ValuesOf(8)
	vals := func(v any) []projections.Value {
		return []projections.Value{projections.ValueOf("1"), projections.ValueOf(v)}
	}
	steps := []struct {
		why   string
		group []projections.Value
		value any
		sign  int64
	}{
		{"a row adds 'a' to g", g, "a", 1},
		{"it moves to h: withdrawn from g", g, "a", -1},
		{"and added to h", h, "a", 1},
		{"another row adds 'A' to h: other bytes, another key (the server may call them one value)", h, "A", 1},
		{"a NULL is no value", g, nil, 1},
		{"a row keeps 'b' through an update: withdrawn", h, "b", -1},
		{"and added back", h, "b", 1},
	}
	for _, s := range steps {
		if err := ds.add(s.group, vals(s.value), s.sign, 1); err != nil {
			t.Fatalf("%s: %v", s.why, err)
		}
	}
	if ds.distinct.by[0] != nil {
		t.Errorf("count(*) keeps reference counts: %v", ds.distinct.by[0])
	}
	got := map[string]int64{}
	for _, k := range ds.distinct.order[1] {
		d := ds.distinct.by[1][k]
		got[valuesText(d.group)+"="+string(d.value.Bytes())] = d.n
	}
	want := map[string]int64{valuesText(g) + "=a": 0, valuesText(h) + "=a": 1, valuesText(h) + "=A": 1, valuesText(h) + "=b": 0}
	if len(got) != len(want) {
		t.Fatalf("deltas %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("delta of %q: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

// TestDistinctMoveRowShape: the group delta that moves only distinct
// counts has a cell for every column the delta statement writes, and
// only the distinct counts are non-zero.
func TestDistinctMoveRowShape(t *testing.T) {
	ag := &projections.Aggregation{Aggregates: []projections.Aggregate{
		{Column: "n", Func: projections.AggCount},
		{Column: "s", Func: projections.AggSum},
		{Column: "lo", Func: projections.AggMin},
		{Column: "av", Func: projections.AggAvg},
		{Column: "u", Func: projections.AggCountDistinct},
		{Column: "p", Func: projections.AggCountIf},
		{Column: "sd", Func: projections.AggSumDistinct},
	}}
	row := distinctMoveRow(ag, &distinctMove{group: projections.ValuesOf(1, "x"), by: []int64{0, 0, 0, 0, -1, 0, 0}, sums: make([]*decimal, 7)})
	if want := 2 + len(aggDeltaColumns(ag)); len(row) != want {
		t.Fatalf("%d cells, want %d (group + %v)", len(row), want, aggDeltaColumns(ag))
	}
	cols := append([]string{"g1", "g2"}, aggDeltaColumns(ag)...)
	for i, c := range row[2:] {
		name := cols[2+i]
		switch v := c.(type) {
		case nil:
		case int:
			if v != 0 {
				t.Errorf("%s: %d, want 0", name, v)
			}
		case int64:
			if name != "u" && v != 0 || name == "u" && v != -1 {
				t.Errorf("%s: %d", name, v)
			}
		default:
			t.Errorf("%s: %T %v", name, c, c)
		}
	}
}

// TestGroupText: the key that matches a group the server returned with
// the batch's group delta (applyDeltas folds the distinct counts' moves
// into it) is equal for equal bytes of any kind, and never equal for two
// different groups.
func TestGroupText(t *testing.T) {
	for _, c := range []struct {
		why  string
		x, y []projections.Value
		same bool
	}{
		{"an unsigned number Go holds and its text the server returns are one group",
			[]projections.Value{projections.ValueOf(uint64(7))}, projections.ValuesOf("7"), true},
		{"text and bytes of one value are one group (the column's collation decides nothing for equal bytes)",
			projections.ValuesOf("a", "b"), []projections.Value{projections.ValueOf([]byte("a")), projections.ValueOf([]byte("b"))}, true},
		{"a separator inside a value does not shift it into the next column",
			projections.ValuesOf("a\x00", "b"), projections.ValuesOf("a", "\x00b"), false},
		{"lengths, not separators, delimit: no value can end where another begins",
			projections.ValuesOf("1:a", "b"), projections.ValuesOf("1", "a1:b"), false},
		{"NULL is not the text N",
			[]projections.Value{{}}, projections.ValuesOf("N"), false},
		{"two spellings under a _ci collation are two keys here (the fallback upsert takes the server's)",
			projections.ValuesOf("apple"), projections.ValuesOf("APPLE"), false},
	} {
		if got := groupText(c.x) == groupText(c.y); got != c.same {
			t.Errorf("%s: %q vs %q: same %v, want %v", c.why, groupText(c.x), groupText(c.y), got, c.same)
		}
	}
}

// TestAppendDistinctDeltas: a group's delta carries its distinct counts'
// move when it has one (values gained minus lost; for sum(distinct) also
// their sum), and a zero delta when it has none.
func TestAppendDistinctDeltas(t *testing.T) {
	sum := &decimal{u: new(big.Int)}
	if err := sum.add("2.50", 1); err != nil {
		t.Fatal(err)
	}
	m := &distinctMove{by: []int64{2, -1}, sums: []*decimal{nil, sum}}
	cd := projections.Aggregate{Column: "u", Func: projections.AggCountDistinct}
	sd := projections.Aggregate{Column: "sd", Func: projections.AggSumDistinct}
	for _, c := range []struct {
		why  string
		x    projections.Aggregate
		i    int
		m    *distinctMove
		want []any
	}{
		{"count(distinct) with a move: values gained minus lost", cd, 0, m, []any{int64(2)}},
		{"count(distinct) without a move adds nothing", cd, 0, nil, []any{0}},
		{"sum(distinct) with a move: the sum of the values crossing, and their count", sd, 1, m, []any{"2.50", int64(-1)}},
		{"sum(distinct) without a move: a NULL sum and no value", sd, 1, nil, []any{nil, 0}},
	} {
		got := appendDistinctDeltas(nil, c.x, c.i, c.m)
		if fmt.Sprint(got) != fmt.Sprint(c.want) || len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.why, got, c.want)
		}
	}
}

// TestDistinctWritesOrder: a batch writes the reference counts of the
// distinct aggregate with the most (group, value) rows first (its rows
// are rarely another transaction's too) and the most coalesced one last,
// next to the group upsert; aggregates with as many rows keep their
// declaration's order, and one whose changes net to nothing writes
// nothing.
func TestDistinctWritesOrder(t *testing.T) {
	ag := &projections.Aggregation{Aggregates: []projections.Aggregate{
		{Column: "n", Func: projections.AggCount},
		{Column: "status", Func: projections.AggCountDistinct},
		{Column: "total", Func: projections.AggCountDistinct},
		{Column: "note", Func: projections.AggCountDistinct},
		{Column: "day", Func: projections.AggCountDistinct},
		{Column: "kept", Func: projections.AggCountDistinct},
	}}
	sts := []distinctStatements{{i: 1}, {i: 2}, {i: 3}, {i: 4}, {i: 5}}
	ds := newDeltas(ag)
	hot := projections.ValuesOf(1)
	for order := range 6 {
		g := projections.ValuesOf(1 + order%2)
		row := projections.ValuesOf(1, "paid", 100+order, fmt.Sprint("n", order%3), "d", nil)
		if err := ds.add(g, row, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	// A row that keeps its "kept" value: withdrawn and added back.
	for _, sign := range []int64{-1, 1} {
		if err := ds.add(hot, projections.ValuesOf(0, nil, nil, nil, nil, "z"), sign, 1); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, w := range distinctWritesOf(sts, ds.distinct, 9) {
		got = append(got, fmt.Sprintf("%s:%d", ag.Aggregates[w.st.i].Column, len(w.rows)))
		if len(w.rows) != len(w.match) {
			t.Errorf("%s: %d rows, %d matches", ag.Aggregates[w.st.i].Column, len(w.rows), len(w.match))
		}
	}
	// total: 6 values in 2 groups; note: 3 values × 2 groups (6 rows,
	// declared after total); status and day: 1 value × 2 groups.
	want := []string{"total:6", "note:6", "status:2", "day:2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("write order %v, want %v", got, want)
	}
}
