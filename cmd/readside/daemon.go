package main

// The operations side of `readside run`: signals and the shutdown
// deadline, the embedded broker, and the HTTP endpoint. run.go calls these
// through a few hooks so the pipeline wiring there stays about the
// pipeline.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/broker"
	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
)

// lifecycle turns signals into a cancelled context and enforces the
// shutdown deadline: the first SIGTERM or SIGINT starts a drain of at most
// shutdown_timeout; a second SIGINT, or the deadline passing, exits 1 at
// once.
type lifecycle struct {
	ctx    context.Context
	cancel context.CancelFunc
	sigs   chan os.Signal
	stderr io.Writer
	exit   func(int)

	mu      sync.Mutex
	timeout time.Duration
	log     *slog.Logger
}

func newLifecycle(stderr io.Writer) *lifecycle {
	ctx, cancel := context.WithCancel(context.Background())
	l := &lifecycle{ctx: ctx, cancel: cancel, sigs: make(chan os.Signal, 2), stderr: stderr, exit: os.Exit, timeout: 30 * time.Second}
	signal.Notify(l.sigs, os.Interrupt, syscall.SIGTERM)
	go l.watch()
	return l
}

// configure sets the deadline and logger once the config is loaded.
func (l *lifecycle) configure(timeout time.Duration, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timeout, l.log = timeout, log
}

func (l *lifecycle) logger() (*slog.Logger, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.log == nil {
		return slog.New(slog.NewTextHandler(l.stderr, nil)), l.timeout
	}
	return l.log, l.timeout
}

func (l *lifecycle) watch() {
	var sig os.Signal
	select {
	case sig = <-l.sigs:
	case <-l.ctx.Done(): // stop() before any signal
		return
	}
	log, timeout := l.logger()
	log.Info("draining: committing in-flight work", "signal", sig.String(), "shutdown_timeout", timeout)
	l.cancel()
	deadline := time.NewTimer(timeout)
	for {
		select {
		case sig := <-l.sigs:
			if sig == os.Interrupt {
				log.Error("second interrupt: exiting without finishing the drain (uncommitted work is redone on restart)")
				l.exit(exitProblem)
				return
			}
		case <-deadline.C:
			log.Error("drain did not finish within shutdown_timeout: exiting (uncommitted work is redone on restart)", "shutdown_timeout", timeout)
			l.exit(exitProblem)
			return
		}
	}
}

// stop releases the signal handlers.
func (l *lifecycle) stop() {
	signal.Stop(l.sigs)
	l.cancel()
}

// startBroker returns the brokers to use: kafka.brokers, or the address of
// an embedded broker it starts (closed by the returned function, after
// every client stopped).
func startBroker(cfg config.Config, role string, log *slog.Logger) ([]string, func(), error) {
	if len(cfg.Kafka.Brokers) > 0 {
		return cfg.Kafka.Brokers, func() {}, nil
	}
	if role == "projector" {
		return nil, nil, fmt.Errorf("kafka.brokers is empty: a --role projector process needs the broker of its tailer; set kafka.brokers (e.g. to the tailer's kafka.embedded_listen)")
	}
	dir := filepath.Join(cfg.DataDir, "kafka")
	b, err := broker.StartEmbedded(dir, cfg.Kafka.EmbeddedListen, log)
	if err != nil {
		return nil, nil, err
	}
	log.Info("kafka.brokers is empty: started the embedded single-node broker", "listen", b.Addr(), "data", b.Dir())
	return []string{b.Addr()}, func() {
		b.Close()
		log.Info("embedded broker stopped", "data", b.Dir())
	}, nil
}

// ops is the HTTP endpoint of one run, and the health of its components.
type ops struct {
	health *httpapi.Health
	tailer *cdc.Tailer // set when this process runs one
	// projMetrics: the projectors' metrics, when this process runs them
	// (their lag counts for /readyz).
	projMetrics *projector.Metrics
	// routes: the sink each projector here applies through (routing.go).
	routes *routes
	srv    *httpapi.Server
	col    *httpapi.Collector
	log    *slog.Logger
	done   chan error
}

func newOps(log *slog.Logger) *ops { return &ops{health: httpapi.NewHealth(), log: log} }

// track wraps a component's run function for the errgroup.
func (o *ops) track(name string, run func() error) func() error { return o.health.Track(name, run) }

// listen binds the endpoint's address (none when empty) before anything
// starts, so a taken port fails start-up at once.
func (o *ops) listen(addr string) error {
	if addr == "" {
		return nil
	}
	o.srv = httpapi.NewServer(o.log)
	if err := o.srv.Listen(addr); err != nil {
		return fmt.Errorf("--http / http.listen %s: %w", addr, err)
	}
	return nil
}

// serveHealth answers /healthz (and /readyz: not ready) while start-up
// waits for the servers; serve adds the rest once the pipeline is wired.
func (o *ops) serveHealth() {
	if o.srv == nil {
		return
	}
	o.srv.RouteHealth(o.health)
	o.done = make(chan error, 1)
	go func() { o.done <- o.srv.Serve() }()
}

// serve answers everything once the components are wired.
func (o *ops) serve(cfg config.Config, role string, reg *prometheus.Registry) error {
	if o.srv == nil {
		return nil
	}
	opts, err := statusOptions(cfg, role)
	if err != nil {
		return err
	}
	var src httpapi.TailerSource
	if o.tailer != nil {
		src = o.tailer
	}
	if o.projMetrics != nil {
		opts.ProjectionLag = o.projMetrics.LagSeconds
		opts.DeadLetters = o.projMetrics.DeadLetters
		o.health.SetDegradations(deadLettering(opts, o.projMetrics, cfg.Kafka.TopicPrefix))
	}
	if o.routes != nil {
		ps, _ := projections.Compile(cfg)
		opts.Route = statusRoute(cfg, ps, o.routes)
	}
	if o.col, err = httpapi.NewCollector(opts, src, o.health); err != nil {
		return err
	}
	if err := o.col.RegisterMetrics(reg); err != nil {
		return err
	}
	o.srv.Pprof = cfg.HTTP.Pprof
	o.srv.Route(reg, o.col, o.health)
	o.log.Info("serving the status page at /, /metrics, /healthz, /readyz, /status, /wait", "http", o.srv.Addr())
	return nil
}

// close stops the endpoint after the pipeline stopped.
func (o *ops) close() {
	if o.done == nil {
		if o.srv != nil {
			o.srv.Close()
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = o.srv.Shutdown(ctx)
	if err := <-o.done; err != nil {
		o.log.Warn("http endpoint", "err", err)
	}
	if o.col != nil {
		o.col.Close()
	}
}

// statusOptions describes the pipeline of cfg for the status report.
func statusOptions(cfg config.Config, role string) (httpapi.Options, error) {
	opts := httpapi.Options{
		Brokers:         cfg.Kafka.Brokers,
		CheckpointTopic: event.CheckpointTopic(cfg.Kafka.TopicPrefix),
		TransactionalID: cfg.TransactionalID(),
		TailerHere:      role == "all" || role == "tailer",
		HeartbeatPeriod: cfg.Source.HeartbeatPeriod,
		ReadyMaxLag:     cfg.HTTP.ReadyMaxLag,
	}
	if role != "projector" {
		opts.SnapshotLog = cdc.NewSnapshotLog(cfg.Source)
	}
	opts.Reshards = newReshardReader(cfg).read
	ps, err := projections.Compile(cfg)
	if err != nil {
		return opts, err
	}
	for _, p := range ps {
		sp := httpapi.Projection{Name: p.Name, Topic: p.Topic, Topics: p.Topics(), Group: p.Group, Here: role == "all" || role == "projector"}
		sp.Sinks = sinkServers(p.Sink, cfg.Sinks[p.Sink])
		if cfg.Sinks[p.Sink].Consistency.Transactional() {
			// Applied by the sink's applier, in its group.
			sp.Worker, sp.Group = applierName(p.Sink), event.SinkGroup(cfg.Kafka.TopicPrefix, p.Sink)
		}
		if p.FanOut == projections.FanOutBackground {
			for _, j := range p.Joins {
				sp.FanOutPending = append(sp.FanOutPending, j.PendingTable(p))
			}
		}
		opts.Projections = append(opts.Projections, sp)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Sinks)) {
		if cfg.Sinks[name].Consistency.Transactional() {
			opts.ConsistentSinks = append(opts.ConsistentSinks, httpapi.ConsistentSink{Name: name, Shards: sinkServers(name, cfg.Sinks[name])})
			opts.CommitUnderWay = projector.CommitUnderWay
		}
	}
	// Where a reshard moved a projection (routing.go); serve adds the
	// projectors' own.
	opts.Route = statusRoute(cfg, ps, nil)
	return opts, nil
}
