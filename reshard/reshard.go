// Package reshard moves a projection to another sink online (`readside
// reshard`): the key ranges a NEW shard does not already hold (pieces.go)
// are filled there, from the topics or by copying the OLD shards' rows and
// catching up from the offsets they were copied at, while the live
// projector keeps applying to OLD; the moved pieces are verified; then a
// short fence on OLD's servers records a new routing generation that
// names NEW everywhere, and the live projectors follow it (the daemon
// re-resolves the projection's sink). --cleanup deletes the rows OLD's
// servers no longer serve. Every phase is recorded in `_readside_reshards`
// and every step is safe to repeat, so a rerun after kill -9 resumes.
// Prepare (move.go) is the entry point of a run: it decides the step from
// the routing and what is recorded. The argument is in
// docs/design/resharding.md, "Resharding"; the operator's view in
// docs/operations.md.
package reshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/rebuild"
	"github.com/readside/readside/sinks"
)

// Options are what a reshard needs besides the projection.
type Options struct {
	// Old serves the projection now, at OldGeneration; New is where it
	// goes. Servers are each shard's server (Server), in shard order.
	Old, New               *sinks.Sharded
	OldGeneration          uint64
	OldServers, NewServers []string
	Fill                   string // FillCopy or FillTopics
	Topics                 rebuild.Topics
	// SourceTypes reads the source column definitions NEW's read table
	// is typed from.
	SourceTypes  func(context.Context) (projections.Types, error)
	Projector    projector.Options // its Log is replaced by ProjectorLog's
	ProjectorLog func() *slog.Logger
	Log          *slog.Logger
	Progress     progress.Line
	// ChunkRows is how many rows a copy or cleanup reads at a time.
	ChunkRows int
	// CheckRounds bound the re-checks of a moved row that differs.
	CheckRounds int
	// PauseAt, when set (tests only), makes the run wait there until its
	// context ends: "filling" after the first copied chunk, "cutover"
	// with the fence held, "cutover-partial" once the first of several OLD
	// servers took the new generation.
	PauseAt string
}

// Reshard is one projection's reshard.
type Reshard struct {
	p      *projections.Projection
	fill   *projections.Projection // P under the fill identity
	o      Options
	pieces []Piece
	st     *store
	phase  string
	// mu guards pr while pieces are copied at once.
	mu sync.Mutex
	pr *Progress
}

// Refuse says why p cannot be resharded online to sink to, of shards
// shards (nil: it can). No I/O; what depends on the sinks' servers and
// tables is refused by New (RefuseServers) and Run (the contributions'
// format).
func Refuse(p *projections.Projection, to string, shards int) error {
	if len(p.Name+FillSuffix) > 190 {
		return fmt.Errorf("projection name %s is too long for its fill identity %s%s (190 characters)", p.Name, p.Name, FillSuffix)
	}
	if shards > 1 && p.ShardBy == "" && !p.Replicated {
		// Its rows have no keyspace id: every one would route to the
		// first shard, and the config naming the new sink would not load.
		what := "one of its key columns"
		if p.Aggregation != nil {
			what = "one of its group columns of " + p.SourceDB + "." + p.SourceTbl + " itself, not a joined parent's"
		}
		return fmt.Errorf("projection %s has no shard_by, and sink %s has %d shards: its rows would all stay on the first shard, and projections.%s.sink: %s would not load. "+
			"Set projections.%s.shard_by (%s) in the config and restart readside run (the read table does not change), then run readside reshard again",
			p.Name, to, shards, p.Name, to, p.Name, what)
	}
	return nil
}

// RefuseServers says why p cannot move from the OLD shards old to the NEW
// shards new (nil: it can), given the pieces: an aggregate's pieces must
// land on databases new to p. On a database that keeps an OLD shard the
// live projector and the fill would share the contributions table, and
// only whichever stores a change first sees the contribution's old group,
// so that one would have to move it in every group row the database
// holds, the OLD range's and the pieces' alike, which the live projector
// does not know of (docs/design/resharding.md, "Aggregates and children").
func RefuseServers(p *projections.Projection, from, to string, old, new []Shard, pieces []Piece) error {
	if p.Aggregation == nil {
		return nil
	}
	var shared []string
	seen := map[int]bool{}
	for _, pc := range pieces {
		if seen[pc.To] {
			continue
		}
		for i, o := range old {
			if o.Server == new[pc.To].Server {
				seen[pc.To] = true
				shared = append(shared, fmt.Sprintf("shard %s of sink %s would fill %s on database %s, which keeps shard %s of sink %s",
					new[pc.To].Range.Text, to, pc.Text, new[pc.To].Server, old[i].Range.Text, from))
				break
			}
		}
	}
	if len(shared) == 0 {
		return nil
	}
	return fmt.Errorf("projection %s is %s, which readside reshard moves only onto databases new to it: %s. "+
		"Put those shards of sink %s on databases (address and database name) that sink %s does not use, "+
		"or move it with downtime: set projections.%s.sink: %s in the config and restart readside run, which creates its tables on %s and fills them from the topics' earliest offsets "+
		"(its tables on %s stay until you drop them)",
		p.Name, stateForm(p), strings.Join(shared, "; "), to, from, p.Name, to, to, from)
}

// stateForm names p's aggregate form ("" when it is none).
func stateForm(p *projections.Projection) string {
	ag := p.Aggregation
	if ag == nil {
		return ""
	}
	var parts []string
	if len(ag.Joined) > 0 {
		parts = append(parts, "groups from joined parents")
	}
	for _, a := range ag.Aggregates {
		if a.Distinct() {
			parts = append(parts, strings.TrimSuffix(string(a.Func), "_distinct")+"(distinct) in "+a.Column)
		}
	}
	if len(parts) > 0 {
		return "an aggregate projection (group_by, with " + strings.Join(parts, ", ") + ")"
	}
	return "an aggregate projection (group_by)"
}

// New validates and does no I/O.
func New(p *projections.Projection, o Options) (*Reshard, error) {
	switch {
	case o.Old == nil || o.New == nil || o.Topics == nil || o.SourceTypes == nil || o.ProjectorLog == nil || o.Log == nil || o.Progress.Out == nil:
		return nil, errors.New("reshard: incomplete options")
	case len(o.OldServers) != len(o.Old.Shards) || len(o.NewServers) != len(o.New.Shards):
		return nil, errors.New("reshard: a server per shard is needed")
	case o.Fill != FillCopy && o.Fill != FillTopics:
		return nil, fmt.Errorf("--fill %q: want copy or topics", o.Fill)
	}
	if err := Refuse(p, o.New.Name, len(o.New.Shards)); err != nil {
		return nil, err
	}
	if o.ChunkRows == 0 {
		o.ChunkRows = 10000
	}
	if o.CheckRounds == 0 {
		o.CheckRounds = 30
	}
	var old, new []Shard
	for i, sh := range o.Old.Shards {
		old = append(old, Shard{Range: sh.Range, Server: o.OldServers[i]})
	}
	for i, sh := range o.New.Shards {
		new = append(new, Shard{Range: sh.Range, Server: o.NewServers[i]})
	}
	fill := p.WithProgressName(p.Name + FillSuffix)
	// The fill copies parents into the rows it moves in its own batches:
	// its sink runs no background fan-out.
	fill.FanOut = projections.FanOutInBatch
	r := &Reshard{p: p, fill: fill, o: o,
		pieces: Pieces(old, new, p.Replicated, p.Replicated)}
	if err := RefuseServers(p, o.Old.Name, o.New.Name, old, new, r.pieces); err != nil {
		return nil, err
	}
	r.st = &store{new: o.New, state: sinks.ReshardState{Projection: p.Name, FromGeneration: o.OldGeneration,
		ToSink: o.New.Name, ToRanges: keyspace.RangesText(o.New.Ranges())}}
	return r, nil
}

// Pieces are the key ranges the reshard fills.
func (r *Reshard) Pieces() []Piece { return r.pieces }

// Generation is the routing generation the cutover records.
func (r *Reshard) Generation() uint64 { return r.o.OldGeneration + 1 }

// Result is what a finished reshard reports.
type Result struct {
	Generation uint64
	Fence      time.Duration
	RowsCopied int64
	FillRate   float64 // rows per second of the fill (copy), 0 when unknown
}

// Run runs the reshard from the phase recorded for it (from the start
// when none), through the cutover. resume is the recorded progress of an
// unfinished reshard to NEW (Load), nil to start.
func (r *Reshard) Run(ctx context.Context, resume *Progress, phase string) (Result, error) {
	if resume != nil && Active(phase) {
		r.pr, r.phase = resume, phase
		if err := r.adoptPieces(); err != nil {
			return Result{}, err
		}
		r.o.Log.Info("resuming a reshard", "projection", r.p.Name, "to", r.o.New.Name, "phase", phase)
	} else {
		r.pr = &Progress{FromSink: r.o.Old.Name, FromRanges: r.o.Old.Ranges(), Fill: r.o.Fill}
		for _, pc := range r.pieces {
			pp := PieceProgress{Piece: pc}
			for _, from := range pc.From {
				pp.Sources = append(pp.Sources, SourceProgress{From: from})
			}
			r.pr.Pieces = append(r.pr.Pieces, pp)
		}
		r.phase = PhaseFilling
		if err := r.dropEarlierCopies(ctx); err != nil {
			return Result{}, err
		}
	}
	if err := r.refuseOldContributions(ctx); err != nil {
		return Result{}, err
	}
	if err := r.prepare(ctx); err != nil {
		return Result{}, err
	}
	if err := r.st.save(ctx, r.phase, r.pr); err != nil {
		return Result{}, err
	}
	f := r.newFiller()
	defer f.stop()
	if r.phase == PhaseFilling {
		if err := r.runFill(ctx, f); err != nil {
			return Result{}, err
		}
		r.phase = PhaseCatchingUp
		if err := r.st.save(ctx, r.phase, r.pr); err != nil {
			return Result{}, err
		}
	}
	if err := f.start(ctx); err != nil {
		return Result{}, err
	}
	if r.phase == PhaseCatchingUp {
		if err := r.checkPieces(ctx, f); err != nil {
			return Result{}, err
		}
		r.phase = PhaseCutover
		if err := r.st.save(ctx, r.phase, r.pr); err != nil {
			return Result{}, err
		}
	}
	fence, err := r.cutover(ctx, f)
	if err != nil {
		return Result{}, err
	}
	if fence > 0 {
		r.pr.FenceMS = fence.Milliseconds()
	}
	r.phase = PhaseDone
	if err := r.st.save(ctx, r.phase, r.pr); err != nil {
		return Result{}, err
	}
	return Result{Generation: r.Generation(), Fence: time.Duration(r.pr.FenceMS) * time.Millisecond,
		RowsCopied: r.pr.RowsCopied, FillRate: r.pr.FillRate}, nil
}

// refuseOldContributions refuses an aggregate whose contributions table
// on an OLD shard was made before every shard stored every contribution's
// group (sinks.StoresEveryGroup): it holds other shards' groups as NULL,
// and a copy of it would lose them.
func (r *Reshard) refuseOldContributions(ctx context.Context) error {
	if r.p.Aggregation == nil || r.o.Fill != FillCopy {
		return nil
	}
	var old []string
	for _, sh := range r.o.Old.Shards {
		ok, err := sh.StoresEveryGroup(ctx, r.p)
		if err != nil {
			return fmt.Errorf("shard %s of sink %s: %w", sh.Range.Text, r.o.Old.Name, err)
		}
		if !ok {
			old = append(old, sh.Range.Text)
		}
	}
	if len(old) == 0 {
		return nil
	}
	return fmt.Errorf("the contributions table %s of projection %s on shard %s of sink %s was made before every shard stored every contribution's group (its comment does not end with%s), "+
		"so a copy of it would lose the groups of the other shards: run readside replay --rebuild --projection %s first (its new tables store every group), then rerun the reshard (or reshard with --fill topics, which copies nothing)",
		r.p.ContributionsTable(), r.p.Name, strings.Join(old, ", "), r.o.Old.Name, sinks.EveryGroupMark, r.p.Name)
}

// dropEarlierCopies removes, as a reshard starts, what an earlier
// generation left of p on NEW shards that no OLD shard uses (a reshard
// away from them without --cleanup): nothing there is served, and the
// copy holds rows the source deleted since, which the fill's upserts
// would keep and the check would then find differing for good.
func (r *Reshard) dropEarlierCopies(ctx context.Context) error {
	for i, sh := range r.o.New.Shards {
		if !r.newOnly(i) {
			continue
		}
		if err := sh.DropProjection(ctx, r.p); err != nil {
			return fmt.Errorf("removing an earlier copy of %s from shard %s of sink %s: %w", r.p.Name, sh.Range.Text, r.o.New.Name, err)
		}
	}
	return nil
}

// adoptPieces checks that the recorded pieces are the ones the config
// gives now (the same NEW ranges on the same servers).
func (r *Reshard) adoptPieces() error {
	var had, have []string
	for _, pp := range r.pr.Pieces {
		had = append(had, fmt.Sprintf("%d:%s", pp.To, pp.Text))
	}
	for i, pc := range r.pieces {
		have = append(have, fmt.Sprintf("%d:%s", pc.To, pc.Text))
		if i < len(r.pr.Pieces) {
			r.pr.Pieces[i].Range = pc.Range
		}
	}
	if !slices.Equal(had, have) {
		return fmt.Errorf("the reshard of %s in progress fills %v, but the config now gives %v: restore sinks.%s and sinks.%s as they were when it started", r.p.Name, had, have, r.pr.FromSink, r.o.New.Name)
	}
	return nil
}

// prepare creates the read table and bookkeeping on every server of NEW
// (and the reshard's table on every server of both sinks).
func (r *Reshard) prepare(ctx context.Context) error {
	types, err := r.o.SourceTypes(ctx)
	if err != nil {
		return fmt.Errorf("reading the source schema of %s: %w", r.p.Name, err)
	}
	if err := r.o.Old.Exec(ctx, sinks.ReshardDDL()); err != nil {
		return fmt.Errorf("sink %s: %w", r.o.Old.Name, err)
	}
	// The routing row the fence will lock, on every OLD server, long
	// before the cutover. At generation 0 it names no sink, as a missing
	// row does (the config's sink serves the projection).
	name, ranges := r.o.Old.Name, r.o.Old.Ranges()
	if r.o.OldGeneration == 0 {
		name, ranges = "", nil
	}
	for _, sh := range r.o.Old.Shards {
		if err := sh.EnsureRouting(ctx, r.p.Name, r.o.OldGeneration, name, ranges); err != nil {
			return fmt.Errorf("shard %s of sink %s: %w", sh.Range.Text, r.o.Old.Name, err)
		}
	}
	if err := r.o.New.Exec(ctx, append(sinks.ReshardDDL(), sinks.DDL(r.p, types)...)); err != nil {
		return fmt.Errorf("creating the read table of %s on sink %s: %w", r.p.Name, r.o.New.Name, err)
	}
	// Tables a run before this one created are brought to the source's
	// schema now: a column the source widened since then (the live
	// projector widened OLD's) would refuse the copied rows and state.
	ran, refused, err := r.o.New.FollowSchema(ctx, r.p, types)
	if err != nil {
		return fmt.Errorf("bringing the tables of %s on sink %s to the source's schema: %w", r.p.Name, r.o.New.Name, err)
	}
	for _, c := range ran {
		r.o.Log.Info("reshard: table on the new shards altered to follow the source's schema", "projection", r.p.Name, "column", c.Column, "statement", c.Alter)
	}
	if len(refused) > 0 {
		var whys []string
		for _, c := range refused {
			whys = append(whys, fmt.Sprintf("%s: %s (%s)", c.Column, c.Why, c.Alter))
		}
		return fmt.Errorf("the tables of %s on sink %s cannot follow the source's schema without losing values: %s", r.p.Name, r.o.New.Name, strings.Join(whys, "; "))
	}
	return r.o.New.CheckReadTable(ctx, r.p)
}
