package projector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/readside/readside/projections"
)

// applyStage commits jobs to the sink one after another, in the order
// the poll stage hands them over, so that the next job is polled and
// mapped while one is applied. It owns the job in flight: the poll stage
// hands one over (submit) only once it has taken the result of the one
// before (wait).
type applyStage struct {
	pr   *Projector
	jobs chan *job
	// done carries each job's result; one job is in flight at a time, so
	// its one slot never blocks the stage.
	done chan error
	// busy: a job was handed over and its result not taken yet. Only the
	// poll stage's goroutine reads and writes it.
	busy bool
}

func newApplyStage(pr *Projector) *applyStage {
	return &applyStage{pr: pr, jobs: make(chan *job), done: make(chan error, 1)}
}

// run applies each job handed over until the poll stage closes jobs, or
// until a job fails. ctx is not the membership's: a stop lets the job in
// flight finish (afterGrace), and the poll stage closes jobs when it stops.
func (a *applyStage) run(ctx context.Context) error {
	for j := range a.jobs {
		err := a.pr.commit(ctx, j)
		a.done <- err
		if err != nil {
			return err
		}
	}
	return nil
}

// submit hands j to the apply stage, which is idle: the poll stage waited
// for the job before.
func (a *applyStage) submit(ctx context.Context, j *job) error {
	select {
	case a.jobs <- j:
		a.busy = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait takes the result of the job in flight (nil when there is none).
func (a *applyStage) wait() error {
	if !a.busy {
		return nil
	}
	a.busy = false
	return <-a.done
}

// stop ends the stage once the job in flight is applied.
func (a *applyStage) stop() { close(a.jobs) }

// commit applies a prepared batch with its offsets, its partition groups
// concurrently. Under on_error: dlq, records that cannot be mapped and rows
// the sink rejects go to the dead-letter topic (before the offsets that
// pass them are committed, so nothing is lost); under stop, the projector
// stops on them. When one group fails, the others may still commit: each
// carries only its own partitions' offsets, so consumption resumes
// exactly where each one stopped.
func (pr *Projector) commit(ctx context.Context, j *job) error {
	if err := pr.unmapped(ctx, j.bad); err != nil {
		return err
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
func (pr *Projector) apply(ctx context.Context, b *projections.Batch) error {
	// Widening the read table comes first: a row it lets in is no row to
	// dead-letter.
	err := pr.applyFollowing(ctx, b)
	var stop *projections.StopError
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
		return fmt.Errorf("projection %s: applying a batch of %s: %w%s", pr.p.Name, b.Describe(), err, hint)
	}
	return nil
}
