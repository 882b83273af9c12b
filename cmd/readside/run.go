package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/verify"
)

// commonFlags are the flags every verb takes.
type commonFlags struct {
	configPath string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "c", "readside.yaml", "read the config from `FILE`")
	fs.StringVar(&c.configPath, "config", "readside.yaml", "read the config from `FILE`")
}

func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	logLevel.Set(cfg.Level.Slog()) // SIGHUP changes it (reload.go)
	opts := &slog.HandlerOptions{Level: logLevel}
	if cfg.Format == config.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func runDaemon(args []string, stdout, stderr io.Writer) int {
	// Signals first: a SIGTERM during start-up must stop cleanly too.
	lc := newLifecycle(stderr)
	defer lc.stop()
	ctx := lc.ctx
	fs := newFlagSet("run")
	var common commonFlags
	common.register(fs)
	role := fs.String("role", "all", "run as `ROLE`: all (the tailer and the projectors), tailer or projector")
	httpAddr := fs.String("http", "", "serve /metrics, /healthz, /readyz and /status on `ADDR`, e.g. :9100 (default: http.listen in the config)")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "readside run: %v\n", err)
		return exitUsage
	}
	log := newLogger(cfg.Log, stderr)
	lc.configure(cfg.ShutdownTimeout, log)
	switch *role {
	case "all", "tailer", "projector":
	default:
		fmt.Fprintf(stderr, "readside run: --role %q: want all, tailer or projector\n", *role)
		return exitUsage
	}
	ops := newOps(log)
	if *httpAddr == "" {
		*httpAddr = cfg.HTTP.Listen
	}
	if err := ops.listen(*httpAddr); err != nil {
		fmt.Fprintf(stderr, "readside run: %v\n", err)
		return exitUsage
	}
	defer ops.close()
	// /healthz answers from here on, so a probe sees what start-up waits for.
	ops.serveHealth()
	brokers, closeBroker, err := startBroker(cfg, *role, log)
	if err != nil {
		fmt.Fprintf(stderr, "readside run: %v\n", err)
		return exitUsage
	}
	defer closeBroker()
	loaded := cfg
	cfg.Kafka.Brokers = brokers
	if err := waitForServers(ctx, cfg, *role, len(loaded.Kafka.Brokers) > 0, ops, log); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped during start-up", "interrupted", err)
			return exitOK
		}
		fmt.Fprintf(stderr, "readside run: %v\n", err)
		return exitUsage
	}
	reg := prometheus.NewRegistry()
	g, gctx := errgroup.WithContext(ctx)
	var declared []string
	if *role != "tailer" {
		for name := range cfg.Projections {
			declared = append(declared, name)
		}
		sort.Strings(declared)
	}
	log.Info("starting", "role", *role, "source", cfg.Source.DSN, "brokers", cfg.Kafka.Brokers, "tables", cfg.Source.Tables, "projections", declared)
	progress := &progressLog{reg: reg, every: cfg.Log.ProgressEvery, log: log, poll: time.Second}
	if *role != "projector" {
		var opts []cdc.Option
		if len(loaded.Kafka.Brokers) == 0 {
			opts = append(opts, cdc.EmbeddedBroker())
		}
		tailer, err := cdc.New(cfg, cfg.Kafka.Brokers, log, reg, opts...)
		if err != nil {
			fmt.Fprintf(stderr, "readside run: %v\n", err)
			return exitUsage
		}
		ops.tailer = tailer
		progress.tailer = tailer
		progress.load = func(context.Context) (*cdc.InitialSnapshot, bool) { return tailer.InitialSnapshot() }
		g.Go(ops.track("tailer", func() error { return tailer.Run(gctx) }))
	}
	if *role != "tailer" {
		planned, failed, err := planEach(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return stoppedDuringStartup(g, log, err)
			}
			fmt.Fprintf(stderr, "readside run:\n%v\n", err)
			return exitUsage
		}
		progress.projections = sortedNames(planned)
		progress.reads = readTables(cfg, planned)
		if progress.load == nil {
			progress.load = storedLoad(cfg)
		}
		starter := newProjectorStarter(cfg, g, gctx, ops, log, reg)
		defer starter.close()
		// A projection that no longer fits the source or its read table
		// (a DDL broke it, maybe before a restart) stops alone: the
		// others start (supervise.go).
		for _, f := range failed {
			starter.sup.halt(f.name, unfitSource(f.name, f.err))
		}
		for _, pp := range planned {
			if code, err := starter.start(ctx, pp); err != nil {
				if ctx.Err() != nil {
					return stoppedDuringStartup(g, log, err)
				}
				if errors.As(err, new(*projections.StopError)) {
					starter.sup.halt(pp.p.Name, err)
					continue
				}
				fmt.Fprintf(stderr, "readside run: %v\n", err)
				return code
			}
		}
		watchReload(gctx, &reloader{path: common.configPath, role: *role, current: loaded, starter: starter, log: log})
	} else {
		watchReload(gctx, &reloader{path: common.configPath, role: *role, current: loaded, log: log})
	}
	if cfg.Verify.Every > 0 && *role != "tailer" {
		// Scheduled verification (verify.every): read-only, logs and metrics.
		ps, _ := projections.Compile(cfg)
		g.Go(ops.track("verify", func() error { return verify.Schedule(gctx, cfg, ps, reg, log) }))
	}
	if err := ops.serve(cfg, *role, reg); err != nil {
		log.Error("http endpoint", "err", err)
	}
	g.Go(func() error { return progress.run(gctx) })
	return waitStopped(g, log)
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
