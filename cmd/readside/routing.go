package main

// A projection's projector follows its routing generation: when a reshard
// moves the projection to another sink, the projector's next transaction
// gets keyspace.RoutingChanged, and instead of stopping the projection the
// daemon resolves the sink that serves it now and runs a new projector
// there, resuming at that sink's offsets (docs/operations.md,
// "Resharding").

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/preflight"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// routingBackoff bounds the wait between two resolutions of a projection
// whose servers disagree on its generation (a cutover under way).
const (
	routingBackoffMin = 100 * time.Millisecond
	routingBackoffMax = 5 * time.Second
)

// follow runs pr (pp's projector on the sink at) and, each time it stops
// on a routing change, a new projector on the sink that serves pp now,
// which resumes at that sink's offsets. pr nil: resolve first. Any other
// error stops pp (the supervisor records it).
func (s *projectorStarter) follow(ctx context.Context, pp plannedProjection, at sinks.ResolvedSink, pr *projector.Projector) error {
	for {
		if pr == nil {
			next, err := s.resolveFollowing(ctx, pp)
			if err != nil {
				return err
			}
			if pr, _, err = s.projectorOn(ctx, pp, next); err != nil {
				return err
			}
			at = next
			s.log.Info(fmt.Sprintf("projection %s follows routing generation %d on sink %s", pp.p.Name, at.Generation, at.Name),
				"projection", pp.p.Name, "generation", at.Generation, "sink", at.Name)
		}
		s.routes.set(pp.p.Name, at)
		err := pr.Run(ctx)
		var changed *keyspace.RoutingChanged
		if ctx.Err() != nil || !errors.As(err, &changed) {
			return err
		}
		s.log.Info("the routing generation of a projection changed; resolving its sink", "projection", pp.p.Name, "sink", at.Name, "from", changed.Want, "to", changed.Have)
		pr = nil
	}
}

// resolveFollowing resolves pp's sink, retrying with backoff while its
// servers disagree on the generation (a cutover in progress finishes in a
// moment, an interrupted one when its reshard is run again) or a sink is
// out of reach; a routing the config cannot follow (keyspace.RoutingError)
// stops pp with its fix.
func (s *projectorStarter) resolveFollowing(ctx context.Context, pp plannedProjection) (sinks.ResolvedSink, error) {
	backoff := routingBackoffMin
	reread := false
	for {
		at, err := sinks.Resolve(ctx, s.sinkConfigs(), pp.p, s.open)
		if err == nil {
			return at, nil
		}
		if ctx.Err() != nil {
			return at, ctx.Err()
		}
		var bad *keyspace.RoutingError
		if errors.As(err, &bad) {
			if !reread && s.learnConfigSinks(pp.p.Name) {
				// The reshard's sink was added to the config file
				// after start-up, as docs/operations.md says to.
				reread = true
				continue
			}
			return at, &projections.StopError{Projection: pp.p.Name, Reason: err,
				Fix: "the reason says it; then send SIGHUP or restart readside to resume"}
		}
		s.log.Info("waiting for a projection's routing to settle", "projection", pp.p.Name, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return at, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, routingBackoffMax)
	}
}

// learnConfigSinks re-reads the config file for sinks added to it since
// start-up (a reshard's destination is added there beside the running
// daemon) and reports whether it found any.
func (s *projectorStarter) learnConfigSinks(projection string) bool {
	if s.configPath == "" {
		return false
	}
	next, err := config.Load(s.configPath, os.Environ())
	if err != nil {
		s.log.Warn("the routing of a projection names a sink the running config does not have, and the config file does not load", "projection", projection, "config", s.configPath, "err", err)
		return false
	}
	added := s.learnSinks(next.Sinks)
	if len(added) == 0 {
		return false
	}
	s.log.Info("took sinks added to the config file since start-up (a reshard moved a projection there)", "projection", projection, "sinks", added, "config", s.configPath)
	return true
}

// routes are the sink and generation each projection's projector applies
// through now (/status shows them).
type routes struct {
	mu sync.Mutex
	at map[string]sinks.ResolvedSink
}

func (r *routes) set(projection string, at sinks.ResolvedSink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]sinks.ResolvedSink{}
	}
	r.at[projection] = at
}

func (r *routes) get(projection string) (sinks.ResolvedSink, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[projection]
	return at, ok
}

// sinkOpener opens config sinks once each, for commands and reports that
// resolve several projections' sinks (sinks.Resolve).
type sinkOpener struct {
	cfg    config.Config
	mu     sync.Mutex
	opened map[string]*sinks.Sharded
}

func newSinkOpener(cfg config.Config) *sinkOpener {
	return &sinkOpener{cfg: cfg, opened: map[string]*sinks.Sharded{}}
}

func (o *sinkOpener) open(ctx context.Context, name string) (*sinks.Sharded, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := o.opened[name]; s != nil {
		return s, nil
	}
	s, err := sinks.OpenSharded(ctx, name, o.cfg.Sinks[name])
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	o.opened[name] = s
	return s, nil
}

// resolve is sinks.Resolve over the sinks o opened.
func (o *sinkOpener) resolve(ctx context.Context, p *projections.Projection) (sinks.ResolvedSink, error) {
	return sinks.Resolve(ctx, o.cfg.Sinks, p, o.open)
}

func (o *sinkOpener) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name, s := range o.opened {
		s.Close()
		delete(o.opened, name)
	}
}

// statusRoute is httpapi.Options.Route for cfg's projections ps: the
// sink and generation a projector of this process applies through (live),
// else the sink sinks.Resolve finds now.
func statusRoute(cfg config.Config, ps []*projections.Projection, live *routes) func(ctx context.Context, projection string) (httpapi.Route, error) {
	byName := map[string]*projections.Projection{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	opener := newSinkOpener(cfg)
	return func(ctx context.Context, projection string) (httpapi.Route, error) {
		at, ok := sinks.ResolvedSink{}, false
		if live != nil {
			at, ok = live.get(projection)
		}
		if !ok {
			p := byName[projection]
			if p == nil {
				return httpapi.Route{}, fmt.Errorf("no projection %s in the config", projection)
			}
			var err error
			if at, err = opener.resolve(ctx, p); err != nil {
				return httpapi.Route{}, err
			}
		}
		return httpapi.Route{Sink: at.Name, Generation: at.Generation, Servers: sinkServers(at.Name, at.Config)}, nil
	}
}

// sinkServers are the servers of config sink name, as the report names
// them: the sink, or "<sink>/<keyrange>" per shard.
func sinkServers(name string, s config.Sink) []httpapi.SinkDSN {
	var out []httpapi.SinkDSN
	if s.DSN != "" {
		out = append(out, httpapi.SinkDSN{Name: name, DSN: s.DSN.Reveal()})
	}
	for _, sh := range s.Shards {
		out = append(out, httpapi.SinkDSN{Name: name + "/" + sh.KeyRange, DSN: sh.DSN.Reveal()})
	}
	return out
}

// routingFinding is readside check's finding for a projection whose sink
// cannot be resolved because of its routing; false for a sink out of
// reach, which preflight reports already.
func routingFinding(projection string, err error) (preflight.Finding, bool) {
	var unsettled *keyspace.RoutingUnsettled
	if errors.As(err, &unsettled) {
		return preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "warning", What: err.Error(),
			Fix: "wait for the reshard of " + projection + " to finish, or run it again"}}, true
	}
	var bad *keyspace.RoutingError
	if errors.As(err, &bad) {
		return preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "error", What: err.Error(),
			Fix: "the reason says it; `SELECT * FROM _readside_routing` on the sink's servers shows what the reshard recorded"}}, true
	}
	return preflight.Finding{}, false
}
