package rebuild

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// Topics reads what the broker holds of a projection's topics. Calls are
// synchronous, each on a client of its own.
type Topics interface {
	// EndOffsets are the last stable offsets of p's topics now: every
	// partition's end as a read-committed consumer sees it (past the
	// last committed transaction's marker). Partitions with nothing
	// retained (never written, or all of it deleted by retention) are
	// left out: a consumer reads nothing there, so no position would
	// ever show it at the end.
	EndOffsets(ctx context.Context, p *projections.Projection) (event.Offsets, error)
	// TrimmedStarts are the partitions of p's topics whose log no longer
	// starts at offset 0, with where it starts: retention (or a deletion
	// of records) removed what was before. A row whose newest record was
	// among them cannot be backfilled from the topics.
	TrimmedStarts(ctx context.Context, p *projections.Projection) (event.Offsets, error)
}

// Kafka is Topics read from the brokers.
type Kafka struct{ Brokers []string }

var _ Topics = Kafka{}

// EndOffsets implements Topics.
func (k Kafka) EndOffsets(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, p.Topics()...)
	if err != nil {
		return nil, fmt.Errorf("listing the start offsets of %v: %w", p.Topics(), err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, p.Topics()...)
	if err != nil {
		return nil, fmt.Errorf("listing the end offsets of %v: %w", p.Topics(), err)
	}
	out := event.Offsets{}
	var bad error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			bad = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
			return
		}
		if start, ok := starts.Lookup(o.Topic, o.Partition); ok && start.Err == nil && start.Offset >= o.Offset {
			return
		}
		out.Set(o.Topic, o.Partition, o.Offset)
	})
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// TrimmedStarts implements Topics.
func (k Kafka) TrimmedStarts(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, p.Topics()...)
	if err != nil {
		return nil, fmt.Errorf("listing the start offsets of %v: %w", p.Topics(), err)
	}
	out := event.Offsets{}
	var bad error
	starts.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Err != nil:
			bad = fmt.Errorf("start offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
		case o.Offset > 0:
			out.Set(o.Topic, o.Partition, o.Offset)
		}
	})
	return out, bad
}
