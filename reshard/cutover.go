package reshard

import (
	"context"
	"fmt"
	"time"

	"github.com/readside/readside/event"
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
	h := &heldFence{}
	defer h.rollback()
	target, err := r.takeFence(ctx, gen, all, h)
	if err != nil {
		return 0, err
	}
	if len(h.txs) > 0 {
		r.o.Log.Info("reshard: fence held; the fill catches up with the live projector", "projection", r.p.Name, "servers", len(h.txs))
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
	if err := r.routeFenced(ctx, gen, h); err != nil {
		return 0, err
	}
	var fence time.Duration
	if len(h.txs) > 0 {
		fence = time.Since(h.acquired)
	}
	h.txs = nil
	return fence, r.routeNew(ctx, gen, all)
}

// heldFence is the fence on OLD's servers: one open cutover transaction
// per server not yet moved, in server order, and when the first was
// taken. A transaction routed (committed) is nil; rollback ends the rest.
type heldFence struct {
	txs      []*sinks.Cutover
	srv      []*server
	acquired time.Time
}

func (h *heldFence) rollback() {
	for _, c := range h.txs {
		if c != nil {
			c.Rollback()
		}
	}
}

// takeFence opens the cutover transaction on every OLD server that does
// not have generation gen yet (which fences its live projector) and
// returns the offsets the fill must reach: the highest on any of them,
// per partition.
func (r *Reshard) takeFence(ctx context.Context, gen uint64, all []*server, h *heldFence) (event.Offsets, error) {
	target := event.Offsets{}
	for _, s := range all {
		if !s.old {
			continue
		}
		c, err := s.db.BeginCutover(ctx, r.p.Name)
		if err != nil {
			return nil, fmt.Errorf("the fence on %s: %w", s.id, err)
		}
		if c.Generation >= gen {
			c.Rollback() // moved by an earlier run
			continue
		}
		if h.acquired.IsZero() {
			h.acquired = time.Now()
		}
		h.txs, h.srv = append(h.txs, c), append(h.srv, s)
		offs, err := c.Offsets(ctx, r.p.Name)
		if err != nil {
			return nil, err
		}
		for topic, parts := range offs {
			for part, next := range parts {
				if cur, ok := target[topic][part]; !ok || next > cur {
					target.Set(topic, part, next)
				}
			}
		}
	}
	return target, nil
}

// routeFenced commits the fenced OLD servers one by one: each merges the
// fill's offsets (where it received pieces) and records generation gen
// naming NEW.
func (r *Reshard) routeFenced(ctx context.Context, gen uint64, h *heldFence) error {
	fillName := r.fill.OffsetsName()
	ranges := r.o.New.Ranges()
	for i, c := range h.txs {
		if h.srv[i].received {
			if err := c.MergeFill(ctx, fillName, true); err != nil {
				return fmt.Errorf("%s: %w", h.srv[i].id, err)
			}
		}
		if err := c.Route(ctx, gen, r.o.New.Name, ranges, r.p.Replicated); err != nil {
			return fmt.Errorf("%s: %w", h.srv[i].id, err)
		}
		h.txs[i] = nil
		if r.o.PauseAt == pausePartial && len(h.txs) > 1 {
			r.o.Log.Warn("reshard: paused for a test", "phase", r.o.PauseAt)
			<-ctx.Done()
			return ctx.Err()
		}
	}
	return nil
}

// routeNew records generation gen on the servers only NEW uses, last (a
// projector that resolves NEW finds it agreed only once every server has
// it), then forgets the fill identity's offsets everywhere.
func (r *Reshard) routeNew(ctx context.Context, gen uint64, all []*server) error {
	fillName := r.fill.OffsetsName()
	ranges := r.o.New.Ranges()
	for _, s := range all {
		if s.old {
			continue
		}
		c, err := s.db.BeginCutover(ctx, r.p.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", s.id, err)
		}
		if c.Generation >= gen {
			c.Rollback()
			continue
		}
		if s.received {
			if err := c.MergeFill(ctx, fillName, false); err != nil {
				c.Rollback()
				return fmt.Errorf("%s: %w", s.id, err)
			}
		}
		if err := c.Route(ctx, gen, r.o.New.Name, ranges, r.p.Replicated); err != nil {
			return fmt.Errorf("%s: %w", s.id, err)
		}
	}
	// A rerun's fill may have written the fill identity again where an
	// earlier run had already merged it.
	for _, s := range all {
		if err := s.db.ForgetOffsets(ctx, fillName); err != nil {
			return fmt.Errorf("%s: %w", s.id, err)
		}
	}
	return nil
}
