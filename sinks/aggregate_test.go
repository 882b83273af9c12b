package sinks

import (
	"math/big"
	"slices"
	"testing"

	"github.com/readside/readside/expr"
	"github.com/readside/readside/projections"
)

// TestDecimalSum: group deltas are exact decimal sums of the values'
// texts, whatever their scales and signs.
func TestDecimalSum(t *testing.T) {
	cases := []struct {
		why  string
		adds []string
		sign []int64
		want string
	}{
		{"integers", []string{"1", "2", "-4"}, []int64{1, 1, 1}, "-1"},
		{"a withdrawal subtracts", []string{"10.50", "10.50"}, []int64{1, -1}, "0.00"},
		{"scales widen to the largest seen", []string{"1.5", "0.25"}, []int64{1, 1}, "1.75"},
		{"below one keeps its leading zero", []string{"0.03", "-0.01"}, []int64{1, 1}, "0.02"},
		{"negative below one", []string{"-0.03"}, []int64{1}, "-0.03"},
		{"withdrawing a negative adds", []string{"-7.25"}, []int64{-1}, "7.25"},
		{"integers before and after a fraction", []string{"5", "2.25", "-1"}, []int64{1, 1, 1}, "6.25"},
		{"a fraction's scale applies to integers summed before it", []string{"7", "-3", "0.5"}, []int64{1, -1, 1}, "10.5"},
		{"integer sums past int64 stay exact", []string{"999999999999999999", "999999999999999999", "999999999999999999", "999999999999999999",
			"999999999999999999", "999999999999999999", "999999999999999999", "999999999999999999", "999999999999999999", "999999999999999999"},
			[]int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "9999999999999999990"},
		{"and below", []string{"-999999999999999999", "-999999999999999999", "-999999999999999999", "-999999999999999999"},
			[]int64{1, 1, 1, 1}, "-3999999999999999996"},
		{"beyond 64 bits, exactly", []string{"18446744073709551615", "18446744073709551615", "0.0000000001"}, []int64{1, 1, 1}, "36893488147419103230.0000000001"},
	}
	for _, c := range cases {
		d := &decimal{u: new(big.Int)}
		for i, s := range c.adds {
			if err := d.add(s, c.sign[i]); err != nil {
				t.Fatalf("%s: %v", c.why, err)
			}
		}
		if got := d.String(); got != c.want {
			t.Errorf("%s: %v → %s, want %s", c.why, c.adds, got, c.want)
		}
	}
	if err := (&decimal{u: new(big.Int)}).add("12abc", 1); err == nil {
		t.Error("a value that is not a decimal was summed")
	}
}

// TestGroupDeltasCoalesce: every change to one group in a batch becomes
// one delta row: a hot group costs one row write per batch.
func TestGroupDeltasCoalesce(t *testing.T) {
	ag := &projections.Aggregation{Aggregates: []projections.Aggregate{
		{Column: "n", Func: projections.AggCount},
		{Column: "s", Func: projections.AggSum},
	}}
	ds := newDeltas(ag)
	g := projections.ValuesOf(7)
	other := projections.ValuesOf(8)
	for i := range 1000 {
		if err := ds.add(g, projections.ValuesOf(1, "2.50"), 1, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.add(g, projections.ValuesOf(1, nil), -1, 5000); err != nil {
		t.Fatal(err)
	}
	if err := ds.add(other, projections.ValuesOf(1, "1"), 1, 1); err != nil {
		t.Fatal(err)
	}
	if len(ds.order) != 2 {
		t.Fatalf("%d delta rows for two groups", len(ds.order))
	}
	d := ds.by[ds.order[0]]
	if d.rows != 999 || d.counts[0] != 999 || d.nonNull[1] != 1000 || d.sums[1].String() != "2500.00" || d.version != 5000 {
		t.Errorf("hot group delta: rows %d count %d non-NULL %d sum %s version %d", d.rows, d.counts[0], d.nonNull[1], d.sums[1], d.version)
	}
}

// TestExtremeNeedsDive: a group's MIN or MAX is read back from its
// contributions only when the batch may have withdrawn it: a withdrawal
// further than everything the batch adds, or any change to values only
// the server can order.
func TestExtremeNeedsDive(t *testing.T) {
	num, text, unknown := projections.OrderNumeric, projections.OrderText, projections.OrderUnknown
	v := projections.ValueOf
	cases := []struct {
		why       string
		order     projections.ValueOrder
		isMax     bool
		adds      []string
		withdraws []string
		want      bool
	}{
		{"adds only", num, true, []string{"5", "9"}, nil, false},
		{"an update that keeps the value", text, false, []string{"2026-01-01 00:00:00"}, []string{"2026-01-01 00:00:00"}, false},
		{"MAX: the added reach past the withdrawn", num, true, []string{"7", "12"}, []string{"11"}, false},
		{"MAX: a withdrawal past every added", num, true, []string{"7"}, []string{"11", "3"}, true},
		{"MIN: a withdrawal below every added", num, false, []string{"7"}, []string{"6.5"}, true},
		{"MIN: an added value below the withdrawn", num, false, []string{"-1", "8"}, []string{"0"}, false},
		{"withdrawals only", text, false, nil, []string{"2026-01-01"}, true},
		{"numbers by value, not text: 10 > 9", num, true, []string{"10"}, []string{"9"}, false},
		{"equal values of other scales", num, true, []string{"1.5"}, []string{"1.50"}, false},
		{"a shorter fraction is never after a longer one", text, true, []string{"2026-01-01 00:00:00"}, []string{"2026-01-01 00:00:00.000001"}, true},
		{"the server's order: any added value", unknown, true, []string{"b"}, nil, true},
		{"the server's order: only NULLs", unknown, true, []string{"NULL"}, []string{"NULL"}, false},
	}
	for _, c := range cases {
		ag := &projections.Aggregation{Aggregates: []projections.Aggregate{{Column: "x", Func: projections.AggMin}}}
		if c.isMax {
			ag.Aggregates[0].Func = projections.AggMax
		}
		ds := newDeltas(ag)
		ds.orders[0] = c.order
		group := []projections.Value{v("g")}
		value := func(s string) []projections.Value {
			if s == "NULL" {
				return []projections.Value{{}}
			}
			return []projections.Value{v(s)}
		}
		for _, s := range c.adds {
			if err := ds.add(group, value(s), 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range c.withdraws {
			if err := ds.add(group, value(s), -1, 1); err != nil {
				t.Fatal(err)
			}
		}
		d := ds.by[ds.order[0]]
		if got := d.extremes[0].needsDive(c.order, c.isMax); got != c.want {
			t.Errorf("%s: needs a dive %v, want %v", c.why, got, c.want)
		}
	}
}

// TestExtremeAdded: the value a delta keeps is the furthest added, by
// value for numbers.
func TestExtremeAdded(t *testing.T) {
	ag := &projections.Aggregation{Aggregates: []projections.Aggregate{{Column: "lo", Func: projections.AggMin}, {Column: "hi", Func: projections.AggMax}}}
	ds := newDeltas(ag)
	ds.orders[0], ds.orders[1] = projections.OrderNumeric, projections.OrderNumeric
	group := []projections.Value{projections.ValueOf("g")}
	for _, s := range []string{"9", "-2.5", "10", "3"} {
		if err := ds.add(group, []projections.Value{projections.ValueOf(s), projections.ValueOf(s)}, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	d := ds.by[ds.order[0]]
	if lo, hi := string(d.extremes[0].added.Bytes()), string(d.extremes[1].added.Bytes()); lo != "-2.5" || hi != "10" {
		t.Errorf("furthest added: MIN %s, MAX %s; want -2.5, 10", lo, hi)
	}
}

// TestExtremeIndexes: a MIN and a MAX of one argument dive along one
// (group, value) index, the first's; other arguments and other functions
// keep their own or none.
func TestExtremeIndexes(t *testing.T) {
	agg := func(f projections.AggFunc, arg string) projections.Aggregate {
		a := projections.Aggregate{Column: arg, Func: f}
		if arg != "" {
			x, err := expr.Parse(arg)
			if err != nil {
				t.Fatal(err)
			}
			a.Arg = x
		}
		return a
	}
	lo, hi, sum, count := projections.AggMin, projections.AggMax, projections.AggSum, projections.AggCount
	cases := []struct {
		why  string
		aggs []projections.Aggregate
		want []int
	}{
		{"min and max of one column share the first's", []projections.Aggregate{agg(lo, "at"), agg(hi, "at")}, []int{0, 0}},
		{"other columns keep their own", []projections.Aggregate{agg(lo, "at"), agg(hi, "qty"), agg(hi, "at")}, []int{0, 1, 0}},
		{"a sum of the column is no extreme", []projections.Aggregate{agg(sum, "at"), agg(count, ""), agg(hi, "at")}, []int{-1, -1, 2}},
		{"an expression is its own argument", []projections.Aggregate{agg(lo, "at"), agg(hi, "at + 1")}, []int{0, 1}},
		{"two maxes of one column: one index", []projections.Aggregate{agg(hi, "at"), agg(hi, "at")}, []int{0, 0}},
	}
	for _, c := range cases {
		got := extremeIndexes(&projections.Aggregation{Aggregates: c.aggs})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}
