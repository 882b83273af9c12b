package shards

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/keyspace"
)

func TestEvenRanges(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
		why  string
	}{
		{1, "-", "one shard holds the whole keyspace"},
		{2, "-80,80-", "the usual first split"},
		{4, "-40,40-80,80-c0,c0-", "Vitess's 4-way split"},
		{8, "-20,20-40,40-60,60-80,80-a0,a0-c0,c0-e0,e0-", "powers of two halve each range"},
		{3, "-55,55-aa,aa-", "not a power of two: i·256/n rounded down, as Vitess's GenerateShardRanges"},
	} {
		rs, err := EvenRanges(c.n)
		if err != nil {
			t.Fatalf("%d: %v", c.n, err)
		}
		if got := rangesText(rs); got != c.want {
			t.Errorf("EvenRanges(%d) = %s, want %s (%s)", c.n, got, c.want, c.why)
		}
		if err := keyspace.CheckRanges(rs); err != nil {
			t.Errorf("EvenRanges(%d) does not cover the keyspace once: %v", c.n, err)
		}
	}
	rs, err := EvenRanges(16)
	if err != nil || len(rs) != 16 || rs[1].Text != "10-20" || rs[15].Text != "f0-" {
		t.Errorf("EvenRanges(16) = %v, %v: want 16 ranges of width 0x10", rs, err)
	}
	for _, n := range []int{0, 257} {
		if _, err := EvenRanges(n); err == nil {
			t.Errorf("EvenRanges(%d): no error, want one naming the bound", n)
		}
	}
}

func TestSkew(t *testing.T) {
	for _, c := range []struct {
		counts []int64
		want   float64
		why    string
	}{
		{[]int64{25, 25, 25, 25}, 0, "even shards have no skew"},
		{[]int64{50, 25, 25, 0}, 1, "the fullest holds twice the mean"},
		{[]int64{100, 0, 0, 0}, 3, "everything on one of four shards: max/mean = 4"},
		{[]int64{0, 0}, 0, "no rows: nothing is skewed"},
		{[]int64{7}, 0, "one shard is its own mean"},
	} {
		if got := Skew(c.counts); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Skew(%v) = %v, want %v (%s)", c.counts, got, c.want, c.why)
		}
	}
}

// TestCounterRoutesAsTheProjector: each value lands in the range holding
// keyspace.ID of it, in every layout; bytes and shares follow.
func TestCounterRoutesAsTheProjector(t *testing.T) {
	two, _ := EvenRanges(2)
	four, _ := EvenRanges(4)
	c := NewCounter([]Layout{{"current", two}, {"4 shards", four}}, four)
	want2 := make([]int64, 2)
	want4 := make([]int64, 4)
	for i := range 1000 {
		v := []byte(strconv.Itoa(i % 100))
		id := keyspace.ID(v)
		want2[shardOf(two, id)]++
		want4[shardOf(four, id)]++
		c.Add(v, 10)
	}
	st := c.Stats(3)
	if st.Rows != 1000 || st.Bytes != 10000 || st.Distinct != 100 {
		t.Fatalf("rows %d bytes %d distinct %d, want 1000, 10000, 100", st.Rows, st.Bytes, st.Distinct)
	}
	for li, want := range [][]int64{want2, want4} {
		for s, sh := range st.Layouts[li].Shards {
			if sh.Rows != want[s] || sh.Bytes != 10*want[s] || math.Abs(sh.Share-float64(want[s])/1000) > 1e-12 {
				t.Errorf("layout %s shard %s: %+v, want %d rows", st.Layouts[li].Name, sh.Range, sh, want[s])
			}
		}
		if got := st.Layouts[li].Skew; math.Abs(got-Skew(want)) > 1e-12 {
			t.Errorf("layout %d skew %v, want %v", li, got, Skew(want))
		}
	}
	if len(st.Top) != 3 || st.Top[0].Rows != 10 || st.Top[0].Value != "0" || st.Top[1].Value != "1" {
		t.Errorf("top values %+v: want 3, ties broken by value (0, 1, 10)", st.Top)
	}
	// No range of -80,80- is one of -40,40-80,80-c0,c0-: every row moves,
	// each into one of the two halves of its range.
	m := st.Moves
	if m == nil || m.Rows != 1000 || len(m.Flows) != 4 {
		t.Fatalf("moves %+v: a 2→4 split changes every row's range", m)
	}
	for _, f := range m.Flows {
		if f.From == "-80" && f.To != "-40" && f.To != "40-80" || f.From == "80-" && f.To != "80-c0" && f.To != "c0-" {
			t.Errorf("flow %+v: rows of a range go only to its halves", f)
		}
	}
}

// TestMovesStay: a reshard that keeps a range leaves its rows in place.
func TestMovesStay(t *testing.T) {
	from, _ := ParseRanges("-80,80-")
	to, _ := ParseRanges("-80,80-c0,c0-")
	c := NewCounter([]Layout{{"current", from}}, to)
	var stay, move int64
	for i := range 500 {
		v := []byte(strconv.Itoa(i))
		if keyspace.ID(v) < 0x8000000000000000 {
			stay++
		} else {
			move++
		}
		c.Add(v, 1)
	}
	m := c.Stats(0).Moves
	if m.Rows != move || math.Abs(m.Share-float64(move)/500) > 1e-12 {
		t.Errorf("moves %d (%.3f), want %d: only the rows of the split 80- move", m.Rows, m.Share, move)
	}
	if m.Flows[0].From != "-80" || m.Flows[0].To != "-80" || m.Flows[0].Rows != stay {
		t.Errorf("first flow %+v, want -80 -> -80 with %d rows staying", m.Flows[0], stay)
	}
}

func TestParseRanges(t *testing.T) {
	for _, c := range []struct {
		text string
		ok   bool
		why  string
	}{
		{"-80,80-", true, "two halves"},
		{"-80, 80-c0, c0-", true, "spaces after commas are the operator's"},
		{"-80,c0-", false, "a gap: 80-c0 has no shard"},
		{"-80,40-", false, "an overlap: a row would have two shards"},
		{"-8x", false, "not hex"},
	} {
		_, err := ParseRanges(c.text)
		if (err == nil) != c.ok {
			t.Errorf("ParseRanges(%q): err %v, want ok=%v (%s)", c.text, err, c.ok, c.why)
		}
	}
}

func TestWeaknesses(t *testing.T) {
	uniform := Stats{Rows: 10000, Distinct: 5000, Top: []ValueShare{{Value: "1", Share: 0.001}}}
	for _, c := range []struct {
		st   Stats
		n    int
		want []string
		why  string
	}{
		{uniform, 4, nil, "many values, none hot: a good key"},
		{Stats{Rows: 1000, Distinct: 15, Top: []ValueShare{{Value: "a", Share: 0.1}}}, 4, []string{"low cardinality: 15 distinct"}, "15 values < 4 per shard × 4 shards"},
		{Stats{Rows: 1000, Distinct: 16, Top: []ValueShare{{Value: "a", Share: 0.1}}}, 4, nil, "16 values is exactly 4 per shard: no warning"},
		{Stats{Rows: 1000, Distinct: 900, Top: []ValueShare{{Value: "acme", Share: 0.3}}}, 4, []string{`value "acme" holds 30.0%`}, "one value above a quarter on 4 shards"},
		{Stats{Rows: 1000, Distinct: 900, Top: []ValueShare{{Value: "acme", Share: 0.25}}}, 4, nil, "exactly a shard's share fits one shard"},
		{Stats{}, 4, nil, "an empty table says nothing"},
		{Stats{Rows: 10, Distinct: 1, Top: []ValueShare{{Value: "a", Share: 1}}}, 1, nil, "one shard: nothing to spread"},
	} {
		got := Weaknesses("k", c.st, c.n)
		if len(got) != len(c.want) {
			t.Errorf("%s: %q, want %d warning(s)", c.why, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: %q, want it to say %q", c.why, got[i], w)
			}
		}
	}
}

func TestSkewBound(t *testing.T) {
	for _, c := range []struct {
		n    int
		rows int64
		want float64
		why  string
	}{
		{4, 1_000_000, 0.0069, "the default sample on 4 shards: the documented ±0.69 points"},
		{16, 1_000_000, 0.0155, "on 16 shards: ±1.55 points"},
		{1, 1000, 0, "one shard has no skew to miss"},
		{4, 0, 0, "no rows: no bound to give"},
	} {
		if got := SkewBound(c.n, c.rows); math.Abs(got-c.want) > 0.00005 {
			t.Errorf("SkewBound(%d, %d) = %.5f, want %.4f (%s)", c.n, c.rows, got, c.want, c.why)
		}
	}
}

// TestWriteText: the text report says what was read (a sample's 1 in k),
// a table per layout with its skew and bound, the hottest values, and
// which flows move and which stay.
func TestWriteText(t *testing.T) {
	cur, _ := ParseRanges("-80,80-")
	to, _ := ParseRanges("-80,80-c0,c0-")
	c := NewCounter([]Layout{{"current ranges of sink reads", cur}}, to)
	for i := range 100 {
		c.Add([]byte(strconv.Itoa(i%37)), 3)
	}
	st := c.Stats(2)
	st.Layouts[0].SkewBound = 0.05
	var b strings.Builder
	Report{Projection: "p", By: "tenant", Sink: "reads", Sample: SampleInfo{Every: 3, Estimate: 300, Read: 110, Filtered: 10}, Stats: st}.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"projection p, routed by tenant: a sample of 1 in 3 rows",
		"110 source rows read, 100 read rows counted (10 left out by where, 0 with a NULL shard value), 37 distinct values, 300 B",
		"current ranges of sink reads (-80,80-): skew ",
		"(±5.0 points: a sample)",
		"hottest values of tenant:",
		"-80        -> -80",
		"stays",
		"resharding -80,80- -> -80,80-c0,c0- moves ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
