package projections

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// KeyRange is a Vitess-style shard range over the 64-bit keyspace id:
// "-80" is [0x00…, 0x80…), "80-" is [0x80…, end], "-" is everything.
// End is exclusive; Open means the range runs to the end of the space.
type KeyRange struct {
	Text  string
	Start uint64
	End   uint64
	Open  bool
}

// Contains reports whether a keyspace id lies in the range.
func (r KeyRange) Contains(id uint64) bool {
	return id >= r.Start && (r.Open || id < r.End)
}

// ParseKeyRange parses "start-end" where each side is up to 16 hex digits,
// left-aligned (Vitess: "8" = "80" = 0x8000000000000000), and either may be
// empty.
func ParseKeyRange(s string) (KeyRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return KeyRange{}, fmt.Errorf("keyrange %q: want hex start-end like -80, 80- or 40-80", s)
	}
	r := KeyRange{Text: s}
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

// CheckKeyRanges verifies that ranges cover the whole keyspace exactly
// once, so every row has exactly one shard.
func CheckKeyRanges(rs []KeyRange) error {
	sorted := append([]KeyRange(nil), rs...)
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

// KeyspaceID is the 64-bit xxhash of a shard_by value: the string's bytes
// for string values, the decimal text for numbers (the event encoding
// without JSON quotes), so the same value always maps to the same shard.
func KeyspaceID(raw json.RawMessage) uint64 {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return xxhash.Sum64String(s)
		}
	}
	return xxhash.Sum64(raw)
}

func xxhashString(s string) uint64 { return xxhash.Sum64String(s) }
