package reshard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// fillSink is the sink the fill projector applies through: the NEW shards
// that receive pieces, each keeping only the rows whose keyspace id lies
// in one of its pieces (the others are the live projector's, on the OLD
// shard of the same server, or nobody's there). Parent state, child
// state and truncations go to every such shard, as Sharded.Apply sends
// them to every shard; a child change refreshes the arrays of its links
// over the whole read table there, as the live projector's does (on a
// server both write, whichever stores a child's change first refreshes
// its old parent, whoever serves that row); each records the batch's offsets (under the fill identity:
// the projection is WithProgressName'd). It does not check the routing
// generation: it writes where the reshard tells it.
type fillSink struct {
	shards []sinks.Shard
	pieces [][]Piece // per shard in shards
}

var _ projections.Sink = (*fillSink)(nil)

// newFillSink is the fill sink of pieces over NEW's shards.
func newFillSink(newSink *sinks.Sharded, pieces []Piece) *fillSink {
	fs := &fillSink{}
	idx := map[int]int{}
	for _, pc := range pieces {
		i, ok := idx[pc.To]
		if !ok {
			i = len(fs.shards)
			idx[pc.To] = i
			fs.shards = append(fs.shards, newSink.Shards[pc.To])
			fs.pieces = append(fs.pieces, nil)
		}
		fs.pieces[i] = append(fs.pieces[i], pc)
	}
	return fs
}

// Offsets are the lowest over the shards (sinks.LowestOffsets).
func (fs *fillSink) Offsets(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	return sinks.LowestOffsets(ctx, fs.shards, p)
}

// Apply keeps, per shard, the writes of its pieces (and every
// truncation), and applies the parts concurrently.
func (fs *fillSink) Apply(ctx context.Context, p *projections.Projection, b *projections.Batch) error {
	errs := make([]error, len(fs.shards))
	var wg sync.WaitGroup
	for i := range fs.shards {
		part := &projections.Batch{Parents: b.Parents, Contributions: b.Contributions, ChildWrites: b.ChildWrites,
			Offsets: b.Offsets, Stale: b.Stale, Marks: b.Marks, Shard: &fs.shards[i].Range}
		for _, w := range b.Writes {
			if w.Kind == projections.Truncate || Contains(fs.pieces[i], w.KeyspaceID) {
				part.Writes = append(part.Writes, w)
			}
		}
		wg.Go(func() {
			if err := fs.shards[i].Apply(ctx, p, part); err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", fs.shards[i].Range.Text, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
