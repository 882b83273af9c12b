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
// The contributions wait too: a source row that several chunks change (an
// order inserted, then updated, then moved) is read from the sink once and
// written once, with the last change, instead of once per chunk. A later
// chunk finds the row's contribution in memory, as the sink would have
// it, and no reader can tell the difference either. The contributions are
// written before the deltas, since a MIN or MAX dive reads them.
//
// Only a projection whose groups come from its own source rows defers: a
// joined aggregate's regroup reads the groups it moves. A truncation
// rebuilds the groups from the contributions, so the contributions and
// deltas summed before it are written first.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// maxDeferredGroups bounds a commit's summed deltas per projection (groups
// and distinct reference counts): past it they are written at once, and
// summing starts again, so memory stays bounded whatever the commit's size.
var maxDeferredGroups = 50_000

// maxPendingContributions bounds a commit's contributions held per
// projection: past it the oldest are written (memory stays bounded).
var maxPendingContributions = 50_000

// deferredDeltas are one projection's summed group deltas in a commit,
// and the contributions its chunks changed, not yet written.
type deferredDeltas struct {
	ds      *deltas
	pending pendingContributions
	shard   *keyspace.Range
}

// pendingContributions are the contributions a commit changed, by source
// key, each the last one applied, in the order first changed.
type pendingContributions struct {
	by    map[string]*pendingContribution
	order []string
}

// pendingContribution is one source row's contribution to write.
type pendingContribution struct {
	// stored is the contribution as a later chunk reads it (what
	// readContributions would return once it is written).
	stored storedContribution
	// insert: the sink held no row for the key when the commit began (or
	// the commit guessed so), so it is written by the plain INSERT of
	// first contributions; else by the upsert.
	insert bool
}

// lookup is key's pending contribution (nil: none, or no pc: the
// projection writes its contributions chunk by chunk).
func (pc *pendingContributions) lookup(key string) *pendingContribution {
	if pc == nil {
		return nil
	}
	return pc.by[key]
}

// putPending holds c's contribution, known newer than the one stored, for
// its source key; insert is whether the sink holds no row for it. Values
// are cloned: they outlive c's batch.
func (a *applier) putPending(c projections.Contribution, insert bool) {
	pc := &a.deferred.pending
	if pc.by == nil {
		pc.by = map[string]*pendingContribution{}
	}
	s := storedContribution{version: c.Version}
	if c.Group != nil {
		s.group = cloneValues(c.Group)
		s.values = make([]projections.Value, len(a.p.Aggregation.Aggregates))
		for i, x := range a.p.Aggregation.Aggregates {
			if x.Stored() {
				s.values[i] = c.Values[i].Clone()
			} else {
				s.values[i] = projections.ValueOf("1") // as readContributions reads it
			}
		}
	}
	if p := pc.by[c.SourceKey]; p != nil {
		p.stored = s
		return
	}
	key := strings.Clone(c.SourceKey) // not the batch's memory, which it would keep
	pc.by[key] = &pendingContribution{stored: s, insert: insert}
	pc.order = append(pc.order, key)
}

// writePending writes the contributions held so far, in key order (the
// order every transaction locks them in), and starts holding anew.
func (a *applier) writePending() error {
	return a.writeOldestPending(len(a.deferred.pending.order))
}

// writeOldestPending writes the n contributions held longest (first
// changed earliest) and keeps the rest. Past maxPendingContributions a
// commit writes the overflow chunk by chunk rather than all at once, so
// the sink keeps writing while the next chunk is mapped; a row changed
// again soon after its first change still coalesces.
func (a *applier) writeOldestPending(n int) error {
	pc := &a.deferred.pending
	if n <= 0 {
		return nil
	}
	// The oldest leave the front; appends past the capacity copy only
	// the rest.
	out := pc.order[:n:n]
	pc.order = pc.order[n:]
	slices.Sort(out)
	var writes, inserts [][]any
	for _, k := range out {
		p := pc.by[k]
		delete(pc.by, k)
		row := a.contributionRow(k, p.stored.version, p.stored.group, p.stored.values, nil)
		if p.insert {
			inserts = append(inserts, row)
		} else {
			writes = append(writes, row)
		}
	}
	st := a.st.agg
	if err := a.execRows(&st.insert, inserts); err != nil {
		return fmt.Errorf("writing the first contributions of %s: %w", a.p.Name, err)
	}
	if err := a.execRows(&st.write, writes); err != nil {
		return fmt.Errorf("writing the contributions of %s: %w", a.p.Name, err)
	}
	return nil
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

// writeDeferred writes the contributions held and the group deltas summed
// so far, and starts anew.
func (a *applier) writeDeferred() error {
	if err := a.writePending(); err != nil {
		return err
	}
	ds := a.deferred.ds
	a.deferred.ds = newDeltas(a.p.Aggregation)
	return a.applyDeltas(ds)
}
