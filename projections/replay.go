package projections

import (
	"context"

	"github.com/readside/readside/event"
)

// ReplaySink is a sink that keeps replay requests (`readside replay`):
// offsets an operator asked a projection to resume at. Sinks without it
// simply never replay.
type ReplaySink interface {
	// PendingReplays are the partitions with a request not yet consumed.
	PendingReplays(ctx context.Context, p *Projection) (event.Offsets, error)
	// TakeReplays consumes the requests of the given partitions: their
	// stored offsets become the requested ones. It returns what it took.
	TakeReplays(ctx context.Context, p *Projection, assigned map[string][]int32) (event.Offsets, error)
}
