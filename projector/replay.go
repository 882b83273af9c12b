package projector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/projections"
)

// replayCheckEvery is how often a projector looks for replay requests
// (one small query per sink shard), idle or not.
const replayCheckEvery = time.Second

// takeReplays runs on assignment, before the stored offsets are read.
func (pr *Projector) takeReplays(ctx context.Context, assigned map[string]map[int32]kgo.Offset) error {
	rs, ok := pr.sink.(projections.ReplaySink)
	if !ok {
		return nil
	}
	parts := map[string][]int32{}
	for topic, ps := range assigned {
		for part := range ps {
			parts[topic] = append(parts[topic], part)
		}
	}
	taken, err := rs.TakeReplays(ctx, pr.p, parts)
	if err != nil {
		return fmt.Errorf("projection %s: %w", pr.p.Name, err)
	}
	for topic, ps := range taken {
		for part, next := range ps {
			pr.log.Info("replaying: partition reset by readside replay", "topic", topic, "partition", part, "next_offset", next)
		}
	}
	return nil
}

// replayPending reports whether a replay request names a partition this
// projector holds (then it rejoins; partitions held elsewhere are left to
// their owner, so workers do not churn on each other's requests).
func (pr *Projector) replayPending(ctx context.Context, owned *owned) (bool, error) {
	rs, ok := pr.sink.(projections.ReplaySink)
	if !ok {
		return false, nil
	}
	pending, err := rs.PendingReplays(ctx, pr.p)
	if err != nil {
		return false, fmt.Errorf("projection %s: %w", pr.p.Name, err)
	}
	for topic, parts := range pending {
		for part := range parts {
			if owned.has(topic, part) {
				return true, nil
			}
		}
	}
	return false, nil
}

// owned tracks the partitions a group member holds.
type owned struct {
	mu sync.Mutex
	m  map[string][]int32
}

func newOwned() *owned { return &owned{m: map[string][]int32{}} }

func (o *owned) add(m map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range m {
		for _, p := range ps {
			if !slices.Contains(o.m[t], p) {
				o.m[t] = append(o.m[t], p)
			}
		}
	}
}

func (o *owned) remove(m map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range m {
		o.m[t] = slices.DeleteFunc(o.m[t], func(p int32) bool { return slices.Contains(ps, p) })
	}
}

func (o *owned) has(topic string, part int32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.m[topic], part)
}
