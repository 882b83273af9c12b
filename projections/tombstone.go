package projections

import (
	"context"
	"fmt"
)

// collectTombstones drops tombstones below the topics' horizon (see
// Horizon). Failures are logged and retried next interval: tombstones
// only cost space.
func (pr *Projector) collectTombstones(ctx context.Context) {
	tc, ok := pr.sink.(TombstoneCollector)
	if !ok {
		return
	}
	h, ok, err := Horizon(ctx, pr.o.Brokers, pr.p)
	if err != nil || !ok {
		if err != nil {
			pr.log.Warn("tombstone collection: cannot read the horizon", "err", err)
		}
		return
	}
	n, err := tc.CollectTombstones(ctx, pr.p, h)
	if err != nil {
		pr.log.Warn("tombstone collection failed", "err", err)
		return
	}
	pr.log.Info("tombstones collected", "deleted", n, "horizon_version", h)
}

func (p *Projection) delete(e Event, img *Image, ps *plans) (Write, error) {
	if img == nil {
		return Write{}, fmt.Errorf("%s event without a before image", e.Op)
	}
	pl := p.plan(ps, img, e.Schema)
	key, err := p.keyText(img, pl)
	if err != nil {
		return Write{}, err
	}
	vals := make([]Value, len(p.Key))
	for i := range p.Key {
		if vals[i], err = bindRaw(img, pl.pos[i], p.Columns[i].Source, pl.kinds[i]); err != nil {
			return Write{}, err
		}
	}
	return Write{Kind: Delete, Key: key, Values: vals, Version: e.Version, KeyspaceID: p.keyspaceID(vals, e.Schema)}, nil
}

// TombstoneCollector is a Sink that can drop tombstones no replay can
// need any more (see Projector's garbage collection).
type TombstoneCollector interface {
	CollectTombstones(ctx context.Context, p *Projection, horizon uint64) (int64, error)
}
