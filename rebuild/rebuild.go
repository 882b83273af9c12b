// Package rebuild re-applies a projection's topics for `readside replay`:
// `--rebuild` fills a shadow table and swaps it in with RENAME TABLE,
// `--backfill` fills added columns into the rows already there,
// `--drop-old` drops the table a rebuild kept, and `--from` is resolved
// against what the broker holds before a replay request is stored
// (from.go). Both fills are a projector under an identity of their own,
// run until it has applied the topics up to offsets fixed when it started
// (consume.go). The design and the argument for the swap are in
// docs/design/replay.md, "Replay and rebuild" and "Backfilling an added
// column"; the operator's view in docs/operations.md.
package rebuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
)

const (
	// RebuildSuffix names the shadow: projection P__rebuild, table T__rebuild.
	RebuildSuffix = "__rebuild"
	// OldSuffix names the table a swap moves the live one to.
	OldSuffix = "__old"
)

// The phases a rebuild records (Store.SetPhase), so a rerun resumes.
const (
	phaseFilling    = "filling"
	phaseCatchingUp = "catching-up"
)

// Store is readside's own bookkeeping in the sink that a rebuild or a
// backfill reads and writes (sinks.Rebuilder). Calls are synchronous; an
// error leaves the run resumable: every step is safe to repeat.
type Store interface {
	// Phase is the recorded phase of the rebuild or backfill name ("" when none).
	Phase(ctx context.Context, name string) (string, error)
	// SetPhase records name's phase; "" removes it.
	SetPhase(ctx context.Context, name, phase string) error
	// ShardOffsets are p's stored offsets on each shard, in shard order.
	ShardOffsets(ctx context.Context, p *projections.Projection) ([]event.Offsets, error)
	// Forget removes everything kept for p on every shard: offsets,
	// tombstones, truncation floors, replay requests, join state tables.
	Forget(ctx context.Context, p *projections.Projection) error
}

// Tables are the read-table operations of a rebuild on the sink's shards
// (sinks.Rebuilder). Calls are synchronous.
type Tables interface {
	// Exists reports, per shard in shard order, whether table exists there.
	Exists(ctx context.Context, table string) ([]bool, error)
	// Create creates p's read table, with types, on every shard.
	Create(ctx context.Context, p *projections.Projection, types projections.Types) error
	// Swap renames live to old and shadow to live on shard i in one
	// statement, with the state tables that belong to each as p's read
	// table (sinks.StateTables): readers see the old table or the new
	// one, never neither. Its error names the shard and the statement.
	Swap(ctx context.Context, i int, p *projections.Projection, live, shadow, old string) error
	// Drop drops table, and the state tables that belong to it as p's
	// read table, on every shard where they exist.
	Drop(ctx context.Context, p *projections.Projection, table string) error
}

// Sink is the sink side of a rebuild and a backfill.
type Sink interface {
	Store
	Tables
	// MissingColumns are the columns of cols p's read table lacks on
	// some shard (the ALTER of `readside plan --apply` has not run there).
	MissingColumns(ctx context.Context, p *projections.Projection, cols []string) ([]string, error)
}

// Options are what a rebuild needs besides the projection and its sink.
type Options struct {
	// Apply is the sink a rebuild's projector applies through: the
	// projection's own sink, so the shadow gets what a live projector gets.
	Apply projections.Sink
	// Backfill makes the sink a backfill of cols applies through
	// (sinks.NewBackfill): it sets only those columns. No I/O.
	Backfill func(p *projections.Projection, cols []string) (projections.Sink, error)
	// Topics reads where the projection's topics start and end (Kafka).
	Topics Topics
	// SourceTypes reads the source column definitions the shadow table is
	// typed from.
	SourceTypes func(context.Context) (projections.Types, error)
	// Projector are the options of the projectors a rebuild runs; its Log
	// is replaced by ProjectorLog's.
	Projector projector.Options
	// ProjectorLog makes the logger of each projector when it starts.
	ProjectorLog func() *slog.Logger
	// Log takes the run's own lines.
	Log *slog.Logger
	// Progress is where a fill shows how far it is (Out: the operator's
	// stderr); each fill draws on a copy of its own.
	Progress progress.Line
	// PauseAt, when set (tests only), makes Run wait until its context
	// ends: "catching-up" once the shadow is swapped in and that phase
	// recorded, so a test sees a rebuild under way however fast it fills;
	// "filling" once the shadow table is created, before anything fills
	// it.
	PauseAt string
}

// Rebuild runs the rebuild, a backfill or the drop of the kept table of
// one projection.
type Rebuild struct {
	p    *projections.Projection
	sink Sink
	o    Options

	newProjector func(*projections.Projection, projections.Sink) (filler, error)
	poll         time.Duration // how often a fill's progress is read
	followAfter  time.Duration // a fill round longer than this is followed by another
}

// filler is what a fill needs of projector.Projector.
type filler interface {
	Run(ctx context.Context) error
	Applied() event.Offsets
}

// New validates and does no I/O.
func New(p *projections.Projection, sink Sink, o Options) (*Rebuild, error) {
	var missing []error
	for what, absent := range map[string]bool{
		"projection": p == nil, "sink": sink == nil, "Apply": o.Apply == nil, "Backfill": o.Backfill == nil,
		"Topics": o.Topics == nil, "SourceTypes": o.SourceTypes == nil, "ProjectorLog": o.ProjectorLog == nil,
		"Log": o.Log == nil, "Progress.Out": o.Progress.Out == nil,
	} {
		if absent {
			missing = append(missing, fmt.Errorf("rebuild: no %s", what))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	r := &Rebuild{p: p, sink: sink, o: o, poll: 250 * time.Millisecond, followAfter: followAfter}
	r.newProjector = func(p *projections.Projection, sink projections.Sink) (filler, error) {
		po := r.o.Projector
		po.Log = r.o.ProjectorLog()
		return projector.New(p, sink, po)
	}
	return r, nil
}

// OldTable is where a rebuild keeps p's previous read table.
func OldTable(p *projections.Projection) string { return p.Table + OldSuffix }

// shadow is the rebuild's own projection: same declaration, its own
// identity (offsets, tombstones, truncations, join state) and table.
func (r *Rebuild) shadow(table string) *projections.Projection {
	s := r.p.WithName(r.p.Name + RebuildSuffix)
	s.Table = table
	// Copied in its own batches: at the swap every row of the shadow
	// shows its parents, with no copy left waiting in a pending table
	// that the swap would leave behind.
	s.FanOut = projections.FanOutInBatch
	return s
}

// catchUp is the projection that applies, after the swap, what the live
// projector applied to the table the swap moved away: the shadow's
// offsets and consumer group (it goes on from where the fill stopped)
// under the live projection's name, so it reads and writes the live
// projection's tombstones, truncation floors, join state and group lock
// (the live projector writes the same table meanwhile). Under the
// shadow's own name a late record could undo a newer one the live
// projector had applied to the swapped-in table: an upsert of a row the
// live projector deleted would not see its tombstone, and an aggregate's
// regroup would move contributions by the shadow's older parent state.
// docs/design/replay.md, "Replay and rebuild".
func (r *Rebuild) catchUp(table string) *projections.Projection {
	s := r.p.WithProgressName(r.p.Name + RebuildSuffix)
	s.Table = table
	s.FanOut = projections.FanOutInBatch
	return s
}

// Run rebuilds the read table: the shadow filled from the earliest
// offsets, swapped in on every shard, then caught up with what the live
// projector applied to the table the swap moved away. A rerun after a
// crash resumes from the recorded phase.
func (r *Rebuild) Run(ctx context.Context) error {
	live, shadowTable, old := r.p.Table, r.p.Table+RebuildSuffix, OldTable(r.p)
	if len(old) > 64 || len(shadowTable) > 64 || len(r.p.Name+RebuildSuffix) > 190 {
		return fmt.Errorf("table %s is too long for the %s / %s names a rebuild needs (64 characters): shorten projections.%s.table", live, shadowTable, old, r.p.Name)
	}
	phase, err := r.begin(ctx, old)
	if err != nil {
		return err
	}
	if phase == phaseFilling {
		if err := r.fill(ctx, live, shadowTable, old); err != nil {
			return err
		}
		if err := r.sink.SetPhase(ctx, r.p.Name, phaseCatchingUp); err != nil {
			return err
		}
	}
	if r.o.PauseAt == phaseCatchingUp {
		r.o.Log.Warn("rebuild: paused for a test", "phase", r.o.PauseAt)
		<-ctx.Done()
		return ctx.Err()
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
	if err := r.consumeUntil(ctx, r.catchUp(live), r.o.Apply, fixed(liveTarget(target)), 1, "catching up after the swap"); err != nil {
		return err
	}
	if err := r.sink.Forget(ctx, r.shadow(shadowTable)); err != nil {
		return err
	}
	return r.sink.SetPhase(ctx, r.p.Name, "")
}

// begin returns the phase to run from: the recorded one of an unfinished
// rebuild, else filling, recorded once no shard holds an old table a
// swap would have to overwrite.
func (r *Rebuild) begin(ctx context.Context, old string) (string, error) {
	phase, err := r.sink.Phase(ctx, r.p.Name)
	if err != nil {
		return "", err
	}
	if phase != "" {
		r.o.Log.Info("resuming a rebuild", "projection", r.p.Name, "phase", phase)
		return phase, nil
	}
	exists, err := r.sink.Exists(ctx, old)
	if err != nil {
		return "", err
	}
	for _, ok := range exists {
		if ok {
			return "", fmt.Errorf("%s exists from an earlier rebuild: drop it first (readside replay --projection %s --drop-old)", old, r.p.Name)
		}
	}
	return phaseFilling, r.sink.SetPhase(ctx, r.p.Name, phaseFilling)
}

// fill creates the shadow table, fills it until it has caught up with the
// topics, and swaps it in on every shard.
func (r *Rebuild) fill(ctx context.Context, live, shadowTable, old string) error {
	pending, shards, err := r.unswapped(ctx, shadowTable, old)
	if err != nil || len(pending) == 0 {
		return err
	}
	if len(pending) == shards {
		if err := r.fillShadow(ctx, shadowTable); err != nil {
			return err
		}
	}
	if err := r.createGoneLive(ctx, live); err != nil {
		return err
	}
	for _, i := range pending {
		if err := r.sink.Swap(ctx, i, r.p, live, shadowTable, old); err != nil {
			return err
		}
	}
	r.o.Log.Info("rebuild: swapped the shadow in", "projection", r.p.Name, "live", live, "old", old)
	return nil
}

// createGoneLive creates the live table empty where it is gone (dropped
// after it was filled, which the daemon refuses to create again:
// sinks.DroppedReadTable), so that every shard swaps the same way and the
// empty table becomes the old one.
func (r *Rebuild) createGoneLive(ctx context.Context, live string) error {
	lives, err := r.sink.Exists(ctx, live)
	if err != nil || !slices.Contains(lives, false) {
		return err
	}
	types, err := r.o.SourceTypes(ctx)
	if err != nil {
		return err
	}
	r.o.Log.Info("rebuild: the read table is gone; creating it empty to swap the shadow in", "projection", r.p.Name, "table", live)
	if err := r.sink.Create(ctx, r.p, types); err != nil {
		return fmt.Errorf("creating the read table %s: %w", live, err)
	}
	return nil
}

// unswapped are the shards the swap is still to run on, out of shards: on
// a shard where it already ran (a crash after it), the shadow is gone and
// the old table is there.
func (r *Rebuild) unswapped(ctx context.Context, shadowTable, old string) (pending []int, shards int, err error) {
	shadows, err := r.sink.Exists(ctx, shadowTable)
	if err != nil {
		return nil, 0, err
	}
	olds, err := r.sink.Exists(ctx, old)
	if err != nil {
		return nil, 0, err
	}
	for i := range shadows {
		if shadows[i] || !olds[i] {
			pending = append(pending, i)
		}
	}
	return pending, len(shadows), nil
}

// fillShadow creates the shadow table and fills it from the earliest
// offsets up to the topics' end offsets.
func (r *Rebuild) fillShadow(ctx context.Context, shadowTable string) error {
	shadow := r.shadow(shadowTable)
	types, err := r.o.SourceTypes(ctx)
	if err != nil {
		return err
	}
	if err := r.sink.Create(ctx, shadow, types); err != nil {
		return fmt.Errorf("creating the shadow table %s: %w", shadowTable, err)
	}
	// A shadow an interrupted run created is brought to the source's
	// schema first (a column widened since); while it fills, its
	// projector follows the schema as the daemon's do.
	if sf, ok := r.o.Apply.(projections.SchemaFollower); ok {
		ran, _, err := sf.FollowSchema(ctx, shadow, types)
		if err != nil {
			return fmt.Errorf("bringing the shadow table %s to the source's schema: %w", shadowTable, err)
		}
		for _, c := range ran {
			r.o.Log.Info("rebuild: shadow altered to follow the source's schema", "projection", r.p.Name, "column", c.Column, "statement", c.Alter)
		}
	}
	if r.o.PauseAt == phaseFilling {
		r.o.Log.Warn("rebuild: paused for a test", "phase", r.o.PauseAt)
		<-ctx.Done()
		return ctx.Err()
	}
	r.o.Log.Info("rebuild: filling the shadow table from the earliest offsets", "projection", r.p.Name, "shadow", shadowTable)
	// The topics' end offsets, not the live projector's: they are
	// reached whatever the partitions hold at their end (commit
	// markers, nothing new); what arrives after the last round's
	// are applied after the swap (Run).
	ends := func(ctx context.Context) (event.Offsets, error) {
		return r.o.Topics.EndOffsets(ctx, r.p)
	}
	return r.consumeUntil(ctx, shadow, r.o.Apply, ends, followRounds, "filling "+shadowTable)
}

// DropOld drops the table a rebuild kept (OldTable) on every shard.
func (r *Rebuild) DropOld(ctx context.Context) error {
	return r.sink.Drop(ctx, r.p, OldTable(r.p))
}
