package main

import (
	"context"
	"fmt"
	"io"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/shards"
)

// planShardKeySample is the source rows plan samples per sharded
// projection to judge its shard_by (shards.Weaknesses): enough to see a
// value above a shard's share of 16 shards (6.25%) within ±0.25
// percentage points, cheap enough for a command run before every deploy.
const planShardKeySample = 100_000

// shardKeyWarnings measures p's shard_by on a sample of the source and
// says what makes it weak for the shards of the sink serving it (nothing for a projection
// that is not routed). A source that cannot be read is said on stderr: the
// plan goes on without the warning.
func shardKeyWarnings(ctx context.Context, cfg config.Config, p *projections.Projection, stderr io.Writer) []string {
	if p.ShardBy == "" || p.Replicated || p.Aggregation != nil {
		return nil
	}
	// A sink out of reach is plan's to say (its drift check): the config's
	// ranges stand in.
	_, ranges, _ := currentRanges(ctx, cfg, p)
	if len(ranges) < 2 {
		return nil
	}
	src, err := shards.OpenSource(cfg.Source)
	if err == nil {
		defer src.Close()
		c := shards.NewCounter(nil, nil)
		if _, err = shards.Scan(ctx, src, p, p.Columns[0], shards.Options{Sample: planShardKeySample}, c); err == nil {
			return shards.Weaknesses(p.ShardBy, c.Stats(1), len(ranges))
		}
	}
	fmt.Fprintf(stderr, "readside plan: measuring the shard_by of %s on the source: %v (its warnings are left out)\n", p.Name, err)
	return nil
}
