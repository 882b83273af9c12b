package sinks

import (
	"math/big"
	"testing"

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
