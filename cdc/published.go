package cdc

import (
	"context"
	"errors"
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
// It returns the orphan horizon: the highest version of a committed table
// record past cp's cut, 0 when there is none. Such records exist only
// with the checkpoint committed alone (the embedded broker): a kill -9
// between the events' commit and the checkpoint's, or in the middle of
// the events' partition-by-partition commit. On Kafka a record past the
// cut belongs to a transaction that never committed, which no
// read-committed reader sees. The stream publishes the orphans' source
// transactions again from cp's position, with the same versions, and does
// not commit before its clock has passed the horizon (stream.behind), so
// the first cut past an orphan also holds the copies of every source
// transaction with an orphan: a reader applies them together, the copies
// stale against the orphans (version guard), and never sees part of one.
// Without that wait, a first commit holding fewer source transactions
// than the lost one would put the orphans of the rest, which may be only
// some of their records, below its cut.
func (p *publisher) startPublished(ctx context.Context, cp Checkpoint, tables []string, partitions map[string]int) (horizon uint64, err error) {
	if p.published == nil {
		return 0, nil
	}
	p.published.reset(cp.Published, tables)
	base := cloneOffsets(cp.Published)
	var missing, named []string
	for _, t := range tables {
		if len(cp.Published[t]) < partitions[t] {
			missing = append(missing, t)
		}
		if len(cp.Published[t]) > 0 {
			named = append(named, t)
		}
	}
	if len(missing) > 0 {
		ends, err := p.adm.ListEndOffsets(ctx, missing...)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return 0, fmt.Errorf("listing end offsets of %v: %w", missing, err)
		}
		ends.Each(func(e kadm.ListedOffset) {
			if _, ok := base[e.Topic][e.Partition]; !ok {
				base.Set(e.Topic, e.Partition, e.Offset)
			}
		})
	}
	if p.separateCheckpoint && len(named) > 0 {
		if horizon, err = p.orphansPast(ctx, cp.Published, named); err != nil {
			return 0, err
		}
	}
	p.published.committed(base)
	return horizon, nil
}

// orphansPast is the highest version of a committed record past cut in
// the partitions of topics; 0 when there is none. It reads up to the last
// stable offsets: what a read-committed reader can see.
func (p *publisher) orphansPast(ctx context.Context, cut event.Offsets, topics []string) (uint64, error) {
	ends, err := p.adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("listing the last stable offsets of %v: %w", topics, err)
	}
	var horizon uint64
	var errs []error
	ends.Each(func(e kadm.ListedOffset) {
		if from, ok := cut[e.Topic][e.Partition]; ok && e.Offset > from {
			h, err := p.orphanHorizon(ctx, e.Topic, e.Partition, from, e.Offset)
			errs = append(errs, err)
			horizon = max(horizon, h)
		}
	})
	return horizon, errors.Join(errs...)
}

// orphanHorizon is the highest version of a committed record of
// topic/part from offset from to end.
func (p *publisher) orphanHorizon(ctx context.Context, topic string, part int32, from, end int64) (uint64, error) {
	var horizon uint64
	var errs []error
	err := scanCommitted(ctx, p.adm, p.brokers, topic, part, from, end, func(r *kgo.Record) {
		if r.Value == nil || r.Offset >= end {
			return // a tombstone follows its delete
		}
		e, err := event.DecodeEvent(r.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("record %s/%d@%d: %w", topic, part, r.Offset, err))
			return
		}
		horizon = max(horizon, e.Version)
	})
	if err != nil {
		return 0, fmt.Errorf("reading the records past the checkpoint's cut: %w", err)
	}
	return horizon, errors.Join(errs...)
}
