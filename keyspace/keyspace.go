// Package keyspace is shard routing as Vitess does it: a row's keyspace id
// (ID, the xxhash vindex), the key ranges a sink's shards own (Range:
// parse, contains, cover checks) and the routing generations that say
// which sink serves a projection (routing.go). The projector, the sinks,
// verify, reshard and the shards report all route through here.
package keyspace

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Range is a Vitess shard range over keyspace ids (ID): "-80"
// is [0x00…, 0x80…), "80-" is [0x80…, end], "-" is everything. End is
// exclusive; Open means the range runs to the end of the space. Bounds
// and ids are the big-endian numbers of their 8 bytes, so Contains
// compares bytes lexicographically, as Vitess's key.KeyRangeContains does.
type Range struct {
	Text  string
	Start uint64
	End   uint64
	Open  bool
}

// Contains reports whether a keyspace id lies in the range.
func (r Range) Contains(id uint64) bool {
	return id >= r.Start && (r.Open || id < r.End)
}

// ParseRange parses "start-end" where each side is up to 16 hex digits,
// left-aligned (Vitess: "8" = "80" = 0x8000000000000000), and either may be
// empty.
func ParseRange(s string) (Range, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return Range{}, fmt.Errorf("keyrange %q: want hex start-end like -80, 80- or 40-80", s)
	}
	r := Range{Text: s}
	var err error
	if r.Start, err = hexPrefix(lo); err != nil {
		return r, fmt.Errorf("keyrange %q: %v", s, err)
	}
	if hi == "" {
		r.Open = true
	} else if r.End, err = hexPrefix(hi); err != nil {
		return r, fmt.Errorf("keyrange %q: %v", s, err)
	} else if r.End <= r.Start {
		return r, fmt.Errorf("keyrange %q: end must be above start", s)
	}
	return r, nil
}

func hexPrefix(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	if len(s) > 16 {
		return 0, fmt.Errorf("%q has more than 16 hex digits", s)
	}
	padded := s + strings.Repeat("0", 16-len(s))
	b, err := hex.DecodeString(padded)
	if err != nil {
		return 0, fmt.Errorf("%q is not hex", s)
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v, nil
}

// CheckRanges verifies that ranges cover the whole keyspace exactly
// once, so every row has exactly one shard.
func CheckRanges(rs []Range) error {
	sorted := append([]Range(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	var next uint64
	for i, r := range sorted {
		if r.Start != next || (i > 0 && sorted[i-1].Open) {
			if r.Start < next || (i > 0 && sorted[i-1].Open) {
				return fmt.Errorf("keyranges %s and %s overlap", sorted[i-1].Text, r.Text)
			}
			return fmt.Errorf("no shard covers keyspace ids %016x to %016x: add a keyrange", next, r.Start-1)
		}
		if r.Open {
			next = 0
			continue
		}
		next = r.End
	}
	if len(sorted) == 0 || !sorted[len(sorted)-1].Open {
		return fmt.Errorf("no shard covers keyspace ids from %016x to %016x: the last keyrange must end open (e.g. 80-)", next, uint64(math.MaxUint64))
	}
	return nil
}

// ID is the keyspace id Vitess's xxhash vindex gives a value
// (vindexes/xxhash.go, vXXHash): the 8 bytes of xxhash64(value),
// little-endian. It is returned as the big-endian number of those 8 bytes,
// so comparing ids as numbers compares the bytes as Vitess compares them
// with a shard's key range, and %016x prints them as Vitess does. value is
// what VTGate hashes for the column: projections.ShardValue. Every component that
// routes a row (projector, verify) goes through here.
func ID(value []byte) uint64 {
	return bits.ReverseBytes64(xxhash.Sum64(value))
}
