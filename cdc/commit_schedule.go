package cdc

import (
	"context"
	"slices"
	"time"
)

func (s *stream) maybeCommit(ctx context.Context, deadline bool) error {
	if s.pendingTxns == 0 || s.txnBegun || s.txnGTID != "" {
		return nil
	}
	full := s.pub.records >= s.t.cfg.Kafka.CommitEvery
	if !full && !deadline && !s.commitWanted && time.Since(s.batchStart()) < s.t.cfg.Kafka.CommitInterval {
		return nil
	}
	if c := s.pub.inflight; c != nil && !full && !c.finished() {
		// Due by time, not by size: read on and commit when the running
		// commit is done (run wakes on it). A full commit still waits for
		// it here, which bounds what a backlog holds.
		s.commitWanted = true
		return nil
	}
	return s.commit(ctx)
}

// batchStart is when the work of the next Kafka commit began: its first
// produced record, or its first complete source transaction when nothing
// was produced (transactions on tables readside does not capture still
// move the checkpoint).
func (s *stream) batchStart() time.Time {
	if s.pub.records > 0 && s.pub.txnStart.Before(s.pendingSince) {
		return s.pub.txnStart
	}
	return s.pendingSince
}

// commit commits what is complete in the background (the stream reads on
// meanwhile; publisher.commitAsync).
func (s *stream) commit(ctx context.Context) error {
	cp := s.checkpoint()
	needsFrom := s.pendingTS
	err := s.pub.commitAsync(ctx, cp, func(took time.Duration) {
		s.t.metrics.commitLatency.Observe(took.Seconds())
		s.t.committed(cp)
		s.t.markPublished(needsFrom)
		if needsFrom > s.t.needsFrom.Load() {
			s.t.needsFrom.Store(needsFrom)
		}
	})
	if err != nil {
		return err
	}
	s.cp = cp
	s.pendingTxns = 0
	s.commitWanted = false
	return nil
}

// commitNow commits what is complete and waits for it.
func (s *stream) commitNow(ctx context.Context) error {
	if err := s.commit(ctx); err != nil {
		return err
	}
	return s.pub.settle(ctx)
}

// checkpoint is the position after the last complete source transaction.
func (s *stream) checkpoint() Checkpoint {
	pos := s.pendingPos
	pos.Flavor = s.src.flavor
	if s.gtids != nil {
		pos.GTID = s.gtids.String()
	}
	return Checkpoint{Position: pos, LastVersion: s.clock.Last(), WrittenAt: s.t.now().UTC(), Snapshots: slices.Clone(s.snapshots), Tables: slices.Clone(s.covered), LastRequest: s.lastRequest, SchemaHistory: s.schema != nil,
		ServerID: s.src.serverID, ServerUUID: s.src.serverUUID}
}
