package projector

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
)

// Ends reads the last stable offsets of topics on brokers, per partition
// (verify.Ends: what verify's re-checks wait for a projection to reach);
// nil without brokers. Each call dials a client of its own.
func Ends(brokers []string) func(ctx context.Context, topics ...string) (event.Offsets, error) {
	if len(brokers) == 0 {
		return nil
	}
	return func(ctx context.Context, topics ...string) (event.Offsets, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topics...)
		if err != nil {
			return nil, err
		}
		out := event.Offsets{}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil && o.Offset > 0 {
				out.Set(o.Topic, o.Partition, o.Offset)
			}
		})
		return out, nil
	}
}
