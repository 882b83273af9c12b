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

	"github.com/readside/readside/projections"
)

// inflight is a commit whose last packet is on its way; done reports its
// outcome once.
type inflight struct {
	done chan error
}

// commitLater commits c with f in the background; settle collects the
// outcome. The session has already moved to f: the next commit opens on
// it, and fails at its frontier check if this one does not commit.
func (s *applySession) commitLater(c projections.SinkCommit, f projections.Frontier, rows int, start time.Time) {
	a, prev := s.a, s.applied
	fl := &inflight{done: make(chan error, 1)}
	s.inflight = fl
	go func() {
		err := c.Commit(f)
		if err == nil {
			a.o.Metrics.committed(a.sink, f, prev, rows, time.Since(start))
			if prev.Checkpoint < 0 {
				a.log.Info("first consistent commit", "gtid", f.GTID, "rows", rows, "took", time.Since(start))
			}
		}
		fl.done <- err
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
	err := <-s.inflight.done
	s.inflight = nil
	if err != nil {
		return s.a.followSchema(ctx, err)
	}
	return nil
}
