package sinks

// Group deltas of a transaction-consistent commit, written once at its
// end (docs/design/consistent-sinks.md, its applier). A
// consistent commit applies its records chunk by chunk into one open
// transaction; each chunk's contributions are written as they come (a
// later chunk reads them), but what they do to the groups is only summed:
// counts and sums add, a MIN or MAX keeps the furthest value added and
// withdrawn, reference counts of count(distinct) add. The groups are
// written once, before the frontier, so a group that many chunks touch
// costs one upsert instead of one per chunk, and no reader can tell: the
// group rows are invisible until the commit anyway. Dives read the
// contributions when the deltas are written, so they see every chunk's.
//
// Only a projection whose groups come from its own source rows defers: a
// joined aggregate's regroup reads the groups it moves. A truncation
// rebuilds the groups from the contributions, so the deltas summed before
// it are written first.

import (
	"fmt"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// maxDeferredGroups bounds a commit's summed deltas per projection (groups
// and distinct reference counts): past it they are written at once, and
// summing starts again, so memory stays bounded whatever the commit's size.
var maxDeferredGroups = 50_000

// deferredDeltas are one projection's summed group deltas in a commit.
type deferredDeltas struct {
	ds    *deltas
	shard *keyspace.Range
}

// defers reports whether p's group deltas wait for the end of a
// consistent commit.
func defers(p *projections.Projection) bool {
	return p.Aggregation != nil && !joinedAgg(p)
}

// size is how many group and reference count rows the deltas write.
func (ds *deltas) size() int {
	n := len(ds.order)
	for _, o := range ds.distinct.order {
		n += len(o)
	}
	return n
}

// merge adds o, a later batch's deltas, to ds. Counts, sums, rows and
// reference counts add. A MIN or MAX is subtler: within one batch the
// furthest value added is still in the group at the batch's end (each
// source row contributes once), which a later batch can undo, so a
// withdrawal as far as an earlier add makes the group read its extreme
// from the contributions (needsDive). Values are cloned: ds outlives the
// batch o came from.
func (ds *deltas) merge(o *deltas) error {
	for _, k := range o.order {
		od := o.by[k]
		d := ds.by[k]
		if d == nil {
			d = &delta{group: cloneValues(od.group), rows: od.rows, counts: od.counts, nonNull: od.nonNull, sums: od.sums,
				extremes: make([]*extremeDelta, len(od.extremes)), version: od.version}
			for i, e := range od.extremes {
				if e != nil {
					d.extremes[i] = &extremeDelta{added: e.added.Clone(), withdrawn: e.withdrawn.Clone(), adds: e.adds, withdraws: e.withdraws}
				}
			}
			ds.by[k] = d
			ds.order = append(ds.order, k)
			continue
		}
		d.rows += od.rows
		d.version = max(d.version, od.version)
		for i, x := range ds.ag.Aggregates {
			d.counts[i] += od.counts[i]
			d.nonNull[i] += od.nonNull[i]
			if od.sums[i] != nil {
				if err := d.sums[i].add(od.sums[i].String(), 1); err != nil {
					return fmt.Errorf("aggregate %s: %w", x.Column, err)
				}
			}
			if e, oe := d.extremes[i], od.extremes[i]; oe != nil {
				isMax := x.Func == projections.AggMax
				if oe.withdraws && e.adds && !beyond(ds.orders[i], isMax, e.added, oe.withdrawn) {
					// o may withdraw what an earlier batch added (the same
					// row moved or deleted later in the commit): the
					// furthest added is no longer known to be there, so the
					// group's extreme is read from its contributions unless
					// o adds one at least as far as all it withdraws.
					e.added, e.adds = projections.Value{}, false
				}
				if oe.adds && (!e.adds || beyond(ds.orders[i], isMax, oe.added, e.added)) {
					e.added, e.adds = oe.added.Clone(), true
				}
				if oe.withdraws && (!e.withdraws || beyond(ds.orders[i], isMax, oe.withdrawn, e.withdrawn)) {
					e.withdrawn, e.withdraws = oe.withdrawn.Clone(), true
				}
			}
		}
	}
	for i, by := range o.distinct.by {
		for _, k := range o.distinct.order[i] {
			od := by[k]
			if d := ds.distinct.by[i][k]; d != nil {
				d.n += od.n
				continue
			}
			ds.distinct.by[i][k] = &distinctDelta{group: cloneValues(od.group), value: od.value.Clone(), n: od.n}
			ds.distinct.order[i] = append(ds.distinct.order[i], k)
		}
	}
	return nil
}

func cloneValues(vs []projections.Value) []projections.Value {
	out := make([]projections.Value, len(vs))
	for i, v := range vs {
		out[i] = v.Clone()
	}
	return out
}

// deferDeltas sums a batch's group deltas into the commit's for p (the
// applier's), writing them first when they would grow past
// maxDeferredGroups.
func (a *applier) deferDeltas(ds *deltas) error {
	if err := a.deferred.ds.merge(ds); err != nil {
		return err
	}
	if a.deferred.ds.size() < maxDeferredGroups {
		return nil
	}
	return a.writeDeferred()
}

// writeDeferred writes the group deltas summed so far and starts summing
// anew.
func (a *applier) writeDeferred() error {
	ds := a.deferred.ds
	a.deferred.ds = newDeltas(a.p.Aggregation)
	return a.applyDeltas(ds)
}
