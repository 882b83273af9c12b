package main

// readside reshard: its flags, its checks and what it prints. The phases
// are package reshard's; the design and the argument are in
// docs/design/resharding.md, "Resharding"; the operator's view in
// docs/operations.md, "Resharding".

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/rebuild"
	"github.com/readside/readside/reshard"
	"github.com/readside/readside/sinks"
)

// reshardFlags are reshard's flags.
type reshardFlags struct {
	name, to, sink, fill string
	cleanup, yes         bool
	progressEvery        time.Duration
	chunkRows            int
}

// check returns what is wrong with the flags ("": nothing).
func (f *reshardFlags) check() string {
	switch {
	case f.name == "":
		return "--projection is required (a name under projections: in the config)"
	case f.sink == "":
		return "--sink is required: the sink (under sinks: in the config) the projection moves to"
	case f.to == "":
		return "--to is required: the key ranges of --sink, comma separated (e.g. -80,80-c0,c0-), to confirm them"
	case f.fill != reshard.FillCopy && f.fill != reshard.FillTopics:
		return fmt.Sprintf("--fill %q: want copy (copy the moving rows, then catch up from the topics) or topics (re-apply the topics from the earliest offsets)", f.fill)
	case f.chunkRows < 1:
		return "--chunk-rows must be at least 1"
	}
	return ""
}

// reshardPauseEnv makes the reshard wait at a phase (tests only: a kill -9
// lands there).
const reshardPauseEnv = "RS_TEST_RESHARD_PAUSE"

func runReshard(args []string, stdout, stderr io.Writer) int {
	c := newCommand("reshard", stdout, stderr)
	fs := c.fs
	var f reshardFlags
	fs.StringVar(&f.name, "projection", "", "the projection to move (required)")
	fs.StringVar(&f.sink, "sink", "", "the sink to move it to, as in the config (required)")
	fs.StringVar(&f.to, "to", "", "that sink's key ranges, comma separated, to confirm them (required)")
	fs.StringVar(&f.fill, "fill", reshard.FillCopy, "how the moving key ranges are filled: copy (their rows, then the topics from where they were copied) or topics (from the earliest offsets)")
	fs.BoolVar(&f.cleanup, "cleanup", false, "after the cutover (now or later), delete the rows the old sink's servers no longer serve")
	fs.BoolVar(&f.yes, "yes", false, "do not ask before starting")
	fs.DurationVar(&f.progressEvery, "progress-every", 5*time.Second, "progress line period when stderr is not a terminal")
	fs.IntVar(&f.chunkRows, "chunk-rows", 10000, "rows read at a time by the copy, the check and the cleanup")
	e, code := c.setup(args, f.check)
	if e == nil {
		return code
	}
	defer e.stop()
	p, code := c.projection(e.cfg, f.name)
	if p == nil {
		return code
	}
	for _, sink := range []string{p.Sink, f.sink} {
		if e.cfg.Sinks[sink].Consistency.Transactional() {
			return c.failf(exitUsage, "sink %s has consistency: transaction, which readside reshard does not move projections to or from yet: its cutover is per projection, not at one cut of the source for the whole sink. Reshard with consistency: row on both sinks, then set it back (docs/operations.md, \"Transaction-consistent sinks\")", sink)
		}
	}
	if problem := reshardTarget(e.cfg, f); problem != "" {
		return c.failf(exitUsage, "%s", problem)
	}
	if err := reshard.Refuse(p, f.sink, len(e.cfg.Sinks[f.sink].Shards)); err != nil {
		return c.failf(exitUsage, "%v", err)
	}
	opened := map[string]*sinks.Sharded{}
	defer func() {
		for _, s := range opened {
			s.Close()
		}
	}()
	open := func(ctx context.Context, name string) (*sinks.Sharded, error) {
		if s := opened[name]; s != nil {
			return s, nil
		}
		s, err := sinks.OpenSharded(ctx, name, e.cfg.Sinks[name])
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", name, err)
		}
		opened[name] = s
		return s, nil
	}
	code, err := reshardRun(e.ctx, e.cfg, p, f, open, e.log, stdout, stderr)
	if err != nil {
		return c.failf(code, "%v", err)
	}
	return code
}

// reshardTarget checks --sink and --to against the config ("": fine).
func reshardTarget(cfg config.Config, f reshardFlags) string {
	sc, ok := cfg.Sinks[f.sink]
	if !ok {
		return fmt.Sprintf("--sink %s is not in the config: add sinks.%s (dsn, or shards: [{keyrange, dsn}]) first", f.sink, f.sink)
	}
	ranges, err := sinks.ShardRanges(f.sink, sc)
	if err != nil {
		return err.Error()
	}
	var have []string
	for _, r := range ranges {
		have = append(have, r.Text)
	}
	want := strings.Split(f.to, ",")
	same := len(want) == len(ranges)
	for i := 0; same && i < len(want); i++ {
		r, err := keyspace.ParseRange(strings.TrimSpace(want[i]))
		same = err == nil && r.Start == ranges[i].Start && r.End == ranges[i].End && r.Open == ranges[i].Open
	}
	if !same {
		return fmt.Sprintf("--to %s is not sink %s's key ranges in the config (%s): give --to %s, or change sinks.%s.shards", f.to, f.sink, strings.Join(have, ","), strings.Join(have, ","), f.sink)
	}
	return ""
}

// reshardRun runs the reshard the flags ask (reshard.Prepare decides the
// step) and prints what it does.
func reshardRun(ctx context.Context, cfg config.Config, p *projections.Projection, f reshardFlags,
	open func(context.Context, string) (*sinks.Sharded, error), log *slog.Logger, stdout, stderr io.Writer) (int, error) {
	m, err := reshard.Prepare(ctx, p, reshardRequest(cfg, p, f, open, log, stderr))
	if err != nil {
		if errors.As(err, new(*reshard.ConfigError)) {
			return exitUsage, err
		}
		return exitProblem, err
	}
	switch m.Step {
	case reshard.StepServed:
		fmt.Fprintf(stdout, "%s is already served by sink %s (routing generation %d): nothing to do\n", p.Name, f.sink, m.Generation)
		return exitOK, nil
	case reshard.StepCleanup:
		return reshardCleanup(ctx, m, p, stdout)
	case reshard.StepStart:
		describeReshard(stdout, p, m.From, f.sink, m.Pieces(), m.Old, m.New)
		if !f.yes && !confirm(stdout) {
			return exitUsage, errors.New("not confirmed: give --yes to run without asking")
		}
	}
	result, err := m.Run(ctx)
	if err != nil {
		return exitProblem, err
	}
	fmt.Fprintf(stdout, "%s now applies through sink %s (generation %d); set projections.%s.sink: %s in the config\n", p.Name, f.sink, result.Generation, p.Name, f.sink)
	if f.cleanup {
		if code, err := reshardCleanup(ctx, m, p, stdout); err != nil {
			return code, err
		}
	}
	fmt.Fprintf(stdout, "reshard of %s done: fence %d ms, %d rows copied (%.0f rows/s)\n", p.Name, result.Fence.Milliseconds(), result.RowsCopied, result.FillRate)
	return exitOK, nil
}

// reshardRequest wires the reshard of p that the flags ask.
func reshardRequest(cfg config.Config, p *projections.Projection, f reshardFlags,
	open func(context.Context, string) (*sinks.Sharded, error), log *slog.Logger, stderr io.Writer) reshard.Request {
	projLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The new shards' projector follows the source's schema as the
	// daemon's do: a column widened during the fill is widened there too.
	p.SourceTypes = func(ctx context.Context) (projections.Types, error) { return sourceTypes(ctx, cfg, p) }
	return reshard.Request{To: f.sink, Fill: f.fill, Cleanup: f.cleanup, Sinks: cfg.Sinks, Open: open,
		Recorded: func(ctx context.Context) []reshard.Status {
			rr := newReshardReader(cfg)
			defer rr.close()
			others, _ := rr.read(ctx)
			return others
		},
		Options: reshard.Options{
			Topics:      rebuild.Kafka{Brokers: cfg.Kafka.Brokers},
			SourceTypes: func(ctx context.Context) (projections.Types, error) { return sourceTypes(ctx, cfg, p) },
			Projector: projector.Options{Brokers: cfg.Kafka.Brokers,
				MaxMessageBytes: cfg.Kafka.MaxMessageBytes, Rejected: sinks.Rejected},
			ProjectorLog: func() *slog.Logger { return projLog },
			Log:          log,
			Progress:     progressLine(stderr, f.progressEvery, cfg.Log, log),
			ChunkRows:    f.chunkRows,
			PauseAt:      os.Getenv(reshardPauseEnv),
		}}
}

func reshardCleanup(ctx context.Context, m *reshard.Move, p *projections.Projection, stdout io.Writer) (int, error) {
	deleted, dropped, err := m.Cleanup(ctx)
	if err != nil {
		return exitProblem, err
	}
	fmt.Fprintf(stdout, "cleaned up %s: %d rows deleted from the servers that no longer serve them\n", p.Name, deleted)
	if len(dropped) > 0 {
		fmt.Fprintf(stdout, "dropped %s's tables from %s, which the new sink does not use\n", p.Name, strings.Join(dropped, ", "))
	}
	return exitOK, nil
}

// describeReshard prints what the reshard will do.
func describeReshard(w io.Writer, p *projections.Projection, from, to string, pieces []reshard.Piece, oldSink, newSink *sinks.Sharded) {
	fmt.Fprintf(w, "reshard %s from sink %s (%s) to sink %s (%s)\n", p.Name, from, strings.Join(oldSink.Ranges(), ","), to, strings.Join(newSink.Ranges(), ","))
	if len(pieces) == 0 {
		fmt.Fprintln(w, "  no key range moves: every new shard's server holds its range already")
	}
	for _, pc := range pieces {
		var src []string
		for _, i := range pc.From {
			src = append(src, oldSink.Shards[i].Range.Text)
		}
		fmt.Fprintf(w, "  fill %s on shard %s from shard(s) %s of %s\n", pc.Text, newSink.Shards[pc.To].Range.Text, strings.Join(src, ","), from)
	}
}

// confirm asks on stdin; false when stdin is not a terminal.
func confirm(w io.Writer) bool {
	if !isTerminal(os.Stdin) {
		return false
	}
	fmt.Fprint(w, "proceed? [y/N] ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
}
