package shards

import (
	"encoding/hex"
	"math"
	"sort"
	"unicode"
	"unicode/utf8"

	"github.com/readside/readside/keyspace"
)

// Layout is a named set of key ranges to measure: the sink's current
// shards, an even split, or a reshard's target.
type Layout struct {
	Name   string
	Ranges []keyspace.Range
}

// Counter routes rows into every layout at once and counts the shard_by
// values. It is not safe for concurrent use.
type Counter struct {
	layouts []Layout
	rows    [][]int64 // per layout, per shard
	bytes   [][]int64
	values  map[string]int64 // rows per shard_by value (its routed bytes)
	total   int64
	size    int64
	// moves: rows by (shard of layouts[0], shard of to); nil without to.
	to    []keyspace.Range
	moves map[[2]int]int64
}

// NewCounter counts into layouts; with to, it also counts the rows that
// would move from layouts[0]'s shards to to's.
func NewCounter(layouts []Layout, to []keyspace.Range) *Counter {
	c := &Counter{layouts: layouts, values: map[string]int64{}, to: to}
	for _, l := range layouts {
		c.rows = append(c.rows, make([]int64, len(l.Ranges)))
		c.bytes = append(c.bytes, make([]int64, len(l.Ranges)))
	}
	if to != nil {
		c.moves = map[[2]int]int64{}
	}
	return c
}

// Add counts one read row: value is what the projector hashes for its
// shard_by (projections.ShardValue), size its bytes (source.go says which).
func (c *Counter) Add(value []byte, size int64) {
	id := keyspace.ID(value)
	c.total++
	c.size += size
	c.values[string(value)]++
	for i, l := range c.layouts {
		if s := shardOf(l.Ranges, id); s >= 0 {
			c.rows[i][s]++
			c.bytes[i][s] += size
		}
	}
	if c.to != nil && len(c.layouts) > 0 {
		c.moves[[2]int{shardOf(c.layouts[0].Ranges, id), shardOf(c.to, id)}]++
	}
}

// Skew is max/mean − 1 of per-shard counts: 0 when every shard holds the
// same, 1 when the fullest holds twice the mean. No rows: 0.
func Skew(counts []int64) float64 {
	var total, most int64
	for _, n := range counts {
		total += n
		most = max(most, n)
	}
	if total == 0 || len(counts) == 0 {
		return 0
	}
	return float64(most)*float64(len(counts))/float64(total) - 1
}

// SkewBound is how far the skew of n even shards measured on a sample of
// rows rows may be from the table's: n times four standard errors of a
// shard's share 1/n, 4·n·√((1/n)(1−1/n)/rows). For the default sample,
// ±0.69 percentage points on 4 shards, ±1.55 on 16.
func SkewBound(n int, rows int64) float64 {
	if n < 2 || rows == 0 {
		return 0
	}
	p := 1 / float64(n)
	return 4 * float64(n) * math.Sqrt(p*(1-p)/float64(rows))
}

// ShardStat is one shard of a layout.
type ShardStat struct {
	Range string  `json:"range"`
	Rows  int64   `json:"rows"`
	Bytes int64   `json:"bytes"`
	Share float64 `json:"share"` // of the rows, 0 to 1
}

// LayoutStat is one layout's spread.
type LayoutStat struct {
	Name   string      `json:"name"`
	Ranges string      `json:"ranges"`
	Shards []ShardStat `json:"shards"`
	// Skew is of the rows, BytesSkew of the bytes (Skew).
	Skew      float64 `json:"skew"`
	BytesSkew float64 `json:"bytes_skew"`
	// SkewBound is SkewBound of a sample (0 when every row was read).
	SkewBound float64 `json:"skew_bound"`
}

// ValueShare is one shard_by value and its part of the rows.
type ValueShare struct {
	Value string  `json:"value"` // text, or 0x… hex when not printable UTF-8
	Rows  int64   `json:"rows"`
	Share float64 `json:"share"`
}

// Flow is rows that go from one shard to another in a reshard.
type Flow struct {
	From string `json:"from"`
	To   string `json:"to"`
	Rows int64  `json:"rows"`
}

// Moves are the rows a reshard from the current ranges to To would move:
// a row moves when the range holding it in To is not the range holding
// it now.
type Moves struct {
	From  string  `json:"from"`
	To    string  `json:"to"`
	Rows  int64   `json:"rows"`
	Share float64 `json:"share"`
	Flows []Flow  `json:"flows"` // every (from, to) pair with rows, staying ones included
}

// Stats are the counts as a report.
type Stats struct {
	Rows     int64        `json:"rows"`
	Bytes    int64        `json:"bytes"`
	Distinct int          `json:"distinct_values"`
	Layouts  []LayoutStat `json:"layouts"`
	Top      []ValueShare `json:"top_values"`
	Moves    *Moves       `json:"moves,omitempty"`
}

// Stats reports the counts so far, with the top hottest values.
func (c *Counter) Stats(top int) Stats {
	st := Stats{Rows: c.total, Bytes: c.size, Distinct: len(c.values)}
	for i, l := range c.layouts {
		ls := LayoutStat{Name: l.Name, Ranges: rangesText(l.Ranges), Skew: Skew(c.rows[i]), BytesSkew: Skew(c.bytes[i])}
		for s, r := range l.Ranges {
			ls.Shards = append(ls.Shards, ShardStat{Range: r.Text, Rows: c.rows[i][s], Bytes: c.bytes[i][s], Share: share(c.rows[i][s], c.total)})
		}
		st.Layouts = append(st.Layouts, ls)
	}
	st.Top = c.hottest(top)
	if c.to != nil && len(c.layouts) > 0 {
		st.Moves = c.moved()
	}
	return st
}

func (c *Counter) hottest(top int) []ValueShare {
	type vc struct {
		v string
		n int64
	}
	all := make([]vc, 0, len(c.values))
	for v, n := range c.values {
		all = append(all, vc{v, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].v < all[j].v
	})
	var out []ValueShare
	for _, x := range all[:min(top, len(all))] {
		out = append(out, ValueShare{Value: Printable([]byte(x.v)), Rows: x.n, Share: share(x.n, c.total)})
	}
	return out
}

func (c *Counter) moved() *Moves {
	from := c.layouts[0].Ranges
	m := &Moves{From: rangesText(from), To: rangesText(c.to)}
	for k, n := range c.moves {
		f := Flow{Rows: n}
		if k[0] >= 0 {
			f.From = from[k[0]].Text
		}
		if k[1] >= 0 {
			f.To = c.to[k[1]].Text
		}
		m.Flows = append(m.Flows, f)
		if f.From != f.To {
			m.Rows += n
		}
	}
	sort.Slice(m.Flows, func(i, j int) bool {
		a, b := m.Flows[i], m.Flows[j]
		if a.From != b.From {
			return rangeLess(a.From, b.From)
		}
		return rangeLess(a.To, b.To)
	})
	m.Share = share(m.Rows, c.total)
	return m
}

// rangeLess orders range texts by where they start ("-40" first).
func rangeLess(a, b string) bool {
	ra, _ := keyspace.ParseRange(a)
	rb, _ := keyspace.ParseRange(b)
	if ra.Start != rb.Start {
		return ra.Start < rb.Start
	}
	return a < b
}

func share(n, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// Printable is a shard_by value as text, or 0x and its hex when it is not
// printable UTF-8 (a binary column's bytes, a BIT pattern).
func Printable(b []byte) string {
	if utf8.Valid(b) {
		ok := true
		for _, r := range string(b) {
			if !unicode.IsPrint(r) {
				ok = false
				break
			}
		}
		if ok {
			return string(b)
		}
	}
	return "0x" + hex.EncodeToString(b)
}
