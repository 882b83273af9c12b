package main

// readside replay: an offset reset for one projection (the daemon's
// projectors pick it up between batches), and --rebuild: a shadow table
// filled from the topics and swapped in with RENAME TABLE. The design and
// the argument for the swap are in docs/ARCHITECTURE.md, "Replay and
// rebuild"; the operator's view in docs/operations.md.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

const (
	rebuildSuffix = "__rebuild"
	oldSuffix     = "__old"
)

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay")
	var common commonFlags
	common.register(fs)
	name := fs.String("projection", "", "the projection to replay (required)")
	from := fs.String("from", "", "earliest, an RFC3339 time, or partition:offset,... (topic/partition:offset for a joined parent's topic)")
	rebuild := fs.Bool("rebuild", false, "fill a shadow table from the topics and swap it in (RENAME TABLE) once caught up")
	backfill := fs.String("backfill", "", "fill read columns added to the projection (comma-separated) into the existing rows, from the topics")
	dropOld := fs.Bool("drop-old", false, "drop the <table>__old a rebuild kept (after --rebuild finishes, or alone)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for a running projector to take the reset; exit 1 if none does")
	cancel := fs.Bool("cancel", false, "remove the projection's pending replay requests (those no projector has taken yet)")
	pending := fs.Bool("pending", false, "list the projection's pending replay requests")
	progressEvery := fs.Duration("progress-every", 5*time.Second, "progress line period when stderr is not a terminal")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if *name == "" {
		fmt.Fprintln(stderr, "readside replay: --projection is required (a name under projections: in the config)")
		return exitUsage
	}
	if !*rebuild && !*dropOld && !*cancel && !*pending && *from == "" && *backfill == "" {
		fmt.Fprintln(stderr, "readside replay: give --from earliest|RFC3339|partition:offset,..., or --rebuild, --backfill COLUMNS, --drop-old, --pending or --cancel")
		return exitUsage
	}
	if *backfill != "" && (*from != "" || *rebuild || *dropOld || *cancel || *pending) {
		fmt.Fprintln(stderr, "readside replay: --backfill fills columns into the existing rows on its own: give it without --from, --rebuild, --drop-old, --pending or --cancel")
		return exitUsage
	}
	if (*cancel || *pending) && (*from != "" || *rebuild || *dropOld) {
		fmt.Fprintln(stderr, "readside replay: --cancel and --pending act on the pending requests only: give them without --from, --rebuild or --drop-old")
		return exitUsage
	}
	if *rebuild && *from != "" {
		fmt.Fprintln(stderr, "readside replay: --rebuild always reads the topics from the earliest offset: drop --from")
		return exitUsage
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "readside replay: %v\n", err)
		return exitUsage
	}
	if len(cfg.Kafka.Brokers) == 0 {
		// The daemon's embedded broker: replay is a client of it.
		cfg.Kafka.Brokers = []string{cfg.Kafka.EmbeddedListen}
	}
	log := newLogger(cfg.Log, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ps, err := projections.Compile(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "readside replay:\n%v\n", err)
		return exitUsage
	}
	var p *projections.Projection
	var names []string
	for _, c := range ps {
		names = append(names, c.Name)
		if c.Name == *name {
			p = c
		}
	}
	if p == nil {
		fmt.Fprintf(stderr, "readside replay: --projection %q is not declared; declared: %s\n", *name, strings.Join(names, ", "))
		return exitUsage
	}
	sink, err := sinks.OpenSharded(ctx, p.Sink, cfg.Sinks[p.Sink])
	if err != nil {
		fmt.Fprintf(stderr, "readside replay: sink %s: %v\n", p.Sink, err)
		return exitProblem
	}
	defer sink.Close()
	if err := sink.Exec(ctx, sinks.Bookkeeping()); err != nil {
		fmt.Fprintf(stderr, "readside replay: %v\n", err)
		return exitProblem
	}
	switch {
	case *cancel:
		err = cancelReplays(ctx, p, sink, stdout)
	case *pending:
		err = listPending(ctx, p, sink, stdout)
	case *backfill != "":
		r := &rebuilder{cfg: cfg, p: p, sink: sink, log: log, out: stderr, every: *progressEvery, tty: isTerminal(stderr)}
		err = r.backfill(ctx, strings.Split(*backfill, ","), stdout)
	case *from != "":
		err = resetOffsets(ctx, cfg, p, sink, *from, *timeout, stdout)
	case *rebuild:
		r := &rebuilder{cfg: cfg, p: p, sink: sink, log: log, out: stderr, every: *progressEvery, tty: isTerminal(stderr)}
		err = r.run(ctx)
		if err == nil {
			fmt.Fprintf(stdout, "rebuilt %s: %s now holds the rebuilt rows; the previous table is %s (drop it with --drop-old)\n", p.Name, p.Table, p.Table+oldSuffix)
		}
	}
	if err == nil && *dropOld {
		if err = sink.DropTable(ctx, p.Table+oldSuffix); err == nil {
			fmt.Fprintf(stdout, "dropped %s on every shard of sink %s\n", p.Table+oldSuffix, p.Sink)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "readside replay: %v\n", err)
		return exitProblem
	}
	return exitOK
}

// rebuilder runs one `replay --rebuild`.
type rebuilder struct {
	cfg   config.Config
	p     *projections.Projection
	sink  *sinks.Sharded
	log   *slog.Logger
	out   io.Writer
	every time.Duration
	tty   bool
}

// shadow is the rebuild's own projection: same declaration, its own
// identity (offsets, tombstones, truncations, join state) and table.
func (r *rebuilder) shadow(table string) *projections.Projection {
	s := *r.p
	s.Name = r.p.Name + rebuildSuffix
	s.Table = table
	return &s
}

func (r *rebuilder) run(ctx context.Context) error {
	live, shadowTable, old := r.p.Table, r.p.Table+rebuildSuffix, r.p.Table+oldSuffix
	if len(old) > 64 || len(shadowTable) > 64 || len(r.p.Name+rebuildSuffix) > 190 {
		return fmt.Errorf("table %s is too long for the %s / %s names a rebuild needs (64 characters): shorten projections.%s.table", live, shadowTable, old, r.p.Name)
	}
	phase, err := r.sink.RebuildPhase(ctx, r.p.Name)
	if err != nil {
		return err
	}
	if phase == "" {
		for i := range r.sink.Shards {
			if ok, err := r.sink.TableExists(ctx, i, old); err != nil {
				return err
			} else if ok {
				return fmt.Errorf("%s exists from an earlier rebuild: drop it first (readside replay --projection %s --drop-old)", old, r.p.Name)
			}
		}
		if err := r.sink.SetRebuildPhase(ctx, r.p.Name, "filling"); err != nil {
			return err
		}
		phase = "filling"
	} else {
		r.log.Info("resuming a rebuild", "projection", r.p.Name, "phase", phase)
	}
	if phase == "filling" {
		if err := r.fill(ctx, live, shadowTable, old); err != nil {
			return err
		}
		if err := r.sink.SetRebuildPhase(ctx, r.p.Name, "catching-up"); err != nil {
			return err
		}
	}
	// After the swap: the live projector's offsets now, read after every
	// RENAME, bound what it may have applied to the old table and not to
	// this one. The shadow consumer goes on against the live name until
	// it has applied past them (re-applying what the live projector also
	// applied is harmless: version guards).
	target, err := r.sink.ShardOffsets(ctx, r.p)
	if err != nil {
		return err
	}
	if err := r.consumeUntil(ctx, r.shadow(live), r.sink, fixed(liveTarget(target)), 1, "catching up after the swap"); err != nil {
		return err
	}
	if err := r.sink.Forget(ctx, r.shadow(shadowTable)); err != nil {
		return err
	}
	return r.sink.SetRebuildPhase(ctx, r.p.Name, "")
}

// fill creates the shadow table, fills it until it has caught up with the
// live projector, and swaps it in on every shard.
func (r *rebuilder) fill(ctx context.Context, live, shadowTable, old string) error {
	// On every shard where the swap already happened (a crash after it),
	// the shadow is gone and live is the rebuilt table.
	var pending []int
	for i := range r.sink.Shards {
		ok, err := r.sink.TableExists(ctx, i, shadowTable)
		if err != nil {
			return err
		}
		swapped, err := r.sink.TableExists(ctx, i, old)
		if err != nil {
			return err
		}
		if ok || !swapped {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	shadow := r.shadow(shadowTable)
	if len(pending) == len(r.sink.Shards) {
		types, err := sourceTypes(ctx, r.cfg, r.p)
		if err != nil {
			return err
		}
		if err := r.sink.Exec(ctx, sinks.DDL(shadow, types)); err != nil {
			return fmt.Errorf("creating the shadow table %s: %w", shadowTable, err)
		}
		r.log.Info("rebuild: filling the shadow table from the earliest offsets", "projection", r.p.Name, "shadow", shadowTable)
		// The topics' end offsets, not the live projector's: they are
		// reached whatever the partitions hold at their end (commit
		// markers, nothing new); what arrives after the last round's
		// are applied after the swap (run).
		ends := func(ctx context.Context) (projections.Offsets, error) {
			return projections.EndOffsets(ctx, r.cfg.Kafka.Brokers, r.p)
		}
		if err := r.consumeUntil(ctx, shadow, r.sink, ends, followRounds, "filling "+shadowTable); err != nil {
			return err
		}
	}
	for _, i := range pending {
		if err := r.sink.Swap(ctx, i, live, shadowTable, old); err != nil {
			return fmt.Errorf("shard %s: RENAME TABLE %s TO %s, %s TO %s: %w", r.sink.Shards[i].Range.Text, live, old, shadowTable, live, err)
		}
	}
	r.log.Info("rebuild: swapped the shadow in", "projection", r.p.Name, "live", live, "old", old)
	return nil
}

// consumeUntil runs a projector for shadow, applying through sink, until
// it has applied, on every partition, everything before the offsets
// target gives (see caughtUp), then stops it after its last batch
// committed. Up to rounds times, a
// round that took longer than followAfter is followed by another to the
// offsets target gives then: records kept arriving meanwhile, and each
// round shortens what the next has to read. Every round's goal is fixed
// when it starts, so each ends.
func (r *rebuilder) consumeUntil(ctx context.Context, shadow *projections.Projection, sink projections.Sink, target func(context.Context) (projections.Offsets, error), rounds int, what string) error {
	goal, err := target(ctx)
	if err != nil {
		return err
	}
	roundStart := time.Now()
	// The Kafka client's group chatter would drown the progress lines.
	quiet := r.cfg.Log
	if quiet.Level != "debug" {
		quiet.Level = "warn"
	}
	pr, err := projections.NewProjector(shadow, sink, projections.Options{Brokers: r.cfg.Kafka.Brokers,
		TopicPrefix: r.cfg.Kafka.TopicPrefix, MaxMessageBytes: r.cfg.Kafka.MaxMessageBytes, Rejected: sinks.Rejected, Log: newLogger(quiet, r.out)})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pr.Run(pctx) }()
	stop := func() error { cancel(); return <-done }
	var lastLine progressLine
	for {
		select {
		case err := <-done:
			cancel()
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(250 * time.Millisecond):
		}
		stored, err := r.sink.ShardOffsets(ctx, shadow)
		if err != nil {
			_ = stop()
			return err
		}
		done, total, ok := caughtUp(stored, pr.Applied(), goal)
		if ok && rounds > 1 && time.Since(roundStart) > followAfter {
			rounds--
			if goal, err = target(ctx); err != nil {
				_ = stop()
				return err
			}
			roundStart = time.Now()
			continue
		}
		if ok {
			if err := stop(); err != nil {
				return err
			}
			r.report(what, total, total, nil)
			return nil
		}
		r.report(what, done, total, &lastLine)
	}
}

// followRounds and followAfter bound the fill's rounds (consumeUntil):
// the shadow is swapped in about as far behind as its last round took.
const (
	followRounds = 5
	followAfter  = time.Second
)

// fixed is a target that does not move.
func fixed(o projections.Offsets) func(context.Context) (projections.Offsets, error) {
	return func(context.Context) (projections.Offsets, error) { return o, nil }
}

// liveTarget is the highest offset the live projector stored on any
// shard, per partition: what it may have applied to the table a swap
// moved away.
func liveTarget(shards []projections.Offsets) projections.Offsets {
	want := projections.Offsets{}
	for _, g := range shards {
		for topic, parts := range g {
			for part, next := range parts {
				if cur, ok := want[topic][part]; !ok || next > cur {
					want.Set(topic, part, next)
				}
			}
		}
	}
	return want
}

// caughtUp decides whether the shadow has applied everything before
// target on every partition, and how far it is (offsets summed over the
// partitions). A partition's position is the further of the offset the
// shadow stored on every shard (the lowest of them: a shard without one
// is at 0) and where its running projector has applied through
// (applied). The stored offset alone never reaches an end offset whose
// last record is a commit marker; applied alone is unknown on a
// partition the projector found nothing new on.
func caughtUp(stored []projections.Offsets, applied, target projections.Offsets) (done, total int64, ok bool) {
	ok = true
	for topic, parts := range target {
		for part, next := range parts {
			low := int64(0)
			for i, h := range stored {
				v := h[topic][part] // absent: 0
				if i == 0 || v < low {
					low = v
				}
			}
			pos := max(low, applied[topic][part])
			total += next
			done += min(pos, next)
			if pos < next {
				ok = false
			}
		}
	}
	return done, total, ok
}

// progressLine is the last progress line printed.
type progressLine struct {
	at   time.Time
	done int64
}

// stillEvery is how often an unchanged progress line is printed again, so
// a wait that does not move still shows the command is alive.
const stillEvery = time.Minute

// report draws a progress bar on a terminal, else a line every r.every
// when the progress moved (or stillEvery when it did not); last nil: the
// final report.
func (r *rebuilder) report(what string, done, total int64, last *progressLine) {
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	if r.tty {
		const width = 30
		n := int(pct / 100 * width)
		fmt.Fprintf(r.out, "\r%s [%s%s] %5.1f%% %d/%d offsets", what, strings.Repeat("#", n), strings.Repeat("-", width-n), pct, done, total)
		if last == nil {
			fmt.Fprintln(r.out)
		}
		return
	}
	if last != nil && !last.at.IsZero() {
		since := time.Since(last.at)
		if since < r.every || (done == last.done && since < stillEvery) {
			return
		}
	}
	fmt.Fprintf(r.out, "%s %s: %.1f%% (%d of %d offsets)\n", time.Now().Format(time.RFC3339), what, pct, done, total)
	if last != nil {
		*last = progressLine{at: time.Now(), done: done}
	}
}

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
	src := sql.OpenDB(connector)
	defer src.Close()
	types, err := p.SourceColumns(ctx, src)
	if err != nil {
		return projections.Types{}, errors.Join(errors.New("reading the source schema for the shadow table"), err)
	}
	return types, nil
}
