package main

// readside replay: its flags and what it prints. An offset reset for one
// projection is a request row the daemon's projectors take between
// batches (replay_request.go), its --from resolved by
// rebuild.ReplayOffsets; --rebuild, --backfill and --drop-old are package
// rebuild, wired here. The design and the argument for the swap are in
// docs/design/replay.md, "Replay and rebuild"; the operator's view in
// docs/operations.md.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/rebuild"
	"github.com/readside/readside/sinks"
)

// replayFlags are replay's flags.
type replayFlags struct {
	name, from, backfill              string
	rebuild, dropOld, cancel, pending bool
	timeout, progressEvery            time.Duration
}

// check returns what is wrong with the flags' combination ("": nothing).
func (f *replayFlags) check() string {
	switch {
	case f.name == "":
		return "--projection is required (a name under projections: in the config)"
	case !f.rebuild && !f.dropOld && !f.cancel && !f.pending && f.from == "" && f.backfill == "":
		return "give --from earliest|RFC3339|partition:offset,..., or --rebuild, --backfill COLUMNS, --drop-old, --pending or --cancel"
	case f.backfill != "" && (f.from != "" || f.rebuild || f.dropOld || f.cancel || f.pending):
		return "--backfill fills columns into the existing rows on its own: give it without --from, --rebuild, --drop-old, --pending or --cancel"
	case (f.cancel || f.pending) && (f.from != "" || f.rebuild || f.dropOld):
		return "--cancel and --pending act on the pending requests only: give them without --from, --rebuild or --drop-old"
	case f.rebuild && f.from != "":
		return "--rebuild always reads the topics from the earliest offset: drop --from"
	}
	return ""
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	c := newCommand("replay", stdout, stderr)
	fs := c.fs
	var f replayFlags
	fs.StringVar(&f.name, "projection", "", "the projection to replay (required)")
	fs.StringVar(&f.from, "from", "", "earliest, an RFC3339 time, or partition:offset,... (topic/partition:offset for a joined parent's or a child table's topic)")
	fs.BoolVar(&f.rebuild, "rebuild", false, "fill a shadow table from the topics and swap it in (RENAME TABLE) once caught up")
	fs.StringVar(&f.backfill, "backfill", "", "fill read columns added to the projection (comma-separated) into the existing rows, from the topics")
	fs.BoolVar(&f.dropOld, "drop-old", false, "drop the <table>__old a rebuild kept (after --rebuild finishes, or alone)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for a running projector to take the reset; exit 1 if none does")
	fs.BoolVar(&f.cancel, "cancel", false, "remove the projection's pending replay requests (those no projector has taken yet)")
	fs.BoolVar(&f.pending, "pending", false, "list the projection's pending replay requests")
	fs.DurationVar(&f.progressEvery, "progress-every", 5*time.Second, "progress line period when stderr is not a terminal")
	// The daemon's embedded broker, when the config names no brokers:
	// replay is a client of it.
	e, code := c.setup(args, f.check)
	if e == nil {
		return code
	}
	defer e.stop()
	ctx, cfg := e.ctx, e.cfg
	p, code := c.projection(cfg, f.name)
	if p == nil {
		return code
	}
	if p.ConsistentSink {
		return c.failf(exitUsage, "projection %s is on sink %s (consistency: transaction): a replay or rebuild of one projection would show its read table at another point of the source than the others on the sink, so readside replay does not run there. Instead, %s: readside fills the tables again from the topics, whole transactions at a time", p.Name, p.Sink, p.RebuildHow())
	}
	if p.Computes() {
		// Computed columns are evaluated as typed against the source.
		if _, err := sourceTypes(ctx, cfg, p); err != nil {
			return c.failf(exitProblem, "%v", err)
		}
	}
	// The sink that serves p now: a reshard may have moved it off the
	// one the config names.
	at, closeSinks, err := sinks.OpenResolved(ctx, cfg.Sinks, p)
	defer closeSinks()
	if err != nil {
		return c.failf(exitProblem, "%v", err)
	}
	sink := at.Sink
	if err := sink.Exec(ctx, sinks.Bookkeeping()); err != nil {
		return c.failf(exitProblem, "%v", err)
	}
	r, err := newRebuild(cfg, p, sink, e.log, stderr, f.progressEvery)
	if err == nil {
		err = replay(ctx, f, cfg, p, sink, r, stdout)
	}
	if err != nil {
		return c.failf(exitProblem, "%v", err)
	}
	return exitOK
}

// replay runs what the flags ask and prints what it did.
func replay(ctx context.Context, f replayFlags, cfg config.Config, p *projections.Projection, sink *sinks.Sharded, r *rebuild.Rebuild, stdout io.Writer) error {
	var err error
	switch {
	case f.cancel:
		err = cancelReplays(ctx, p, sink, stdout)
	case f.pending:
		err = listPending(ctx, p, sink, stdout)
	case f.backfill != "":
		var cols []string
		if cols, err = r.Backfill(ctx, strings.Split(f.backfill, ",")); err == nil {
			fmt.Fprintf(stdout, "backfilled %s of %s: every row has the value of the record it was written from\n", strings.Join(cols, ", "), p.Table)
		}
	case f.from != "":
		err = resetOffsets(ctx, cfg, p, sink, f.from, f.timeout, stdout)
	case f.rebuild:
		if err = r.Run(ctx); err == nil {
			fmt.Fprintf(stdout, "rebuilt %s: %s now holds the rebuilt rows; the previous table is %s (drop it with --drop-old)\n", p.Name, p.Table, rebuild.OldTable(p))
		}
	}
	if err == nil && f.dropOld {
		if err = r.DropOld(ctx); err == nil {
			fmt.Fprintf(stdout, "dropped %s on every shard of sink %s\n", rebuild.OldTable(p), p.Sink)
		}
	}
	return err
}

// newRebuild wires the rebuild of p on sink.
func newRebuild(cfg config.Config, p *projections.Projection, sink *sinks.Sharded, log *slog.Logger, stderr io.Writer, every time.Duration) (*rebuild.Rebuild, error) {
	// The Kafka client's group chatter would drown the progress lines.
	quiet := cfg.Log
	if quiet.Level != config.LogDebug {
		quiet.Level = config.LogWarn
	}
	// The shadow's projector (and the backfill's, the catch-up's) follow
	// the source's schema as the daemon's projectors do: a column widened
	// while the shadow fills is widened in the shadow and its state
	// tables too, which the swap then puts in place.
	p.SourceTypes = func(ctx context.Context) (projections.Types, error) { return sourceTypes(ctx, cfg, p) }
	return rebuild.New(p, sinks.NewRebuilder(sink), rebuild.Options{
		Apply: sink,
		Backfill: func(p *projections.Projection, cols []string) (projections.Sink, error) {
			bf, err := sinks.NewBackfill(sink, p, cols)
			if err != nil {
				return nil, err
			}
			return bf, nil
		},
		Topics:      rebuild.Kafka{Brokers: cfg.Kafka.Brokers},
		SourceTypes: func(ctx context.Context) (projections.Types, error) { return sourceTypes(ctx, cfg, p) },
		Projector: projector.Options{Brokers: cfg.Kafka.Brokers,
			MaxMessageBytes: cfg.Kafka.MaxMessageBytes, Rejected: sinks.Rejected},
		// Made as each projector starts: newLogger sets the level of
		// every logger of the process (logLevel), including log's.
		ProjectorLog: func() *slog.Logger { return newLogger(quiet, stderr) },
		Log:          log,
		Progress:     progressLine(stderr, every, cfg.Log, log),
		PauseAt:      os.Getenv(rebuildPauseEnv),
	})
}

// rebuildPauseEnv makes a rebuild wait at a phase (tests only: /status
// is read, and a kill lands, while it is under way).
const rebuildPauseEnv = "RS_TEST_REBUILD_PAUSE"

var _ rebuild.Sink = (*sinks.Rebuilder)(nil)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// sourceTypes reads the live source schema p's read table is typed from.
func sourceTypes(ctx context.Context, cfg config.Config, p *projections.Projection) (projections.Types, error) {
	dcfg, err := driver.ParseDSN(cfg.Source.DSN.Reveal())
	if err != nil {
		return projections.Types{}, fmt.Errorf("source.dsn: %w", err)
	}
	connector, err := driver.NewConnector(dcfg)
	if err != nil {
		return projections.Types{}, err
	}
	types, err := sourceTypesOf(p, connector)(ctx)
	if err != nil {
		return projections.Types{}, errors.Join(errors.New("reading the source schema for the shadow table"), err)
	}
	return types, nil
}
