package projections

// Tombstones, the projector's side. A source delete is a "d" event, which
// the projection maps to a Delete write at the event's version (delete);
// the sink removes the read row and keeps a versioned tombstone of its
// key, so an older event of the row arriving later (a replay, a
// duplicate) finds a newer version and changes nothing. The tailer
// follows each delete event with a Kafka tombstone record (a nil value)
// so compacted topics can drop the key: it carries nothing to apply
// (kafkaTombstone). Tombstones below the topics' horizon decide nothing
// any more and are collected (projector/gc.go, collectTombstones).

import (
	"context"
	"fmt"

	"github.com/readside/readside/event"
)

// delete is the Delete write of img's read key at e's version.
func (p *Projection) delete(e event.Event, img *event.Image, ps *plans) (Write, error) {
	if img == nil {
		return Write{}, fmt.Errorf("%s event without a before image", e.Op)
	}
	pl := p.plan(ps, img, e.Schema)
	vals := make([]Value, len(p.Key))
	var err error
	for i := range p.Key {
		if vals[i], err = p.value(img, pl, i); err != nil {
			return Write{}, err
		}
	}
	key, err := p.keyText(img, pl, vals)
	if err != nil {
		return Write{}, err
	}
	return Write{Kind: Delete, Key: key, Values: vals, Version: e.Version, KeyspaceID: p.keyspaceID(vals, e.Schema)}, nil
}

// kafkaTombstone reports whether r is the Kafka tombstone after a delete
// event: the event already deleted the row.
func kafkaTombstone(r *Record) bool { return r.Value == nil }

// TombstoneCollector is a Sink that can drop tombstones no replay can
// need any more (see Projector's garbage collection).
type TombstoneCollector interface {
	CollectTombstones(ctx context.Context, p *Projection, horizon uint64) (int64, error)
}
