package cdc

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
)

// publishedOffsets keeps Checkpoint.Published when a transactional sink
// needs it (docs/design/consistent-sinks.md, "The cut"): per table topic
// and partition, the offset after the last record the tailer published
// there, cumulative over every partition it ever wrote, so that any single
// checkpoint names a complete cut. The produce callbacks record the
// offsets of the open Kafka transaction (pending); a commit folds them
// into the cut it writes once the transaction's records are all
// acknowledged, and keeps that cut as the base of the next commit only
// once it committed. Records held while a commit runs are not produced
// until it is over (publisher.settle), so pending never holds a record of
// a later transaction than the one committing.
type publishedOffsets struct {
	mu      sync.Mutex
	tables  map[string]bool // the table topics: the only ones tracked
	upTo    event.Offsets   // through the last committed checkpoint
	pending event.Offsets   // acknowledged records of the open transaction
}

// acked records a record the broker acknowledged.
func (o *publishedOffsets) acked(r *kgo.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.tables[r.Topic] {
		return // the checkpoint or schema history topic
	}
	if cur, ok := o.pending[r.Topic][r.Partition]; !ok || r.Offset+1 > cur {
		o.pending.Set(r.Topic, r.Partition, r.Offset+1)
	}
}

// next is the cut through every record acknowledged so far: the last
// committed one with the open transaction's offsets on top. Called once
// the transaction is flushed, so nothing of it is missing.
func (o *publishedOffsets) next() event.Offsets {
	o.mu.Lock()
	defer o.mu.Unlock()
	next := cloneOffsets(o.upTo)
	for topic, parts := range o.pending {
		for part, off := range parts {
			if off > next[topic][part] {
				next.Set(topic, part, off)
			}
		}
	}
	return next
}

// committed makes cut, written in a checkpoint that committed, the base
// of the next commit.
func (o *publishedOffsets) committed(cut event.Offsets) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.upTo, o.pending = cut, event.Offsets{}
}

// dropPending forgets the records of an aborted transaction.
func (o *publishedOffsets) dropPending() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = event.Offsets{}
}

// reset starts over from a checkpoint's cut, tracking the given topics.
func (o *publishedOffsets) reset(from event.Offsets, tables []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tables = map[string]bool{}
	for _, t := range tables {
		o.tables[t] = true
	}
	o.upTo, o.pending = cloneOffsets(from), event.Offsets{}
}

func cloneOffsets(o event.Offsets) event.Offsets {
	out := make(event.Offsets, len(o))
	for topic, parts := range o {
		out[topic] = maps.Clone(parts)
	}
	return out
}

// trackPublished makes every commit's checkpoint carry Published.
func (p *publisher) trackPublished() { p.published = &publishedOffsets{} }

// startPublished seeds the cut from the checkpoint the stream resumes
// from (cp.Published). A partition of a table topic it does not name (the
// first start, a checkpoint of an older version or of a tailer without a
// transactional sink, a table added to source.tables, partitions added)
// starts at its end offset. Called after loadCheckpoint, whose
// InitProducerID fenced the previous producer and ended its open
// transaction, so nothing of ours can still commit below that end.
//
// Records past the resumed checkpoint's cut may be committed (a kill -9 of
// the embedded broker between the events' commit and the checkpoint's, or
// in the middle of its partition-by-partition commit): the stream
// publishes them again from the checkpoint's position, and they stay
// harmless because the first commit after the restart only comes once the
// stream has re-read every source transaction they belong to
// (orphanHorizon): its cut covers the orphans and their copies together,
// and the copies, with the same versions, are stale against the orphans.
func (p *publisher) startPublished(ctx context.Context, cp Checkpoint, tables []string, partitions map[string]int) error {
	if p.published == nil {
		return nil
	}
	p.published.reset(cp.Published, tables)
	var missing []string
	for _, t := range tables {
		if len(cp.Published[t]) < partitions[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	ends, err := p.adm.ListEndOffsets(ctx, missing...)
	if err != nil {
		return fmt.Errorf("listing end offsets of %v: %w", missing, err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("listing end offsets of %v: %w", missing, err)
	}
	base := cloneOffsets(cp.Published)
	ends.Each(func(e kadm.ListedOffset) {
		if _, ok := base[e.Topic][e.Partition]; !ok {
			base.Set(e.Topic, e.Partition, e.Offset)
		}
	})
	p.published.committed(base)
	return nil
}
