package projections

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// positions are, per partition, how far a projector has applied its
// topics, commit markers included. The offsets it stores in the sink stop
// after the last data record: a Kafka transaction ends with a commit
// marker that occupies an offset and carries nothing to apply, so a
// partition whose last offset is a marker never has a stored offset at
// the end. Whoever waits for a projector to reach an end offset (a
// rebuild) compares the position instead.
type positions struct {
	mu sync.Mutex
	m  Offsets
}

// advance records where each partition of a committed job stands.
func (pr *Projector) advance(ls []partitionLag) {
	pr.pos.mu.Lock()
	defer pr.pos.mu.Unlock()
	if pr.pos.m == nil {
		pr.pos.m = Offsets{}
	}
	for _, l := range ls {
		pr.pos.m.Set(l.topic, l.part, l.next)
	}
}

// Applied is, per partition this projector has read from, the offset after
// the last record (data or commit marker) applied to the sink: the next
// offset it would fetch there. Partitions it has read nothing from since
// it started are absent (their stored offsets say where they stand).
func (pr *Projector) Applied() Offsets {
	pr.pos.mu.Lock()
	defer pr.pos.mu.Unlock()
	out := Offsets{}
	for topic, parts := range pr.pos.m {
		for part, next := range parts {
			out.Set(topic, part, next)
		}
	}
	return out
}

// EndOffsets are the last stable offsets of p's topics now: every
// partition's end as a read-committed consumer sees it (past the last
// committed transaction's marker). Partitions with nothing retained
// (never written, or all of it deleted by retention) are left out: a
// consumer reads nothing there, so no position would ever show it at the
// end.
func EndOffsets(ctx context.Context, brokers []string, p *Projection) (Offsets, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
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
	out := Offsets{}
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
