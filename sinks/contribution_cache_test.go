package sinks

import (
	"fmt"
	"testing"

	"github.com/readside/readside/projections"
)

// TestContributionCache: when the cache answers and when it forgets.
func TestContributionCache(t *testing.T) {
	at := frontierMark{checkpoint: 3, commits: 4, outside: 0}
	entry := storedContribution{version: 7, group: projections.ValuesOf("g"), values: projections.ValuesOf("1")}
	filled := func() *contributionCache {
		c := &contributionCache{}
		var w commitContributions
		v := &contributionView{cache: c, w: &w, p: "p"}
		v.wrote("k", entry)
		v.setFloor(2)
		c.committed(&w, at)
		return c
	}
	for _, tc := range []struct {
		why   string
		after func(c *contributionCache)
		hit   bool
	}{
		{"the frontier row where the last commit left it: the cache answers", func(c *contributionCache) { c.check(at) }, true},
		{"another applier committed: the checkpoint moved", func(c *contributionCache) { c.check(frontierMark{checkpoint: 5, commits: 5}) }, false},
		{"a commit landed that this applier did not count", func(c *contributionCache) { c.check(frontierMark{checkpoint: 3, commits: 5}) }, false},
		{"a repair wrote contributions outside the applier", func(c *contributionCache) { c.check(frontierMark{checkpoint: 3, commits: 4, outside: 1}) }, false},
		{"a commit failed", func(c *contributionCache) { c.drop(); c.check(at) }, false},
		{"a truncation of the projection committed", func(c *contributionCache) {
			c.committed(&commitContributions{truncated: map[string]bool{"p": true}}, at)
		}, false},
	} {
		c := filled()
		tc.after(c)
		_, hit := c.lookup("p", "k")
		_, floorKnown := c.floor("p")
		if hit != tc.hit || floorKnown != tc.hit {
			t.Errorf("%s: entry found %v, floor known %v, want %v", tc.why, hit, floorKnown, tc.hit)
		}
	}
}

// TestContributionCacheCap: a commit that would pass the cap clears what
// was cached before it; the cache never holds more than the cap.
func TestContributionCacheCap(t *testing.T) {
	c := &contributionCache{}
	m := frontierMark{}
	for n := range 3 {
		var w commitContributions
		v := &contributionView{cache: c, w: &w, p: "p"}
		for i := range contributionCacheCap/2 + 1 {
			v.wrote(fmt.Sprintf("%d-%d", n, i), storedContribution{version: 1})
		}
		m.checkpoint++
		c.committed(&w, m)
		if c.size > contributionCacheCap {
			t.Fatalf("after commit %d the cache holds %d entries, more than %d", n, c.size, contributionCacheCap)
		}
		if _, ok := c.lookup("p", fmt.Sprintf("%d-0", n)); !ok {
			t.Fatalf("commit %d's own entries are not cached", n)
		}
	}
}
