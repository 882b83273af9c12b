package sinks

// The contributions a transaction-consistent applier wrote itself, kept
// in memory so that its next commits need not read them back from the
// sink (docs/design/consistent-sinks.md, "The contributions cache").
//
// In transaction mode one applier is the only writer of a shard's
// contributions, fenced by the frontier row's lock, so what it committed
// is what the sink holds — until something else writes them. The cache
// is therefore tied to the frontier row as this applier left it (its
// checkpoint offset, its commit count and the shard's count of writes
// made outside the applier, `frontierMark`): a commit that finds the row
// anywhere else drops it. Entries enter only when their commit succeeded;
// any failure drops everything. Joined aggregates are never cached: their
// regroup moves contributions between groups in SQL, where Go does not
// see the result.

import (
	"slices"
	"sync"

	"github.com/readside/readside/projections"
)

// contributionCacheCap is the most contributions a shard's cache holds
// per sink; past it the cache is cleared (the next commits read from the
// sink again). About 200 bytes an entry for a few group columns and
// values: ~40 MiB at the cap.
const contributionCacheCap = 200_000

// outsideWritesPrefix names the `_readside_truncations` row that counts,
// per sink, the transactions that wrote contributions outside the
// applier (verify --repair). No projection name holds a '#'.
const outsideWritesPrefix = "#outside-writes:"

// frontierMark is where a shard's frontier row was when the cache was
// exact: a commit's lock that reads another mark drops the cache.
type frontierMark struct {
	checkpoint int64
	commits    uint64
	outside    uint64
}

// contributionCache is one shard's cache of one sink's contributions.
type contributionCache struct {
	mu    sync.Mutex
	valid bool
	mark  frontierMark
	size  int
	byP   map[string]*cachedContributions // projection name →
}

// cachedContributions are one projection's cached contributions and its
// truncation floor.
type cachedContributions struct {
	floor      uint64
	floorKnown bool
	entries    map[string]storedContribution // source key →
}

// check keeps the cache when the frontier row is at m, where the last
// commit that filled it left it, and empties it otherwise.
func (c *contributionCache) check(m frontierMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.mark != m {
		c.clear()
	}
}

// drop empties the cache: a commit failed or was rolled back, so what
// the sink holds is not known from here.
func (c *contributionCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
}

func (c *contributionCache) clear() {
	c.valid, c.size, c.byP = false, 0, nil
}

// lookup is p's cached contribution of key.
func (c *contributionCache) lookup(p, key string) (storedContribution, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.byP[p]
	if pc == nil {
		return storedContribution{}, false
	}
	s, ok := pc.entries[key]
	return s, ok
}

// floor is p's cached truncation floor.
func (c *contributionCache) floor(p string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pc := c.byP[p]; pc != nil && pc.floorKnown {
		return pc.floor, true
	}
	return 0, false
}

// committed adds what a commit that succeeded wrote and marks the cache
// exact at m, the frontier row as that commit left it.
func (c *contributionCache) committed(w *commitContributions, m frontierMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid {
		c.clear()
	}
	c.valid, c.mark = true, m
	if c.byP == nil {
		c.byP = map[string]*cachedContributions{}
	}
	for p := range w.truncated {
		if pc := c.byP[p]; pc != nil {
			c.size -= len(pc.entries)
			delete(c.byP, p)
		}
	}
	for p, pw := range w.byP {
		if c.size+len(pw.entries) > contributionCacheCap {
			c.clear()
			c.valid, c.mark, c.byP = true, m, map[string]*cachedContributions{}
		}
		pc := c.byP[p]
		if pc == nil {
			pc = &cachedContributions{entries: map[string]storedContribution{}}
			c.byP[p] = pc
		}
		if pw.floorKnown {
			pc.floor, pc.floorKnown = pw.floor, true
		}
		for k, s := range pw.entries {
			if _, ok := pc.entries[k]; !ok {
				c.size++
			}
			pc.entries[k] = s
		}
	}
}

// commitContributions are the contributions one open commit wrote on a
// shard, per projection: the cache takes them when the commit succeeds.
// They are also what later chunks of the same commit read instead of the
// cache (the sink holds them, uncommitted, in this transaction).
type commitContributions struct {
	byP map[string]*cachedContributions
	// truncated are the projections a truncation rewrote in this commit:
	// neither the cache nor these entries describe them any more.
	truncated map[string]bool
}

func (w *commitContributions) of(p string) *cachedContributions {
	if w.byP == nil {
		w.byP = map[string]*cachedContributions{}
	}
	pc := w.byP[p]
	if pc == nil {
		pc = &cachedContributions{entries: map[string]storedContribution{}}
		w.byP[p] = pc
	}
	return pc
}

// truncate forgets p for the rest of the commit and, when it commits,
// in the cache.
func (w *commitContributions) truncate(p string) {
	if w.truncated == nil {
		w.truncated = map[string]bool{}
	}
	w.truncated[p] = true
	delete(w.byP, p)
}

// contributionView is what one Apply of a projection sees: the entries
// its commit wrote so far, then the cache.
type contributionView struct {
	cache *contributionCache
	w     *commitContributions
	p     string
}

// usable reports whether the view may answer at all: not after a
// truncation of the projection in this commit.
func (v *contributionView) usable() bool { return v != nil && !v.w.truncated[v.p] }

// lookup is the stored contribution of key as the open transaction has it.
func (v *contributionView) lookup(key string) (storedContribution, bool) {
	if pc := v.w.byP[v.p]; pc != nil {
		if s, ok := pc.entries[key]; ok {
			return s, true
		}
	}
	return v.cache.lookup(v.p, key)
}

// floor is the truncation floor as the open transaction has it.
func (v *contributionView) floor() (uint64, bool) {
	if pc := v.w.byP[v.p]; pc != nil && pc.floorKnown {
		return pc.floor, true
	}
	return v.cache.floor(v.p)
}

// setFloor records the floor read from the sink in this commit.
func (v *contributionView) setFloor(f uint64) {
	pc := v.w.of(v.p)
	pc.floor, pc.floorKnown = f, true
}

// wrote records key's contribution as written in this commit. Its values
// are copied: a batch's values alias the polled records' bytes.
func (v *contributionView) wrote(key string, s storedContribution) {
	v.w.of(v.p).entries[key] = storedContribution{version: s.version, group: copyValues(s.group), values: copyValues(s.values)}
}

// copyValues copies vs and the bytes they hold (nil stays nil).
func copyValues(vs []projections.Value) []projections.Value {
	if vs == nil {
		return nil
	}
	out := make([]projections.Value, len(vs))
	for i, x := range vs {
		switch x.Kind() {
		case projections.TextValue:
			out[i] = projections.ValueOf(string(x.Bytes()))
		case projections.BytesValue:
			out[i] = projections.ValueOf(slices.Clone(x.Bytes()))
		case projections.UintValue:
			out[i] = projections.ValueOf(x.Uint())
		}
	}
	return out
}

// cachedContributions is the view the applier may answer contribution
// reads from: in a consistent commit, for an aggregate whose groups come
// from the source row alone.
func (a *applier) cachedContributions() *contributionView {
	if !a.contribs.usable() || joinedAgg(a.p) {
		return nil
	}
	return a.contribs
}

// answer puts the stored contributions of kept the view knows into
// stored, with the truncation floor under "" when it knows it, and
// returns the contributions still to be read from the sink. Without a
// known floor one key stays to be read: the floor comes with the first
// read.
func (v *contributionView) answer(kept []projections.Contribution, stored map[string]storedContribution) (misses []projections.Contribution, floorKnown bool) {
	floor, floorKnown := v.floor()
	if floorKnown {
		stored[""] = storedContribution{version: floor}
	}
	for _, c := range kept {
		if s, ok := v.lookup(c.SourceKey); ok && (floorKnown || len(misses) > 0) {
			stored[c.SourceKey] = s
			continue
		}
		misses = append(misses, c)
	}
	return misses, floorKnown
}

// noteWritten records, in a consistent commit, the contributions of kept
// that the batch wrote (newer than stored and the floor), as the sink now
// holds them: what readContributions would read back.
func (a *applier) noteWritten(kept []projections.Contribution, stored map[string]storedContribution, floor uint64) {
	v := a.cachedContributions()
	if v == nil {
		return
	}
	for _, c := range kept {
		if c.Version <= stored[c.SourceKey].version || c.Version <= floor {
			continue
		}
		s := storedContribution{version: c.Version}
		if c.Group != nil && c.Group[0].Kind() != projections.NullValue {
			s.group = c.Group
			s.values = make([]projections.Value, len(a.p.Aggregation.Aggregates))
			for i, x := range a.p.Aggregation.Aggregates {
				s.values[i] = projections.ValueOf("1")
				if x.Stored() {
					s.values[i] = c.Values[i]
				}
			}
		}
		v.wrote(c.SourceKey, s)
	}
}

// contributionCache is sink's cache on s.
func (s *MySQL) contributionCache(sink string) *contributionCache {
	c, _ := s.contribs.LoadOrStore(sink, &contributionCache{})
	return c.(*contributionCache)
}
