package rebuild

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

func TestParseOffsets(t *testing.T) {
	p := &projections.Projection{Name: "mbs", Topic: "rs.shop.orders", Joins: []*projections.Join{{Topic: "rs.shop.customers"}},
		Children: []*projections.Children{{Name: "lines", Topic: "rs.shop.order_lines"}}}
	cases := []struct {
		why  string
		from string
		want event.Offsets
		err  string
	}{
		{"bare items name the projection's own topic", "0:120, 3:0", event.Offsets{"rs.shop.orders": {0: 120, 3: 0}}, ""},
		{"a joined parent's topic is named with a slash", "0:1,rs.shop.customers/2:7", event.Offsets{"rs.shop.orders": {0: 1}, "rs.shop.customers": {2: 7}}, ""},
		{"a child table's topic is named like a parent's", "rs.shop.order_lines/1:3", event.Offsets{"rs.shop.order_lines": {1: 3}}, ""},
		{"a topic the projection does not consume is refused with its topics", "other/0:1", nil, "topic other is not consumed by projection mbs (its topics: rs.shop.orders, rs.shop.customers, rs.shop.order_lines)"},
		{"a negative offset is not an offset", "0:-1", nil, `item "0:-1" is not partition:offset`},
		{"a missing offset is refused with the forms", "0", nil, "want earliest, an RFC3339 time"},
		{"a partition named twice is ambiguous", "0:1,0:2", nil, "rs.shop.orders/0 is named twice"},
	}
	for _, c := range cases {
		got, err := parseOffsets(p, c.from)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want it to contain %q", c.why, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) { // fmt sorts map keys
			t.Errorf("%s: got %v, want %v", c.why, got, c.want)
		}
	}
}

func TestCheckOffsets(t *testing.T) {
	have := logRanges{"t": {0: {0, 10}, 1: {5, 20}, 2: {0, 0}, 3: {0, 4}}}
	cases := []struct {
		why  string
		want event.Offsets
		errs []string // each must appear; none: valid
	}{
		{"offsets inside the range are valid", event.Offsets{"t": {0: 3, 1: 5}}, nil},
		{"the end itself is valid: it replays nothing", event.Offsets{"t": {0: 10, 2: 0}}, nil},
		{"an unknown partition names the topic's partitions", event.Offsets{"t": {0: 0, 99: 5}}, []string{"partition 99 of t does not exist: t has partitions 0-3"}},
		{"an offset past the high watermark names the range", event.Offsets{"t": {0: 11}}, []string{"offset 11 of t/0 is past the end of the partition: its offsets run from 0 to 10"}},
		{"an offset below the log start names the range and earliest", event.Offsets{"t": {1: 4}}, []string{"offset 4 of t/1 is below the partition's log start", "run from 5 to 20", "--from earliest"}},
		{"every problem is listed, not just the first", event.Offsets{"t": {0: 11, 7: 0}}, []string{"t/0 is past the end", "partition 7 of t"}},
	}
	for _, c := range cases {
		err := checkOffsets(c.want, have)
		if len(c.errs) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.why, err)
			}
			continue
		}
		for _, e := range c.errs {
			if err == nil || !strings.Contains(err.Error(), e) {
				t.Errorf("%s: error %v, want it to contain %q", c.why, err, e)
			}
		}
	}
}

func TestPartitionList(t *testing.T) {
	cases := []struct {
		why   string
		parts []int32
		want  string
	}{
		{"Kafka's contiguous partitions collapse to a range", []int32{2, 0, 3, 1}, "0-3"},
		{"one partition says so", []int32{0}, "0 only"},
		{"a gap lists each", []int32{0, 2}, "0, 2"},
		{"a topic without partitions says none", nil, "none"},
	}
	for _, c := range cases {
		m := map[int32]logRange{}
		for _, p := range c.parts {
			m[p] = logRange{}
		}
		if got := partitionList(m); got != c.want {
			t.Errorf("%s: %q, want %q", c.why, got, c.want)
		}
	}
}
