package projections

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
)

// Batch is what one poll of records does to a projection's sink: the
// writes to its read table, the parent-state changes of its joins, and the
// offsets consumed up to, all committed together.
type Batch struct {
	Writes  []Write
	Parents []ParentWrite
	// Contributions are an aggregate projection's source row changes
	// (aggregate.go), instead of Writes.
	Contributions []Contribution
	// ChildWrites are the changes of the nested children's rows
	// (children.go).
	ChildWrites []ChildWrite
	Offsets     event.Offsets
	// CaughtUp: the projector had fewer than caughtUpBelow records left
	// to apply after this batch when it built it, so readers are waiting
	// for its rows (a background fan-out's copies give way to it).
	CaughtUp bool
	// Shard, when set, is the key range of the shard this part of a batch
	// is for (Sharded.Apply): an aggregate's contributions go to every
	// shard, its groups only to the one their keyspace id routes to.
	Shard *keyspace.Range
	// NewestTS is the newest source commit time (Unix seconds) among the
	// batch's events.
	NewestTS int64
	// OldestTS is the oldest (0: none known), for the projection lag while
	// the batch waits to be applied.
	OldestTS int64
	// Stale, when set, counts writes the sink skipped because a newer
	// version (a tombstone, a truncation) already covers them.
	Stale *atomic.Int64
	// SnapshotAgain names where a Debezium connector's snapshot started
	// again ("topic partition P offset O"), past the start of its topic:
	// rows deleted before that snapshot and after the connector's last
	// streamed change have no delete record (docs/debezium.md).
	SnapshotAgain string
	// Shapes are the table shapes (event schemas) of the batch's events,
	// each once: a shape the projector has not compared its tables with
	// (a DDL since) is followed before the batch is applied
	// (projector/schemafollow.go).
	Shapes []*event.Schema
	// Coalesced counts the writes Build dropped for a newer one of the
	// same key in the batch.
	Coalesced int64
	// Rejected counts the writes the sink rejected and the projector
	// dead-lettered (on_error: dlq): in Writes, yet not applied.
	Rejected int64
	// Marks are, per topic and partition, the source position of the
	// newest event the batch applies (the watermark it moves to).
	Marks map[string]map[int32]Mark
}

// Mark is the source position of an applied event.
type Mark struct {
	GTID    string
	Version uint64
	TS      int64 // source commit time, Unix seconds
}

// Empty reports whether the batch changes nothing (offsets aside).
func (b *Batch) Empty() bool {
	return len(b.Writes) == 0 && len(b.Parents) == 0 && len(b.Contributions) == 0 && len(b.ChildWrites) == 0
}

// Sink applies batches to one projection's read table. Apply is
// synchronous: when it returns nil, the writes and the offsets are
// committed together (per shard); an error means the batch must be
// applied again, which the version guards make harmless.
type Sink interface {
	// Offsets are where consumption resumes: per topic and partition,
	// the lowest next offset any shard has committed.
	Offsets(ctx context.Context, p *Projection) (event.Offsets, error)
	Apply(ctx context.Context, p *Projection, b *Batch) error
}

// Coalesce keeps the newest write per read key (and every truncation): a
// batch then touches each row once, and applying only the newest is what
// the version guard would make of the whole sequence anyway.
func Coalesce(ws []Write) []Write { return coalesce(ws, make([]Write, 0, len(ws))) }

// coalesce is Coalesce into out, which may be ws[:0]: a write only ever
// moves to a lower index, after the loop has read it.
func coalesce(ws, out []Write) []Write {
	newest := make(map[string]int, len(ws))
	for _, w := range ws {
		if w.Kind == Truncate {
			out = append(out, w)
			continue
		}
		if i, ok := newest[w.Key]; ok {
			if out[i].Version < w.Version {
				out[i] = w
			}
			continue
		}
		newest[w.Key] = len(out)
		out = append(out, w)
	}
	return out
}

// CoalesceParents keeps the newest state per join and parent key (and
// every truncation).
func CoalesceParents(ws []ParentWrite) []ParentWrite {
	type k struct {
		j   int
		key string
	}
	return coalesceNewest(ws, ws[:0:0], func(w ParentWrite) (k, bool) { return k{w.Join, w.Key}, w.Truncate },
		func(w ParentWrite) uint64 { return w.Version })
}

// coalesceNewest keeps, into out (which may be ws[:0]: an element only
// ever moves to a lower index), the newest element per key, and every
// element key reports as kept whole (a truncation), in order.
func coalesceNewest[T any, K comparable](ws, out []T, key func(T) (K, bool), version func(T) uint64) []T {
	return coalesceNewestMerged(ws, out, key, version, nil)
}

// coalesceNewestMerged is coalesceNewest, with merge (when set) making
// the element kept for a key from the newest and each one it replaces
// or drops.
func coalesceNewestMerged[T any, K comparable](ws, out []T, key func(T) (K, bool), version func(T) uint64, merge func(newest, other T) T) []T {
	newest := make(map[K]int, len(ws))
	for _, w := range ws {
		k, whole := key(w)
		if whole {
			out = append(out, w)
			continue
		}
		if i, ok := newest[k]; ok {
			kept, other := out[i], w
			if version(kept) < version(w) {
				kept, other = w, kept
			}
			if merge != nil {
				kept = merge(kept, other)
			}
			out[i] = kept
			continue
		}
		newest[k] = len(out)
		out = append(out, w)
	}
	return out
}

// Size is how many changes b holds.
func (b *Batch) Size() int {
	return len(b.Writes) + len(b.Parents) + len(b.Contributions) + len(b.ChildWrites)
}

// Single is the record of b's one change, if it has exactly one.
func (b *Batch) Single() (rec *Record, ok bool) {
	if b.Size() != 1 {
		return nil, false
	}
	switch {
	case len(b.Writes) == 1:
		return b.Writes[0].From, true
	case len(b.Parents) == 1:
		return b.Parents[0].From, true
	case len(b.Contributions) == 1:
		return b.Contributions[0].From, true
	default:
		return b.ChildWrites[0].From, true
	}
}

// Halves splits a batch of two or more changes: parent state apart from
// the rest first (as the sink applies it first), then each kind apart,
// then one kind's changes in two halves.
func (b *Batch) Halves() (lo, hi *Batch) {
	kinds := 0
	for _, n := range []int{len(b.Parents), len(b.Writes), len(b.Contributions), len(b.ChildWrites)} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds > 1 && len(b.Parents) > 0:
		return &Batch{Parents: b.Parents}, &Batch{Writes: b.Writes, Contributions: b.Contributions, ChildWrites: b.ChildWrites}
	case kinds > 1 && len(b.Writes) > 0:
		return &Batch{Writes: b.Writes}, &Batch{Contributions: b.Contributions, ChildWrites: b.ChildWrites}
	case kinds > 1:
		return &Batch{Contributions: b.Contributions}, &Batch{ChildWrites: b.ChildWrites}
	case len(b.Parents) > 0:
		return &Batch{Parents: b.Parents[:len(b.Parents)/2]}, &Batch{Parents: b.Parents[len(b.Parents)/2:]}
	case len(b.Writes) > 0:
		return &Batch{Writes: b.Writes[:len(b.Writes)/2]}, &Batch{Writes: b.Writes[len(b.Writes)/2:]}
	case len(b.Contributions) > 0:
		return &Batch{Contributions: b.Contributions[:len(b.Contributions)/2]}, &Batch{Contributions: b.Contributions[len(b.Contributions)/2:]}
	default:
		return &Batch{ChildWrites: b.ChildWrites[:len(b.ChildWrites)/2]}, &Batch{ChildWrites: b.ChildWrites[len(b.ChildWrites)/2:]}
	}
}

// Describe counts b's changes by kind for messages: "3 writes and 1
// parent changes", with contributions and child changes when there are.
func (b *Batch) Describe() string {
	s := fmt.Sprintf("%d writes and %d parent changes", len(b.Writes), len(b.Parents))
	if len(b.Contributions) > 0 {
		s += fmt.Sprintf(", %d contributions", len(b.Contributions))
	}
	if len(b.ChildWrites) > 0 {
		s += fmt.Sprintf(", %d child changes", len(b.ChildWrites))
	}
	return s
}

// OlderTS is the older of two source commit times, 0 meaning none.
func OlderTS(a, b int64) int64 {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
