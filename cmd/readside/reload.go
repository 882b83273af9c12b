package main

// SIGHUP: `readside run` re-reads its config and applies what can change
// without a restart — the log level, and new projections (their read
// tables are created and their projectors started) — and logs every other
// change as "restart to apply". docs/operations.md, "Reloading: SIGHUP".

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/config"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// logLevel is the level of every logger newLogger makes: SIGHUP changes
// it in place.
var logLevel = new(slog.LevelVar)

// projectorStarter opens sinks, creates read tables and starts projectors
// under the supervisor; start-up and SIGHUP use it alike.
type projectorStarter struct {
	cfg config.Config // with the brokers in use; its Sinks only as started (sinkConfigs has the sinks known now)
	// configPath is the config file, re-read for a sink a reshard moved
	// a projection to after start-up ("" in tests that have none).
	configPath string
	sup        *supervisor
	gctx       context.Context
	ops        *ops
	log        *slog.Logger
	metrics    *projector.Metrics
	reg        prometheus.Registerer
	// consistentMetrics: the appliers' (made with the first of them).
	consistentMetrics *projector.ConsistentMetrics

	mu     sync.Mutex
	opened map[string]*sinks.Sharded
	// sinks are the sink configs by name: the config's at start-up and
	// the ones added to it since (learnSinks). Replaced, never changed in
	// place, so a caller may keep reading the map it got.
	sinks map[string]config.Sink
	// routes: the sink each projector applies through (routing.go).
	routes routes
}

func newProjectorStarter(cfg config.Config, g *errgroup.Group, gctx context.Context, o *ops, log *slog.Logger, reg prometheus.Registerer) *projectorStarter {
	m := projector.NewMetrics(reg)
	if o.tailer != nil {
		// A projection is as far behind as what has not reached its topics.
		m.SetUpstreamLag(o.tailer.LagSeconds)
	}
	o.projMetrics = m
	sup := newSupervisor(o.health, m, log)
	// A clean stop waits for every projector to drain.
	g.Go(func() error { return sup.wait(gctx) })
	s := &projectorStarter{cfg: cfg, sup: sup, gctx: gctx, ops: o, log: log, metrics: m, reg: reg, opened: map[string]*sinks.Sharded{}, sinks: cfg.Sinks}
	o.routes = &s.routes
	return s
}

// start resolves the sink that serves pp now (sinks.Resolve: a reshard
// the config does not name yet is followed), creates pp's read table
// there and starts its projector, which follows the routing generation
// from then on (routing.go). The error says which step failed; exitCode
// is what `run` exits with for it at start-up.
func (s *projectorStarter) start(ctx context.Context, pp plannedProjection) (exitCode int, err error) {
	if s.sinkConfigs()[pp.p.Sink].Consistency.Transactional() {
		// One applier commits all of the sink's projections together.
		return exitProblem, fmt.Errorf("projection %s is on sink %s (consistency: transaction), whose applier started with the projections it had: restart to apply", pp.p.Name, pp.p.Sink)
	}
	at, err := sinks.Resolve(ctx, s.sinkConfigs(), pp.p, s.open)
	if errors.As(err, new(*keyspace.RoutingUnsettled)) {
		// A reshard's cutover under way: the projection waits for it
		// under the supervisor, beside the others.
		s.log.Info("the routing of a projection is unsettled; it starts once it settles", "projection", pp.p.Name, "err", err)
		s.sup.run(s.gctx, pp.p.Name, func(ctx context.Context) error { return s.follow(ctx, pp, at, nil) })
		return exitOK, nil
	}
	if err != nil {
		return exitProblem, fmt.Errorf("resolving the sink of %s: %w", pp.p.Name, err)
	}
	pr, code, err := s.projectorOn(ctx, pp, at)
	if err != nil {
		return code, err
	}
	s.sup.run(s.gctx, pp.p.Name, func(ctx context.Context) error { return s.follow(ctx, pp, at, pr) })
	return exitOK, nil
}

// projectorOn creates pp's read table on the sink at and makes its
// projector, checking at's routing generation in every transaction.
func (s *projectorStarter) projectorOn(ctx context.Context, pp plannedProjection, at sinks.ResolvedSink) (*projector.Projector, int, error) {
	// A read table that cannot be made to fit stops its projection alone
	// (unfitReadTable); the caller decides.
	if err := refuseDropped(ctx, at.Sink, pp.p, pp.p.Name, false); err != nil {
		return nil, exitProblem, err
	}
	if err := at.Sink.Exec(ctx, pp.ddl); err != nil {
		return nil, exitProblem, unfitReadTable(pp.p.Name, fmt.Errorf("creating the read table of %s on sink %s: %w", pp.p.Name, at.Name, err))
	}
	if err := at.Sink.CheckReadTable(ctx, pp.p); err != nil {
		return nil, exitProblem, unfitReadTable(pp.p.Name, err)
	}
	instance := s.cfg.Kafka.GroupInstanceID
	if instance == "" {
		instance, _ = os.Hostname()
	}
	pr, err := projector.New(pp.p, at.Sink.Routed(at.Generation), projector.Options{Brokers: s.cfg.Kafka.Brokers, InstanceID: instance,
		MaxMessageBytes: s.cfg.Kafka.MaxMessageBytes, Metrics: s.metrics, Rejected: sinks.Rejected, Log: s.log})
	if err != nil {
		return nil, exitUsage, err
	}
	return pr, exitOK, nil
}

// open opens a config sink once; projections on it share it.
func (s *projectorStarter) open(ctx context.Context, name string) (*sinks.Sharded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sink := s.opened[name]; sink != nil {
		return sink, nil
	}
	sink, err := sinks.OpenSharded(ctx, name, s.sinks[name])
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	for _, sh := range sink.Shards {
		sh.Log = s.log.With("component", "sink", "sink", name, "shard", sh.Range.Text)
	}
	s.opened[name] = sink
	return sink, nil
}

// sinkConfigs are the sinks s knows now, by name (read only).
func (s *projectorStarter) sinkConfigs() map[string]config.Sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sinks
}

// learnSinks adds the sinks of next that s does not know yet and returns
// their names. A sink s knows keeps its config: its connections are open
// and projectors write through them, so changing it takes a restart.
func (s *projectorStarter) learnSinks(next map[string]config.Sink) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	added := newSinks(s.sinks, next)
	if len(added) == 0 {
		return nil
	}
	known := maps.Clone(s.sinks)
	for _, name := range added {
		known[name] = next[name]
	}
	s.sinks = known
	return added
}

// close closes the sinks after every projector stopped.
func (s *projectorStarter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sink := range s.opened {
		sink.Close()
	}
}

// reloader answers SIGHUP.
type reloader struct {
	path    string
	role    string
	current config.Config // as loaded (before the embedded broker's address is filled in)
	starter *projectorStarter
	log     *slog.Logger
	// reloaded is signalled after each reload (tests in this package).
	reloaded chan struct{}
}

// holdReloads catches SIGHUP from the start of `readside run`: its default
// action ends the process, and start-up can wait minutes for a server. A
// SIGHUP that arrives before the daemon runs is held and applied once
// watchReload starts. The caller stops it (signal.Stop) when it returns.
func holdReloads() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}

// watchReload handles the SIGHUPs holdReloads catches until ctx ends.
func watchReload(ctx context.Context, hup <-chan os.Signal, r *reloader) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.reload(ctx)
				if r.reloaded != nil {
					r.reloaded <- struct{}{}
				}
			}
		}
	}()
}

func (r *reloader) reload(ctx context.Context) {
	r.log.Info("SIGHUP: reloading the config", "config", r.path)
	next, err := config.Load(r.path, os.Environ())
	if err != nil {
		r.log.Error("SIGHUP: the config does not load; keeping the running one", "err", err)
		return
	}
	cur := r.current
	var restart []string
	if next.Log.Level != cur.Log.Level {
		logLevel.Set(next.Log.Level.Slog())
		r.log.Info("SIGHUP: reloaded log.level", "from", cur.Log.Level, "to", next.Log.Level)
	}
	if next.Log.Format != cur.Log.Format {
		restart = append(restart, "log.format")
	}
	for key, changed := range map[string]bool{
		"source":           !reflect.DeepEqual(next.Source, cur.Source),
		"kafka":            !reflect.DeepEqual(next.Kafka, cur.Kafka),
		"sinks":            sinksChanged(cur.Sinks, next.Sinks),
		"data_dir":         next.DataDir != cur.DataDir,
		"http":             !reflect.DeepEqual(next.HTTP, cur.HTTP),
		"shutdown_timeout": next.ShutdownTimeout != cur.ShutdownTimeout,
		"verify":           !reflect.DeepEqual(next.Verify, cur.Verify),
	} {
		if changed {
			restart = append(restart, key)
		}
	}
	stopped := map[string]bool{}
	if r.starter != nil {
		for _, name := range r.starter.sup.stoppedNames() {
			stopped[name] = true
		}
	}
	var added, resumed []string
	for name, d := range next.Projections {
		old, ok := cur.Projections[name]
		switch {
		case !ok:
			added = append(added, name)
		case stopped[applierName(d.Sink)] && next.Sinks[d.Sink].Consistency.Transactional():
			// resumeApplier restarts it with its sink, as declared now.
		case stopped[name]:
			// A stopped projection restarts with its declaration as it
			// is now: the edit may be its fix.
			resumed = append(resumed, name)
		case !reflect.DeepEqual(old, d):
			restart = append(restart, "projections."+name)
		}
	}
	for name := range cur.Projections {
		if _, ok := next.Projections[name]; !ok {
			restart = append(restart, "projections."+name+" (removed)")
		}
	}
	sort.Strings(added)
	sort.Strings(resumed)
	sort.Strings(restart)
	// What is applied becomes the running config; the rest stays as it was.
	applied := cur
	applied.Log.Level = next.Log.Level
	if added := newSinks(cur.Sinks, next.Sinks); len(added) > 0 {
		// A new sink is only a name to open when something needs it (a
		// reshard's destination, a new projection's sink).
		applied.Sinks = maps.Clone(cur.Sinks)
		for _, name := range added {
			applied.Sinks[name] = next.Sinks[name]
		}
		if r.starter != nil {
			r.starter.learnSinks(next.Sinks)
		}
		r.log.Info("SIGHUP: took new sinks", "sinks", added)
		// New projections below may be on them.
		r.current.Sinks = applied.Sinks
	}
	if len(added)+len(resumed) > 0 {
		var started []string
		if len(added) > 0 {
			var err error
			if started, err = r.addProjections(ctx, next, added); err != nil {
				r.log.Error("SIGHUP: new projections not started; fix and send SIGHUP again", "projections", added, "err", err)
			}
		}
		started = append(started, r.resume(ctx, next, resumed)...)
		applied.Projections = map[string]config.Projection{}
		for name, d := range cur.Projections {
			applied.Projections[name] = d
		}
		for _, name := range started {
			applied.Projections[name] = next.Projections[name]
		}
	}
	for _, name := range slices.Sorted(maps.Keys(stopped)) {
		if sink, ok := strings.CutPrefix(name, applierName("")); ok {
			r.resumeApplier(ctx, next, sink, &applied)
		}
	}
	r.current = applied
	if len(restart) > 0 {
		r.log.Warn("SIGHUP: not reloaded, restart to apply", "changed", restart)
	}
	r.log.Info("SIGHUP: reload done")
}

// sinksChanged reports whether a sink of cur is changed or gone in next
// (sinks only added are taken without a restart).
func sinksChanged(cur, next map[string]config.Sink) bool {
	for name, sc := range cur {
		if nc, ok := next[name]; !ok || !reflect.DeepEqual(sc, nc) {
			return true
		}
	}
	return false
}

// newSinks are the names of next's sinks cur does not have, sorted.
func newSinks(cur, next map[string]config.Sink) []string {
	var added []string
	for name := range next {
		if _, ok := cur[name]; !ok {
			added = append(added, name)
		}
	}
	sort.Strings(added)
	return added
}

// addProjections plans the new projections against next (their source,
// sink and topics are those of the running pipeline) and starts them.
func (r *reloader) addProjections(ctx context.Context, next config.Config, added []string) ([]string, error) {
	if r.role == "tailer" {
		return nil, errors.New("this process runs --role tailer: start the projections in the projector processes (SIGHUP them)")
	}
	// Only the new declarations are planned: the running ones keep theirs.
	var started []string
	for _, name := range added {
		tables, err := r.startProjections(ctx, next, []string{name})
		if err != nil {
			return started, err
		}
		started = append(started, name)
		r.log.Info("SIGHUP: started the projector of a new projection", "projection", name, "table", strings.Join(tables, ", "))
	}
	return started, nil
}

// startProjections plans names against next (their source, sink and
// topics are those of the running pipeline) and starts their projectors;
// it returns their read tables.
func (r *reloader) startProjections(ctx context.Context, next config.Config, names []string) ([]string, error) {
	plan := r.current
	plan.Projections = map[string]config.Projection{}
	for _, name := range names {
		d := next.Projections[name]
		if !contains(r.current.Source.Tables, d.From) {
			return nil, fmt.Errorf("projections.%s.from %s is not captured by the running tailer (source.tables): restart to apply", name, d.From)
		}
		plan.Projections[name] = d
	}
	planned, failed, err := planEach(ctx, plan)
	if err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return nil, unfitSource(failed[0].name, failed[0].err)
	}
	var tables []string
	for _, pp := range planned {
		if _, err := r.starter.start(ctx, pp); err != nil {
			return tables, err
		}
		tables = append(tables, pp.p.Table)
	}
	return tables, nil
}

// resume restarts stopped projections with their declarations in next,
// re-running their read-table step; one that still cannot start stays
// stopped with the new reason.
func (r *reloader) resume(ctx context.Context, next config.Config, names []string) []string {
	var started []string
	for _, name := range names {
		if _, err := r.startProjections(ctx, next, []string{name}); err != nil {
			r.starter.sup.halt(name, err)
			continue
		}
		started = append(started, name)
		r.log.Info("SIGHUP: restarted a stopped projection", "projection", name)
	}
	return started
}

// resumeApplier restarts the stopped applier of a transaction-consistent
// sink with the declarations in next of the projections on it (the edit
// may be the fix); one that still cannot start stays stopped with the new
// reason.
func (r *reloader) resumeApplier(ctx context.Context, next config.Config, sink string, applied *config.Config) {
	name := applierName(sink)
	plan := r.current
	plan.Projections = map[string]config.Projection{}
	for pname, d := range next.Projections {
		if d.Sink == sink && contains(r.current.Source.Tables, d.From) {
			plan.Projections[pname] = d
		}
	}
	planned, failed, err := planEach(ctx, plan)
	if err == nil && len(failed) > 0 {
		err = unfitSource(failed[0].name, failed[0].err)
	}
	if err == nil {
		_, err = r.starter.startApplier(ctx, sink, planned)
	}
	if err != nil {
		r.starter.sup.halt(name, err)
		return
	}
	for pname, d := range plan.Projections {
		applied.Projections[pname] = d
	}
	r.log.Info("SIGHUP: restarted the stopped applier of a transaction-consistent sink", "sink", sink)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
