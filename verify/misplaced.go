package verify

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// Misplaced rows are copies on a shard whose key range does not hold the
// row's keyspace id. Tables sharded before readside routed by Vitess's
// keyspace ids (keyspace.ID) hold about half their rows on the
// other shard of a two-shard sink; verify finds them by routing every
// shard_by value it reads exactly as the projector does, and --repair
// moves them (Repair, moveMisplaced).

// learnShardBits reads the width of a BIT shard_by column, whose value is
// routed by its pattern in ceil(width/8) bytes (projections.ShardValue).
func (v *Verifier) learnShardBits(ctx context.Context) error {
	if v.shardIdx < 0 || v.keyKinds[v.shardIdx] != kBit {
		return nil
	}
	col := v.p.ShardBy // a group column copied under its own name
	for _, c := range v.p.Columns {
		if c.Name == v.p.ShardBy {
			col = c.Source
		}
	}
	var n sql.NullInt64
	err := v.src.QueryRowContext(ctx, "SELECT NUMERIC_PRECISION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
		v.p.SourceDB, v.p.SourceTbl, col).Scan(&n)
	if err != nil {
		return fmt.Errorf("reading the width of BIT column %s.%s.%s: %w", v.p.SourceDB, v.p.SourceTbl, col, err)
	}
	v.shardBits = int(n.Int64)
	return nil
}

// home is the shard a shard_by value belongs on (0 without sharding).
func (v *Verifier) home(shardBy string) int {
	if v.shardIdx < 0 {
		return 0
	}
	sv := shardValue(v.keyKinds[v.shardIdx], shardBy, v.shardBits)
	if v.shardIdx < len(v.pl.floats) && v.pl.floats[v.shardIdx] {
		sv = projections.Float32ShardText(sv) // the key leads cols
	}
	id := keyspace.ID(sv)
	for i, sh := range v.sink.Shards {
		if sh.Range.Contains(id) {
			return i
		}
	}
	return 0
}

// countMisplaced is the misplaced rows per shard holding them.
func countMisplaced(diffs []Diff) map[string]int64 {
	var out map[string]int64
	for _, d := range diffs {
		if d.Kind == "misplaced" {
			if out == nil {
				out = map[string]int64{}
			}
			out[d.Shard]++
		}
	}
	return out
}

// sampleDiffs keeps the first n keys of each kind, in key order; of
// misplaced rows the first n on each shard holding them.
func sampleDiffs(diffs []Diff, n int) []Diff {
	sort.SliceStable(diffs, func(i, j int) bool {
		if diffs[i].Kind != diffs[j].Kind {
			return diffs[i].Kind < diffs[j].Kind
		}
		if diffs[i].Kind == "misplaced" && diffs[i].shardIdx != diffs[j].shardIdx {
			return diffs[i].shardIdx < diffs[j].shardIdx
		}
		return diffs[i].key.text() < diffs[j].key.text()
	})
	var out []Diff
	count := map[string]int{}
	for _, d := range diffs {
		group := d.Kind
		if d.Kind == "misplaced" {
			group += "@" + d.Shard
		}
		if count[group] < n {
			count[group]++
			out = append(out, d)
		}
	}
	return out
}

// deleteMoved deletes the misplaced copies of diffs whose key needs no
// copy there any more: its home shard holds the row, or no shard should
// (a misplaced copy that is still its key's only wanted copy has publish
// set, and stays). It returns the rows deleted.
func (v *Verifier) deleteMoved(ctx context.Context, diffs []Diff) (int, error) {
	total := 0
	for _, d := range diffs {
		if d.Kind != "misplaced" || d.publish {
			continue
		}
		n, err := v.deleteCopy(ctx, d)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
