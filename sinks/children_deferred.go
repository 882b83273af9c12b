package sinks

// Children arrays of a transaction-consistent commit, refreshed once at
// its end (docs/design/consistent-sinks.md, its applier). A consistent
// commit applies its records chunk by chunk into one open transaction,
// and each chunk's child changes are written as they come, but the arrays
// they touch are only noted: a parent whose children arrive over many
// chunks (an initial load, a bulk import) is aggregated once, from its
// final children, instead of once a chunk over a growing set — 60 chunks
// of a load whose 24 parents held 12,500 children each aggregated ~9
// million child rows where 300,000 do. No reader can tell: the arrays are
// invisible until the commit anyway, and a refresh reads the child state
// as the transaction left it, whatever order the chunks came in. The link
// locks are taken chunk by chunk as in row mode and held to the commit,
// so no other writer refreshes those arrays meanwhile.

import (
	"fmt"
	"sort"

	"github.com/readside/readside/projections"
)

// maxDeferredLinks bounds the arrays a commit notes per children entry:
// past it they are refreshed at once and noting starts again, so memory
// stays bounded whatever the commit's size.
var maxDeferredLinks = 20_000

// deferredChildren are one projection's arrays to refresh at the end of a
// consistent commit, per children entry.
type deferredChildren struct {
	entries []deferredEntry
}

type deferredEntry struct {
	// all: a truncation asked for every array (refreshAll), which covers
	// any link noted.
	all   bool
	seen  map[string]bool
	links []parentKey
}

func newDeferredChildren(p *projections.Projection) *deferredChildren {
	return &deferredChildren{entries: make([]deferredEntry, len(p.Children))}
}

// refreshArrays refreshes the arrays of children entry ci's links (every
// array when all), or, in a consistent commit, notes them for its end.
func (a *applier) refreshArrays(ci int, links []parentKey, all bool) error {
	st := &a.st.children[ci]
	if a.deferredChildren == nil {
		if all {
			return a.exec(st.refreshAll)
		}
		return a.execKeys(&st.refresh, links)
	}
	e := &a.deferredChildren.entries[ci]
	if all {
		e.all, e.seen, e.links = true, nil, nil
		return nil
	}
	if e.all {
		return nil
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	for _, l := range links {
		if !e.seen[l.text] {
			e.seen[l.text] = true
			// Cloned: the note outlives the batch the values came from.
			e.links = append(e.links, parentKey{text: l.text, values: cloneValues(l.values)})
		}
	}
	if len(e.links) < maxDeferredLinks {
		return nil
	}
	return a.refreshNoted(ci)
}

// refreshNoted refreshes the arrays noted for children entry ci and
// starts noting anew.
func (a *applier) refreshNoted(ci int) error {
	e := &a.deferredChildren.entries[ci]
	st := &a.st.children[ci]
	all, links := e.all, e.links
	*e = deferredEntry{}
	if all {
		return a.exec(st.refreshAll)
	}
	sort.Slice(links, func(x, y int) bool { return links[x].text < links[y].text })
	return a.execKeys(&st.refresh, links)
}

// refreshDeferred refreshes every array noted in the commit.
func (a *applier) refreshDeferred() error {
	for ci, c := range a.p.Children {
		if err := a.refreshNoted(ci); err != nil {
			return fmt.Errorf("refreshing %s of %s: %w", c.Name, a.p.Table, err)
		}
	}
	return nil
}
