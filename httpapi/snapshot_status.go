package httpapi

import (
	"context"
	"io"
	"time"

	"github.com/readside/readside/cdc"
)

// SnapshotLog is the source's record of failed snapshot requests
// (cdc.SnapshotLog): a failed request is skipped by the tailer, so the
// report is where an operator sees it with its fix.
type SnapshotLog interface {
	Failures(ctx context.Context) ([]cdc.SnapshotFailure, error)
}

// snapshotFailures adds the recent failed snapshot requests to s. They
// leave health and readiness alone: the tailer streams on without them.
func (c *Collector) snapshotFailures(ctx context.Context, s *SourceStatus) {
	if c.opts.SnapshotLog == nil {
		return
	}
	// Bounded: an unreachable source must not hold up the whole report.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	failures, err := c.opts.SnapshotLog.Failures(ctx)
	if err != nil {
		s.SnapshotFailuresError = err.Error()
		return
	}
	s.SnapshotFailures = failures
}

// closeSnapshotLog releases the log's connection, if it holds one.
func (c *Collector) closeSnapshotLog() {
	if cl, ok := c.opts.SnapshotLog.(io.Closer); ok {
		_ = cl.Close()
	}
}
