package projector

// A consistent commit's COMMIT in flight: the applier sends commit N's
// last statements (its writes, the frontier and the COMMIT, one packet)
// and, while the sink runs them, reads, maps and sends commit N+1 on a
// connection of its own. Nothing of N+1 runs on the sink before N is
// over: N+1 opens with the lock of the frontier row, which N holds until
// its COMMIT, and with the check that the frontier is at N's cut — so
// N+1 can only ever commit on top of N, in order, and a reader still sees
// only prefixes of the source. What the overlap takes off one connection's
// critical path is the applier's own time between commits: choosing the
// cut, polling, mapping and building the statements of N+1.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/projections"
)

// inflight is a commit whose last packet is on its way; err is its
// outcome once finished is closed.
type inflight struct {
	finished chan struct{}
	err      error
}

// commitLater commits c with f in the background; settle collects the
// outcome. The session has already moved to f: the next commit opens on
// it, and fails at its frontier check if this one does not commit.
func (s *applySession) commitLater(c projections.SinkCommit, f projections.Frontier, rows int, start time.Time) {
	a, prev := s.a, s.applied
	fl := &inflight{finished: make(chan struct{})}
	s.inflight = fl
	go func() {
		err := c.Commit(f)
		if err == nil {
			a.o.Metrics.committed(a.sink, f, prev, rows, time.Since(start))
			if prev.Checkpoint < 0 {
				a.log.Info("first consistent commit", "gtid", f.GTID, "rows", rows, "took", time.Since(start))
			}
		}
		fl.err = err
		close(fl.finished)
	}()
}

// settle waits for the commit in flight, if any, and returns its error as
// a failed commit's (followSchema). A failed commit is the cause of
// whatever the one after it saw: its frontier check fails, or its locks
// waited on a rollback.
func (s *applySession) settle(ctx context.Context) error {
	if s.inflight == nil {
		return nil
	}
	<-s.inflight.finished
	err := s.inflight.err
	s.inflight = nil
	if err != nil {
		return s.a.followSchema(ctx, err)
	}
	return nil
}

// over reports a commit in flight that is over (settle returns at once).
func (s *applySession) over() bool {
	if s.inflight == nil {
		return false
	}
	select {
	case <-s.inflight.finished:
		return true
	default:
		return false
	}
}

// pollCuts waits for checkpoints, or until the commit in flight is over
// (then it returns what arrived, maybe nothing): the wait for the next
// cut overlaps that commit, and its outcome is not left unseen while the
// source is idle.
func (s *applySession) pollCuts(ctx context.Context, cuts *kgo.Client) kgo.Fetches {
	fl := s.inflight
	if fl == nil {
		return cuts.PollFetches(ctx)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-fl.finished:
			cancel()
		case <-wctx.Done():
		}
	}()
	return cuts.PollFetches(wctx)
}
