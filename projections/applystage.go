package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// commit applies a prepared batch with its offsets, its partition groups
// concurrently. Under on_error: dlq, records that cannot be mapped and rows
// the sink rejects go to the dead-letter topic (before the offsets that
// pass them are committed, so nothing is lost); under stop, the projector
// stops on them. When one group fails, the others may still commit: each
// carries only its own partitions' offsets, so consumption resumes
// exactly where each one stopped.
func (pr *Projector) commit(ctx context.Context, j *job) error {
	if len(j.bad) > 0 {
		for _, r := range j.bad {
			// Not bad data but a DDL: every later row lacks the column too.
			if err := pr.p.droppedColumn(r.Record.Topic, r.Reason); err != nil {
				return err
			}
		}
		if pr.dlq == nil {
			r := j.bad[0]
			return fmt.Errorf("projection %s: record %s/%d@%d: %w (set on_error: dlq to dead-letter such records and go on)", pr.p.Name, r.Record.Topic, r.Record.Partition, r.Record.Offset, r.Reason)
		}
		if err := pr.deadLetter(ctx, j.bad); err != nil {
			return err
		}
	}
	errs := make([]error, len(j.parts))
	if len(j.parts) == 1 {
		errs[0] = pr.apply(ctx, j.parts[0])
	} else {
		var wg sync.WaitGroup
		for i, b := range j.parts {
			wg.Go(func() { errs[i] = pr.apply(ctx, b) })
		}
		wg.Wait()
	}
	var writes, parents int
	for i, b := range j.parts {
		if errs[i] != nil {
			return errs[i]
		}
		pr.o.Metrics.applied(pr.p, b, time.Since(j.start))
		writes, parents = writes+len(b.Writes), parents+len(b.Parents)
	}
	for _, l := range j.lagAfter {
		pr.o.Metrics.consumerLag(pr.p, l.topic, l.part, l.lag)
	}
	pr.advance(j.lagAfter)
	if j.waiting {
		pr.o.Metrics.done(pr.p)
	}
	if len(j.parts) == 0 {
		return nil
	}
	pr.log.Debug("batch applied", "writes", writes, "parents", parents, "transactions", len(j.parts), "took", time.Since(j.start))
	return nil
}

// apply writes one partition group's batch with its offsets.
func (pr *Projector) apply(ctx context.Context, b *Batch) error {
	// Widening the read table comes first: a row it lets in is no row to
	// dead-letter.
	err := pr.applyFollowing(ctx, b)
	var stop *StopError
	if errors.As(err, &stop) {
		return err
	}
	if err != nil && pr.dlq != nil && pr.o.Rejected != nil && pr.o.Rejected(err) && ctx.Err() == nil {
		err = pr.isolate(ctx, b)
	}
	if err != nil {
		hint := ""
		if pr.dlq == nil && pr.o.Rejected != nil && pr.o.Rejected(err) {
			hint = " (the sink rejects a row: fix the read table or the data, or set on_error: dlq to dead-letter such rows and go on)"
		}
		return fmt.Errorf("projection %s: applying a batch of %d writes and %d parent changes: %w%s", pr.p.Name, len(b.Writes), len(b.Parents), err, hint)
	}
	return nil
}
