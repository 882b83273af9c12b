package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/internal/librarylog"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/verify"
)

func runDaemon(args []string, stdout, stderr io.Writer) int {
	// Signals first: a SIGTERM during start-up must stop cleanly too.
	lc := newLifecycle(stderr)
	defer lc.stop()
	hup := holdReloads()
	defer signal.Stop(hup)
	c := newCommand("run", stdout, stderr)
	role := c.fs.String("role", "all", "run as `ROLE`: all (the tailer and the projectors), tailer or projector")
	httpAddr := c.fs.String("http", "", "serve the status page at /, /metrics, /healthz, /readyz and /status on `ADDR`, e.g. :9100 (default: http.listen in the config)")
	if code, done := c.parse(args); done {
		return code
	}
	cfg, code, ok := c.loadOrFail()
	if !ok {
		return code
	}
	log := newLogger(cfg.Log, stderr)
	c.logsFailures(cfg.Log, log)
	// Before any connection's DSN is parsed: each takes the driver's
	// logger then.
	librarylog.RouteMySQLDriver(log)
	lc.configure(cfg.ShutdownTimeout, log)
	switch *role {
	case "all", "tailer", "projector":
	default:
		return c.failf(exitUsage, "--role %q: want all, tailer or projector", *role)
	}
	if cfg.Input.Kind == config.InputDebezium && *role != "projector" {
		// A tailer here would capture the source a second time, into
		// topics the projectors do not read.
		return c.failf(exitUsage, "input.kind is debezium and --role is %s: the projectors read a Debezium connector's topics and no tailer runs. Fix: run with --role projector", *role)
	}
	d := &daemonRun{c: c, ctx: lc.ctx, hup: hup, role: *role, loaded: cfg, cfg: cfg, log: log, ops: newOps(log)}
	if *httpAddr == "" {
		*httpAddr = cfg.HTTP.Listen
	}
	if err := d.ops.listen(*httpAddr); err != nil {
		return c.failf(exitUsage, "%v", err)
	}
	defer d.ops.close()
	// /healthz answers from here on, so a probe sees what start-up waits for.
	d.ops.serveHealth()
	brokers, closeBroker, err := startBroker(cfg, *role, log)
	if err != nil {
		return c.failf(exitUsage, "%v", err)
	}
	defer closeBroker()
	d.cfg.Kafka.Brokers = brokers
	if err := waitForServers(d.ctx, d.cfg, *role, len(cfg.Kafka.Brokers) > 0, d.ops, log); err != nil {
		if d.ctx.Err() != nil {
			log.Info("stopped during start-up", "interrupted", err)
			return exitOK
		}
		return c.failf(exitUsage, "%v", err)
	}
	return d.run()
}

// daemonRun is readside run once its servers answer: the pipeline's
// parts started in one errgroup, which its outcome is waited on.
type daemonRun struct {
	c        *command
	ctx      context.Context
	hup      <-chan os.Signal // SIGHUPs held since start-up (holdReloads)
	role     string
	loaded   config.Config // as loaded: no brokers means the embedded one
	cfg      config.Config // with the brokers dialled
	log      *slog.Logger
	ops      *ops
	reg      *prometheus.Registry
	g        *errgroup.Group
	gctx     context.Context
	progress *progressLog
}

// run starts the tailer, the projectors, the scheduled verification and
// the HTTP endpoint as the role asks, and waits until they stop.
func (d *daemonRun) run() int {
	cfg := d.cfg
	d.reg = prometheus.NewRegistry()
	d.g, d.gctx = errgroup.WithContext(d.ctx)
	var declared []string
	if d.role != "tailer" {
		for name := range cfg.Projections {
			declared = append(declared, name)
		}
		sort.Strings(declared)
	}
	d.log.Info("starting", "role", d.role, "source_dsn", cfg.Source.DSN, "brokers", cfg.Kafka.Brokers, "tables", cfg.Source.Tables, "projections", declared)
	d.progress = &progressLog{reg: d.reg, every: cfg.Log.ProgressEvery, log: d.log, poll: time.Second}
	if d.role != "projector" {
		if err := d.startTailer(); err != nil {
			return d.c.failf(exitUsage, "%v", err)
		}
	}
	if d.role != "tailer" {
		starter, code, ok := d.startProjectors()
		if starter != nil {
			defer starter.close()
		}
		if !ok {
			return code
		}
		watchReload(d.gctx, d.hup, &reloader{path: d.c.common.configPath, role: d.role, current: d.loaded, starter: starter, log: d.log})
	} else {
		watchReload(d.gctx, d.hup, &reloader{path: d.c.common.configPath, role: d.role, current: d.loaded, log: d.log})
	}
	if cfg.Verify.Every > 0 && d.role != "tailer" {
		// Scheduled verification (verify.every): read-only, logs and metrics.
		ps, _ := projections.Compile(cfg)
		d.g.Go(d.ops.track("verify", func() error { return verify.Schedule(d.gctx, scheduled(cfg), ps, d.reg, d.log) }))
	}
	if err := d.ops.serve(cfg, d.role, d.reg); err != nil {
		d.log.Error("http endpoint", "err", err)
	}
	if col := d.ops.col; col != nil {
		// The status page's lag charts.
		d.g.Go(func() error { return col.RecordHistory(d.gctx, httpapi.HistoryEvery) })
	}
	d.g.Go(func() error { return d.progress.run(d.gctx) })
	return waitStopped(d.g, d.log)
}

// startTailer starts the tailer (the embedded broker's when the config
// names no brokers).
func (d *daemonRun) startTailer() error {
	var opts []cdc.Option
	if len(d.loaded.Kafka.Brokers) == 0 {
		opts = append(opts, cdc.EmbeddedBroker())
	}
	tailer, err := cdc.New(cdc.Config{Source: d.cfg.Source, Kafka: d.cfg.Kafka, Cuts: d.cfg.TransactionalSinks()}, d.cfg.Kafka.Brokers, d.log, d.reg, opts...)
	if err != nil {
		return err
	}
	d.ops.tailer = tailer
	d.progress.tailer = tailer
	d.progress.load = func(context.Context) (*cdc.InitialSnapshot, bool) { return tailer.InitialSnapshot() }
	d.g.Go(d.ops.track("tailer", func() error { return tailer.Run(d.gctx) }))
	return nil
}

// startProjectors plans every projection and starts those that fit; one
// that does not fit the source or its read table stops alone. ok false:
// the run ends with code (the starter, when not nil, is the caller's to
// close either way).
func (d *daemonRun) startProjectors() (starter *projectorStarter, code int, ok bool) {
	planned, failed, err := planEach(d.ctx, d.cfg)
	if err != nil {
		if d.ctx.Err() != nil {
			return nil, stoppedDuringStartup(d.g, d.log, err), false
		}
		return nil, d.c.failLines(exitUsage, err), false
	}
	d.progress.projections = sortedNames(planned)
	d.progress.reads = readTables(d.cfg, planned)
	if d.cfg.Input.Kind == config.InputDebezium {
		var ps []*projections.Projection
		for _, pp := range planned {
			ps = append(ps, pp.p)
		}
		w := &topicWatch{}
		d.progress.topicsWait = w.waits
		d.g.Go(func() error { w.run(d.gctx, d.cfg, ps, 30*time.Second, d.log); return nil })
	}
	if d.progress.load == nil {
		d.progress.load = storedLoad(d.cfg)
	}
	starter = newProjectorStarter(d.cfg, d.g, d.gctx, d.ops, d.log, d.reg)
	starter.configPath = d.c.common.configPath
	// A projection that no longer fits the source or its read table
	// (a DDL broke it, maybe before a restart) stops alone: the
	// others start (supervise.go).
	unfitSinks := map[string]error{}
	for _, f := range failed {
		if sink := d.cfg.Projections[f.name].Sink; d.cfg.Sinks[sink].Consistency.Transactional() {
			unfitSinks[sink] = cmp.Or(unfitSinks[sink], unfitConsistentSink(sink, f.name, f.err))
			continue
		}
		starter.sup.halt(f.name, unfitSource(f.name, f.err))
	}
	rows, consistent := byConsistency(d.cfg, planned)
	for sink, err := range unfitSinks {
		// Not started without the projection: its frontier would move on
		// without it, and the projection would then be one added to the
		// sink later, which only a refill of the sink can take.
		starter.sup.halt(applierName(sink), err)
		delete(consistent, sink)
	}
	for _, sink := range slices.Sorted(maps.Keys(consistent)) {
		code, err := starter.startApplier(d.ctx, sink, consistent[sink])
		if err == nil {
			continue
		}
		if d.ctx.Err() != nil {
			return starter, stoppedDuringStartup(d.g, d.log, err), false
		}
		if errors.As(err, new(*projections.StopError)) {
			starter.sup.halt(applierName(sink), err)
			continue
		}
		return starter, d.c.failf(code, "%v", err), false
	}
	for _, pp := range rows {
		code, err := starter.start(d.ctx, pp)
		if err == nil {
			continue
		}
		if d.ctx.Err() != nil {
			return starter, stoppedDuringStartup(d.g, d.log, err), false
		}
		if errors.As(err, new(*projections.StopError)) {
			starter.sup.halt(pp.p.Name, err)
			continue
		}
		return starter, d.c.failf(code, "%v", err), false
	}
	return starter, exitOK, true
}

// waitStopped waits for the pipeline's goroutines and maps their outcome
// to the exit code.
func waitStopped(g *errgroup.Group, log *slog.Logger) int {
	if err := g.Wait(); err != nil {
		log.Error("stopped", "err", err, "fatal", errors.As(err, new(*cdc.FatalError)))
		return exitProblem
	}
	log.Info("stopped cleanly")
	return exitOK
}

// stoppedDuringStartup ends a run whose start-up step failed because a
// SIGTERM or SIGINT cancelled it: that is a requested stop, not a broken
// config, so it waits for what already started (the tailer commits its
// in-flight work) and exits 0 like any clean drain.
func stoppedDuringStartup(g *errgroup.Group, log *slog.Logger, cause error) int {
	log.Info("stopped during start-up", "interrupted", cause)
	return waitStopped(g, log)
}

// scheduled is what scheduled verification takes of cfg.
func scheduled(cfg config.Config) verify.Scheduled {
	return verify.Scheduled{Every: cfg.Verify.Every, Source: cfg.Source, Ends: projector.Ends(cfg.Kafka.ClientBrokers()),
		DataDir: cfg.DataDir, Sinks: cfg.Sinks}
}
