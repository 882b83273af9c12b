package shards

import "fmt"

// LowCardinalityFactor: a shard_by with fewer distinct values than this
// many per shard leaves shards uneven (each value's rows sit on one shard)
// and gives a later split too few values to divide.
const LowCardinalityFactor = 4

// Weaknesses says what makes a shard_by weak for a sink of n shards, as
// measured in st (a sample of the source): too few distinct values, or
// one value holding more than a shard's share of the rows, which no
// choice of ranges can spread. Nothing is said of an empty sample or of a
// sink of one shard.
func Weaknesses(by string, st Stats, n int) []string {
	if st.Rows == 0 || n < 2 {
		return nil
	}
	var out []string
	if st.Distinct < LowCardinalityFactor*n {
		out = append(out, fmt.Sprintf("shard_by %s has low cardinality: %d distinct value(s) in %d sampled rows, fewer than %d per shard over %d shards, so the shards stay uneven and cannot be split further: shard by a column with many values (readside shards analyze --by compares candidates)",
			by, st.Distinct, st.Rows, LowCardinalityFactor, n))
	}
	if len(st.Top) > 0 && st.Top[0].Share > 1/float64(n) {
		out = append(out, fmt.Sprintf("shard_by %s value %q holds %.1f%% of the sampled rows, more than a shard's share (%.1f%% of %d shards): its shard holds at least that whatever the ranges; shard by a column that spreads it (readside shards analyze --by compares candidates)",
			by, st.Top[0].Value, 100*st.Top[0].Share, 100/float64(n), n))
	}
	return out
}
