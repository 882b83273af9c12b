package main

// readside reshard: its flags, its checks and what it prints. The phases
// are package reshard's; the design and the argument are in
// docs/ARCHITECTURE.md, "Resharding"; the operator's view in
// docs/operations.md, "Resharding".

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
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
func (f reshardFlags) check() string {
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
	fs := newFlagSet("reshard")
	var common commonFlags
	common.register(fs)
	var f reshardFlags
	fs.StringVar(&f.name, "projection", "", "the projection to move (required)")
	fs.StringVar(&f.sink, "sink", "", "the sink to move it to, as in the config (required)")
	fs.StringVar(&f.to, "to", "", "that sink's key ranges, comma separated, to confirm them (required)")
	fs.StringVar(&f.fill, "fill", reshard.FillCopy, "how the moving key ranges are filled: copy (their rows, then the topics from where they were copied) or topics (from the earliest offsets)")
	fs.BoolVar(&f.cleanup, "cleanup", false, "after the cutover (now or later), delete the rows the old sink's servers no longer serve")
	fs.BoolVar(&f.yes, "yes", false, "do not ask before starting")
	fs.DurationVar(&f.progressEvery, "progress-every", 5*time.Second, "progress line period when stderr is not a terminal")
	fs.IntVar(&f.chunkRows, "chunk-rows", 10000, "rows read at a time by the copy, the check and the cleanup")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if problem := f.check(); problem != "" {
		fmt.Fprintln(stderr, "readside reshard: "+problem)
		return exitUsage
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "readside reshard: %v\n", err)
		return exitUsage
	}
	if len(cfg.Kafka.Brokers) == 0 {
		cfg.Kafka.Brokers = []string{cfg.Kafka.EmbeddedListen}
	}
	log := newLogger(cfg.Log, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, code := reshardProjection(cfg, f.name, stderr)
	if p == nil {
		return code
	}
	if problem := reshardTarget(cfg, f); problem != "" {
		fmt.Fprintln(stderr, "readside reshard: "+problem)
		return exitUsage
	}
	if err := reshard.Refuse(p); err != nil {
		fmt.Fprintf(stderr, "readside reshard: %v\n", err)
		return exitUsage
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
		s, err := sinks.OpenSharded(ctx, name, cfg.Sinks[name])
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", name, err)
		}
		opened[name] = s
		return s, nil
	}
	code, err = reshardRun(ctx, cfg, p, f, open, log, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "readside reshard: %v\n", err)
	}
	return code
}

// reshardProjection is the projection the operator named, or nil and the
// exit code after saying why not.
func reshardProjection(cfg config.Config, name string, stderr io.Writer) (*projections.Projection, int) {
	ps, err := projections.Compile(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "readside reshard:\n%v\n", err)
		return nil, exitUsage
	}
	var names []string
	for _, c := range ps {
		names = append(names, c.Name)
		if c.Name == name {
			return c, exitOK
		}
	}
	fmt.Fprintf(stderr, "readside reshard: --projection %q is not declared; declared: %s\n", name, strings.Join(names, ", "))
	return nil, exitUsage
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
		r, err := projections.ParseKeyRange(strings.TrimSpace(want[i]))
		same = err == nil && r.Start == ranges[i].Start && r.End == ranges[i].End && r.Open == ranges[i].Open
	}
	if !same {
		return fmt.Sprintf("--to %s is not sink %s's key ranges in the config (%s): give --to %s, or change sinks.%s.shards", f.to, f.sink, strings.Join(have, ","), strings.Join(have, ","), f.sink)
	}
	return ""
}

// servers are the server of each shard of a config sink.
func servers(cfg config.Config, name string) ([]string, error) {
	sc := cfg.Sinks[name]
	dsns := []string{sc.DSN.Reveal()}
	if len(sc.Shards) > 0 {
		dsns = dsns[:0]
		for _, sh := range sc.Shards {
			dsns = append(dsns, sh.DSN.Reveal())
		}
	}
	var out []string
	for _, d := range dsns {
		s, err := reshard.Server(d)
		if err != nil {
			return nil, fmt.Errorf("sinks.%s: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// reshardRun decides what to do (reshard.Decide) and does it.
func reshardRun(ctx context.Context, cfg config.Config, p *projections.Projection, f reshardFlags,
	open func(context.Context, string) (*sinks.Sharded, error), log *slog.Logger, stdout, stderr io.Writer) (int, error) {
	newSink, err := open(ctx, f.sink)
	if err != nil {
		return exitProblem, err
	}
	served, gen := "", uint64(0)
	res, err := sinks.Resolve(ctx, cfg.Sinks, p, open)
	var unsettled *sinks.RoutingUnsettled
	switch {
	case errors.As(err, &unsettled):
	case err != nil:
		return exitProblem, err
	default:
		served, gen = res.Name, res.Generation
	}
	if err := newSink.Exec(ctx, sinks.ReshardDDL()); err != nil {
		return exitProblem, fmt.Errorf("sink %s: %w", f.sink, err)
	}
	st, pr, err := reshard.Load(ctx, newSink, p.Name)
	if err != nil {
		return exitProblem, err
	}
	recordedTo, phase := "", ""
	if st != nil {
		recordedTo, phase = st.ToSink, st.Phase
	}
	if !reshard.Active(phase) {
		// A reshard of p towards another sink keeps its row on that
		// sink's servers.
		rr := newReshardReader(cfg)
		others, _ := rr.read(ctx)
		rr.close()
		for _, o := range others {
			if o.Projection == p.Name && o.ToSink != f.sink && reshard.Active(o.Phase) {
				recordedTo, phase = o.ToSink, o.Phase
			}
		}
	}
	step, err := reshard.Decide(p.Name, served, f.sink, recordedTo, phase, f.cleanup)
	if err != nil {
		return exitProblem, err
	}
	if step == reshard.StepServed {
		fmt.Fprintf(stdout, "%s is already served by sink %s (routing generation %d): nothing to do\n", p.Name, f.sink, gen)
		return exitOK, nil
	}
	oldName := served
	if step != reshard.StepStart {
		oldName, gen = pr.FromSink, st.FromGeneration
		if _, ok := cfg.Sinks[oldName]; !ok {
			return exitUsage, fmt.Errorf("the reshard of %s moves it from sink %s, which the config no longer names: add sinks.%s back as it was", p.Name, oldName, oldName)
		}
	}
	oldSink, err := open(ctx, oldName)
	if err != nil {
		return exitProblem, err
	}
	if pr != nil && step != reshard.StepStart && strings.Join(oldSink.Ranges(), ",") != strings.Join(pr.FromRanges, ",") {
		return exitUsage, fmt.Errorf("sink %s has ranges %s in the config, but the reshard of %s recorded %s: restore sinks.%s as it was", oldName, strings.Join(oldSink.Ranges(), ","), p.Name, strings.Join(pr.FromRanges, ","), oldName)
	}
	oldServers, err := servers(cfg, oldName)
	if err != nil {
		return exitUsage, err
	}
	newServers, err := servers(cfg, f.sink)
	if err != nil {
		return exitUsage, err
	}
	fill := f.fill
	if pr != nil && step == reshard.StepResume {
		fill = pr.Fill // a resumed fill goes on as it began
	}
	projLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := reshard.New(p, reshard.Options{
		Old: oldSink, New: newSink, OldGeneration: gen, OldServers: oldServers, NewServers: newServers,
		Fill: fill, Topics: rebuild.Kafka{Brokers: cfg.Kafka.Brokers},
		SourceTypes: func(ctx context.Context) (projections.Types, error) { return sourceTypes(ctx, cfg, p) },
		Projector: projections.Options{Brokers: cfg.Kafka.Brokers,
			MaxMessageBytes: cfg.Kafka.MaxMessageBytes, Rejected: sinks.Rejected},
		ProjectorLog: func() *slog.Logger { return projLog },
		Log:          log,
		Progress:     reshard.Bar{Out: stderr, Every: f.progressEvery, TTY: isTerminal(stderr)},
		ChunkRows:    f.chunkRows,
		PauseAt:      os.Getenv(reshardPauseEnv),
	})
	if err != nil {
		return exitUsage, err
	}
	if step == reshard.StepCleanup {
		return reshardCleanup(ctx, r, p, pr, stdout)
	}
	if step == reshard.StepStart {
		describeReshard(stdout, p, oldName, f.sink, r.Pieces(), oldSink, newSink)
		if !f.yes && !confirm(stdout) {
			return exitUsage, errors.New("not confirmed: give --yes to run without asking")
		}
		pr = nil
	}
	result, err := r.Run(ctx, pr, phase)
	if err != nil {
		return exitProblem, err
	}
	fmt.Fprintf(stdout, "%s now applies through sink %s (generation %d); set projections.%s.sink: %s in the config\n", p.Name, f.sink, result.Generation, p.Name, f.sink)
	if f.cleanup {
		_, pr, err := reshard.Load(ctx, newSink, p.Name)
		if err != nil {
			return exitProblem, err
		}
		if code, err := reshardCleanup(ctx, r, p, pr, stdout); err != nil {
			return code, err
		}
	}
	fmt.Fprintf(stdout, "reshard of %s done: fence %d ms, %d rows copied (%.0f rows/s)\n", p.Name, result.Fence.Milliseconds(), result.RowsCopied, result.FillRate)
	return exitOK, nil
}

func reshardCleanup(ctx context.Context, r *reshard.Reshard, p *projections.Projection, pr *reshard.Progress, stdout io.Writer) (int, error) {
	if err := r.Cleanup(ctx, pr); err != nil {
		return exitProblem, err
	}
	fmt.Fprintf(stdout, "cleaned up %s: %d rows deleted from the servers that no longer serve them\n", p.Name, pr.RowsDeleted)
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
