package main

// Projectors run under a supervisor, apart from the errgroup that owns the
// process: one projection that cannot go on (a dropped column, a row the
// sink rejects under on_error: stop) stops alone, is recorded for
// /healthz, /status and readside_projection_stopped, and the tailer and
// every other projection keep applying. SIGHUP restarts the stopped ones
// (reload.go). What every component depends on stays in the errgroup and
// stays fatal: the tailer, the HTTP endpoint, a config error at start-up.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/readside/readside/event"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// supervisor runs projectors and keeps what stopped them.
type supervisor struct {
	health  *httpapi.Health
	metrics *projector.Metrics
	log     *slog.Logger
	wg      sync.WaitGroup

	mu      sync.Mutex
	stopped map[string]error
	drain   []error // errors of projectors that returned after a clean stop
	// draining: wait has begun; nothing starts any more.
	draining bool
}

func newSupervisor(h *httpapi.Health, m *projector.Metrics, log *slog.Logger) *supervisor {
	return &supervisor{health: h, metrics: m, log: log, stopped: map[string]error{}}
}

// run starts a projection's projector. run returns nil when ctx is
// cancelled (a clean stop); any other return stops that projection alone.
func (s *supervisor) run(ctx context.Context, name string, run func(context.Context) error) {
	s.mu.Lock()
	if s.draining {
		// A SIGHUP racing the stop: the drain has begun, start nothing.
		s.mu.Unlock()
		return
	}
	delete(s.stopped, name)
	// Added under mu, so never after wait began waiting.
	s.wg.Add(1)
	s.mu.Unlock()
	s.health.Resume(httpapi.ProjectorPrefix + name)
	s.metrics.Started(name)
	go func() {
		defer s.wg.Done()
		err := run(ctx)
		if ctx.Err() != nil {
			// A clean stop (or the process stopping on a fatal error).
			s.health.Finished(httpapi.ProjectorPrefix + name)
			if err != nil {
				s.mu.Lock()
				s.drain = append(s.drain, fmt.Errorf("projector %s: %w", name, err))
				s.mu.Unlock()
			}
			return
		}
		if err == nil {
			err = errors.New("the projector returned without an error while readside runs")
		}
		s.halt(name, err)
	}()
}

// halt records name stopped on err; the rest runs on.
func (s *supervisor) halt(name string, err error) {
	fix := stopFix(name, err)
	s.mu.Lock()
	s.stopped[name] = err
	s.mu.Unlock()
	s.health.Halt(httpapi.ProjectorPrefix+name, err, fix, time.Now().UTC())
	s.metrics.Stopped(name)
	s.log.Error("projection stopped; the tailer and the other projections keep running", "projection", name, "err", err, "fix", fix)
}

// stopFix is the fix shown for a projection stopped on err: the one err
// carries (projections.StopError), else one for a row the sink rejects,
// else the generic one.
func stopFix(name string, err error) string {
	fallback := ""
	if sinks.Rejected(err) {
		fallback = fmt.Sprintf("the sink rejects a row (see the reason): fix the read table (readside plan) or the source row, or set projections.%s.on_error: dlq to dead-letter such rows; then send SIGHUP or restart readside to resume", name)
	}
	return projections.FixOf(err, fallback)
}

// stoppedNames lists the projections stopped on an error.
func (s *supervisor) stoppedNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.stopped))
	for name := range s.stopped {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// wait blocks until ctx ends, then until every projector drained: run it
// in the process's errgroup so a clean stop waits for the projectors. It
// returns the errors projectors stopped with while draining.
func (s *supervisor) wait(ctx context.Context) error {
	<-ctx.Done()
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.drain...)
}

// deadLettering reports the projections this process runs whose every
// record goes to the dead-letter topic: their projector runs, yet their
// read table no longer follows the source.
func deadLettering(opts httpapi.Options, m *projector.Metrics, topicPrefix string) func() []httpapi.Degradation {
	return func() []httpapi.Degradation {
		var out []httpapi.Degradation
		for _, p := range opts.Projections {
			if !p.Here {
				continue
			}
			dl := m.DeadLetters(p.Name)
			if !dl.All {
				continue
			}
			out = append(out, httpapi.Degradation{Projection: p.Name, State: "dead-lettering",
				Reason: fmt.Sprintf("the last %d records all went to the dead-letter topic, with no row applied (%d dead-lettered, %d applied in the last minute)", dl.Streak, dl.LastMinute, dl.AppliedLastMinute),
				Fix:    fmt.Sprintf("read the reason in the readside.error header of the records in the dead-letter topic %s and fix it (the read table: readside plan; or projections.%s.columns); then replay the projection (readside replay) to apply the dead-lettered rows", event.DLQTopic(topicPrefix, p.Name), p.Name)})
		}
		return out
	}
}

// unfitSource is the stop of a projection whose declaration does not fit
// the live source schema (a column dropped or renamed at the source).
func unfitSource(name string, err error) error {
	return &projections.StopError{Projection: name, Reason: err,
		Fix: fmt.Sprintf("edit projections.%s to fit the source (the reason names the key; readside check lists every problem) and run readside plan --apply, or restore the source column; then send SIGHUP", name)}
}

// unfitConsistentSink is the stop of a transaction-consistent sink one of
// whose projections does not fit the source: its projections commit
// together, so none is applied until that one can be.
func unfitConsistentSink(sink, projection string, err error) error {
	return &projections.StopError{Projection: applierName(sink),
		Reason: fmt.Errorf("projection %s of sink %s (consistency: transaction) does not fit the source, and the sink's projections are applied together or not at all: %w", projection, sink, err),
		Fix:    fmt.Sprintf("edit projections.%s to fit the source (the reason names the key; readside check lists every problem) and run readside plan --apply, or restore the source column; then send SIGHUP: the sink resumes with all its projections", projection)}
}

// refuseDropped stops what runs projection p under name (the projection,
// or its consistent sink's applier) when p's read table is gone from a
// shard that holds what p applied (sinks.DroppedReadTable): creating the
// table again would hide the rows applied before.
func refuseDropped(ctx context.Context, sink *sinks.Sharded, p *projections.Projection, name string, consistent bool) error {
	d, err := sink.DroppedReadTable(ctx, p, consistent)
	if err != nil {
		return &projections.StopError{Projection: name, Reason: fmt.Errorf("checking the read table of %s on sink %s: %w", p.Name, sink.Name, err),
			Fix: "check that the sink answers; then send SIGHUP"}
	}
	if d != nil {
		return &projections.StopError{Projection: name, Reason: d, Fix: d.Fix()}
	}
	return nil
}

// unfitReadTable is the stop of a projection whose read table cannot be
// created or does not fit the plan.
func unfitReadTable(name string, err error) error {
	return &projections.StopError{Projection: name, Reason: err,
		Fix: fmt.Sprintf("bring the read table to the plan (readside check names the difference; readside plan --apply runs the safe ALTERs, else readside replay --projection %s --rebuild, or on a sink with consistency: transaction the rebuild of the sink); then send SIGHUP", name)}
}
