package rebuild

import (
	"context"
	"fmt"
	"time"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// followRounds and followAfter bound the fill's rounds (consumeUntil):
// the shadow is swapped in about as far behind as its last round took.
const (
	followRounds = 5
	followAfter  = time.Second
)

// consumeUntil runs a projector for p, applying through sink, until it
// has applied, on every partition, everything before the offsets target
// gives (see caughtUp), then stops it after its last batch committed. Up
// to rounds times, a round that took longer than followAfter is followed
// by another to the offsets target gives then: records kept arriving
// meanwhile, and each round shortens what the next has to read. Every
// round's goal is fixed when it starts, so each ends. The rebuild's fill
// and catch-up and the backfill all run through it, each with its own
// sink.
func (r *Rebuild) consumeUntil(ctx context.Context, p *projections.Projection, sink projections.Sink, target func(context.Context) (event.Offsets, error), rounds int, what string) error {
	goal, err := target(ctx)
	if err != nil {
		return err
	}
	roundStart := time.Now()
	pr, err := r.newProjector(p, sink)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pr.Run(pctx) }()
	stop := func() error { cancel(); return <-done }
	line := r.o.Progress
	for {
		select {
		case err := <-done:
			cancel()
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(r.poll):
		}
		stored, err := r.sink.ShardOffsets(ctx, p)
		if err != nil {
			_ = stop()
			return err
		}
		n, total, ok := CaughtUp(stored, pr.Applied(), goal)
		if ok && rounds > 1 && time.Since(roundStart) > r.followAfter {
			rounds--
			if goal, err = target(ctx); err != nil {
				_ = stop()
				return err
			}
			roundStart = time.Now()
			continue
		}
		if ok {
			if err := stop(); err != nil {
				return err
			}
			line.Count(what, total, total, "offsets", true)
			return nil
		}
		line.Count(what, n, total, "offsets", false)
	}
}

// fixed is a target that does not move.
func fixed(o event.Offsets) func(context.Context) (event.Offsets, error) {
	return func(context.Context) (event.Offsets, error) { return o, nil }
}

// liveTarget is the highest offset the live projector stored on any
// shard, per partition: what it may have applied to the table a swap
// moved away.
func liveTarget(shards []event.Offsets) event.Offsets {
	want := event.Offsets{}
	for _, g := range shards {
		for topic, parts := range g {
			for part, next := range parts {
				if cur, ok := want[topic][part]; !ok || next > cur {
					want.Set(topic, part, next)
				}
			}
		}
	}
	return want
}

// CaughtUp decides whether a fill (a rebuild's shadow, a reshard's fill
// projector) has applied everything before target on every partition, and how far it is (offsets summed over the
// partitions). A partition's position is the further of the offset the
// fill stored on every shard (the lowest of them: a shard without one
// is at 0) and where its running projector has applied through
// (applied). The stored offset alone never reaches an end offset whose
// last record is a commit marker; applied alone is unknown on a
// partition the projector found nothing new on.
func CaughtUp(stored []event.Offsets, applied, target event.Offsets) (done, total int64, ok bool) {
	ok = true
	for topic, parts := range target {
		for part, next := range parts {
			low := int64(0)
			for i, h := range stored {
				v := h[topic][part] // absent: 0
				if i == 0 || v < low {
					low = v
				}
			}
			pos := max(low, applied[topic][part])
			total += next
			done += min(pos, next)
			if pos < next {
				ok = false
			}
		}
	}
	return done, total, ok
}
