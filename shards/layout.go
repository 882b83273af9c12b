// Package shards measures how a projection's rows would spread over the
// shards of a sink: per key-range layout, the rows and bytes each shard
// gets, the skew, the hottest shard_by values, and the rows a reshard to
// other ranges would move (`readside shards analyze`, and `readside
// plan`'s warnings about a weak shard_by). Rows are routed exactly as the
// projector routes them (projections.ShardValue, keyspace.ID);
// the statistics here are pure, source.go reads the rows.
package shards

import (
	"fmt"
	"strings"

	"github.com/readside/readside/keyspace"
)

// MaxEvenShards bounds EvenRanges: Vitess's two-hex-digit boundaries give
// at most 256 distinct shards.
const MaxEvenShards = 256

// EvenRanges are n shards of equal width over the keyspace, with the
// boundaries Vitess's key.GenerateShardRanges prints: i·256/n as two hex
// digits (4 shards: -40,40-80,80-c0,c0-; 1 shard: -).
func EvenRanges(n int) ([]keyspace.Range, error) {
	if n < 1 || n > MaxEvenShards {
		return nil, fmt.Errorf("%d shards: an even split takes 1 to %d shards", n, MaxEvenShards)
	}
	out := make([]keyspace.Range, n)
	for i := range n {
		lo, hi := "", ""
		if i > 0 {
			lo = fmt.Sprintf("%02x", i*256/n)
		}
		if i < n-1 {
			hi = fmt.Sprintf("%02x", (i+1)*256/n)
		}
		r, err := keyspace.ParseRange(lo + "-" + hi)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// ParseRanges parses comma-separated key ranges ("-80,80-c0,c0-") that
// must cover the keyspace exactly once, as a sink's shards must.
func ParseRanges(text string) ([]keyspace.Range, error) {
	var out []keyspace.Range
	for _, s := range strings.Split(text, ",") {
		r, err := keyspace.ParseRange(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := keyspace.CheckRanges(out); err != nil {
		return nil, fmt.Errorf("%s: %w", text, err)
	}
	return out, nil
}

// shardOf is the index of the range holding id (-1: none, which ranges
// checked by keyspace.CheckRanges never give).
func shardOf(ranges []keyspace.Range, id uint64) int {
	for i, r := range ranges {
		if r.Contains(id) {
			return i
		}
	}
	return -1
}

// rangesText is ranges as a sink's config lists them, comma separated.
func rangesText(ranges []keyspace.Range) string {
	texts := make([]string, len(ranges))
	for i, r := range ranges {
		texts[i] = r.Text
	}
	return strings.Join(texts, ",")
}
