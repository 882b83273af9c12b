package httpapi

import (
	"context"
	"io"
	"strings"
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

// initialLoadReady holds readiness back while the first start's initial
// load runs: the read tables do not hold the source's rows yet. A load of
// tables added to source.tables later does not: every replica loads the
// same tables, so unready would take them all out of service for tables
// that no reader relied on yet (their progress is in the report).
func initialLoadReady(s *cdc.InitialSnapshot, notReady func(string, ...any)) {
	if s == nil || s.Complete || !s.First {
		return
	}
	notReady("initial snapshot running: %d of %d tables loaded, %d rows so far (loading: %s)", s.TablesDone, s.TableCount, s.Rows, strings.Join(s.Loading(), ", "))
}
