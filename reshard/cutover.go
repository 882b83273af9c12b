package reshard

import (
	"context"
	"fmt"
	"time"

	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// pausePartial (Options.PauseAt) pauses after the first OLD server took
// the new generation and before the others.
const pausePartial = "cutover-partial"

// server is one MySQL server (and database) of OLD or NEW in the cutover.
type server struct {
	id       string
	db       *sinks.MySQL
	old      bool // serves the projection for OLD: a live projector writes here
	received bool // a NEW shard here received pieces (fill offsets to merge)
}

// servers are OLD's servers in shard order, then NEW's that are not OLD's:
// the cutover's order (the fence is on OLD's; NEW-only servers take the
// generation last, so a projector that resolves NEW finds it agreed only
// once every server has it).
func (r *Reshard) servers() []*server {
	var out []*server
	byID := map[string]*server{}
	add := func(id string, db *sinks.MySQL, old bool) *server {
		if s, ok := byID[id]; ok {
			return s
		}
		s := &server{id: id, db: db, old: old}
		byID[id] = s
		out = append(out, s)
		return s
	}
	for i, sh := range r.o.Old.Shards {
		add(r.o.OldServers[i], sh.MySQL, true)
	}
	for i, sh := range r.o.New.Shards {
		add(r.o.NewServers[i], sh.MySQL, false)
	}
	for _, pc := range r.pieces {
		byID[r.o.NewServers[pc.To]].received = true
	}
	return out
}

// cutover moves the projection to NEW: under the fence on every OLD
// server not yet moved, the fill catches up with what the live projector
// applied (the highest offset on any OLD server, per partition), then
// each server, OLD's first, makes the fill's offsets the projection's and
// records the new generation in one transaction. It returns how long the
// fence held OLD's applies (0 when this run took no fence: a rerun after
// OLD's servers had all moved).
func (r *Reshard) cutover(ctx context.Context, f *filler) (time.Duration, error) {
	gen := r.Generation()
	all := r.servers()
	var fenced []*sinks.Cutover
	var fencedSrv []*server
	defer func() {
		for _, c := range fenced {
			if c != nil {
				c.Rollback()
			}
		}
	}()
	var acquired time.Time
	target := projections.Offsets{}
	for _, s := range all {
		if !s.old {
			continue
		}
		c, err := s.db.BeginCutover(ctx, r.p.Name)
		if err != nil {
			return 0, fmt.Errorf("the fence on %s: %w", s.id, err)
		}
		if c.Generation >= gen {
			c.Rollback() // moved by an earlier run
			continue
		}
		if acquired.IsZero() {
			acquired = time.Now()
		}
		fenced, fencedSrv = append(fenced, c), append(fencedSrv, s)
		offs, err := c.Offsets(ctx, r.p.Name)
		if err != nil {
			return 0, err
		}
		for topic, parts := range offs {
			for part, next := range parts {
				if cur, ok := target[topic][part]; !ok || next > cur {
					target.Set(topic, part, next)
				}
			}
		}
	}
	if len(fenced) > 0 {
		r.o.Log.Info("reshard: fence held; the fill catches up with the live projector", "projection", r.p.Name, "servers", len(fenced))
		if err := f.waitFor(ctx, target, "cutover: catching up under the fence"); err != nil {
			return 0, err
		}
	}
	if err := f.stop(); err != nil && ctx.Err() == nil {
		return 0, fmt.Errorf("stopping the fill projector: %w", err)
	}
	if r.o.PauseAt == PhaseCutover {
		r.o.Log.Warn("reshard: paused for a test", "phase", r.o.PauseAt)
		<-ctx.Done()
		return 0, ctx.Err()
	}
	fillName := r.fill.OffsetsName()
	ranges := r.o.New.Ranges()
	for i, c := range fenced {
		if fencedSrv[i].received {
			if err := c.MergeFill(ctx, fillName, true); err != nil {
				return 0, fmt.Errorf("%s: %w", fencedSrv[i].id, err)
			}
		}
		if err := c.Route(ctx, gen, r.o.New.Name, ranges, r.p.Replicated); err != nil {
			return 0, fmt.Errorf("%s: %w", fencedSrv[i].id, err)
		}
		fenced[i] = nil
		if r.o.PauseAt == pausePartial && len(fenced) > 1 {
			r.o.Log.Warn("reshard: paused for a test", "phase", r.o.PauseAt)
			<-ctx.Done()
			return 0, ctx.Err()
		}
	}
	var fence time.Duration
	if len(fenced) > 0 {
		fence = time.Since(acquired)
	}
	fenced = nil
	for _, s := range all {
		if s.old {
			continue
		}
		c, err := s.db.BeginCutover(ctx, r.p.Name)
		if err != nil {
			return fence, fmt.Errorf("%s: %w", s.id, err)
		}
		if c.Generation >= gen {
			c.Rollback()
			continue
		}
		if s.received {
			if err := c.MergeFill(ctx, fillName, false); err != nil {
				c.Rollback()
				return fence, fmt.Errorf("%s: %w", s.id, err)
			}
		}
		if err := c.Route(ctx, gen, r.o.New.Name, ranges, r.p.Replicated); err != nil {
			return fence, fmt.Errorf("%s: %w", s.id, err)
		}
	}
	// A rerun's fill may have written the fill identity again where an
	// earlier run had already merged it.
	for _, s := range all {
		if err := s.db.ForgetOffsets(ctx, fillName); err != nil {
			return fence, fmt.Errorf("%s: %w", s.id, err)
		}
	}
	return fence, nil
}
