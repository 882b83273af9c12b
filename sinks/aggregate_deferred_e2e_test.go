package sinks_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestConsistentCommitSumsGroupsOverBatches: in a consistent commit of
// several batches, each batch's contributions are held and its group
// deltas summed, both written once before the frontier
// (aggregate_deferred.go). After every commit the contributions are the
// newest of each source row (a model in Go), and the read table is
// exactly what they give — counts, sums, distinct
// counts, MIN and MAX — whatever the batches did to the same groups in
// between: rows moved back and forth between groups across batches,
// extremes added in one batch and withdrawn in a later one, truncations
// in the middle of a commit, commits rolled back, and sums and
// contributions written early when they grow past their bounds.
func TestConsistentCommitSumsGroupsOverBatches(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "aggdefer", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,3), qty INT, at DATETIME(6)")
	p, sink := aggregatesSink(t, bed, src, sinkDB, map[string]string{"n": "count(*)", "total": "sum(amount)", "lo": "min(amount)",
		"hi": "max(amount)", "last_at": "max(at)", "d": "count(distinct qty)"})
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 44))
	amounts := []any{"1.5", "1.50", "-2", "10", "9.999", "0", nil}
	ats := []any{"2026-01-01 00:00:00", "2026-01-01 00:00:00.5", "2025-12-31 23:59:59.999999", "2027-06-01 12:00:00", nil}
	// The aggregates in read table order: d, hi, last_at, lo, n, total.
	contrib := func(key string, v uint64) projections.Contribution {
		c := projections.Contribution{SourceKey: key, Version: v}
		if rng.IntN(6) == 0 {
			return c // deleted
		}
		at, amount := ats[rng.IntN(len(ats))], amounts[rng.IntN(len(amounts))]
		c.Group = projections.ValuesOf(rng.IntN(4))
		c.Values = projections.ValuesOf(rng.IntN(3), amount, at, amount, 1, amount)
		return c
	}
	version := map[string]uint64{}
	var sent []projections.Contribution
	want := "SELECT g_g, COUNT(*), SUM(v_total), MIN(v_lo), MAX(v_hi), MAX(v_last_at), COUNT(DISTINCT v_d) FROM `_readside_agg_stats` WHERE g_g IS NOT NULL GROUP BY g_g ORDER BY g_g"
	got := "SELECT g, n, total, lo, hi, last_at, d FROM stats ORDER BY g"
	// The model of the contributions table: each source key's group as
	// the newest contribution applied leaves it (NULL: deleted or
	// withdrawn by a truncation); floor is the latest truncation.
	type modelRow struct {
		version uint64
		group   any
	}
	committed, floor := map[string]modelRow{}, uint64(0)
	modelText := func(m map[string]modelRow) string {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m)) {
			g := m[k].group
			if g == nil {
				g = "<nil>"
			}
			fmt.Fprintf(&b, "%s|%v|\n", k, g)
		}
		return b.String()
	}
	at := int64(-1)
	defer sinks.SetMaxDeferredGroups(sinks.SetMaxDeferredGroups(50_000))
	defer sinks.SetMaxPendingContributions(sinks.SetMaxPendingContributions(50_000))
	for commit := range 120 {
		bound, held := 50_000, 50_000
		if commit%2 == 1 {
			bound = 1 + rng.IntN(4) // sums written early, several times a commit
		}
		if commit%3 == 1 {
			held = 1 + rng.IntN(6) // contributions written early
		}
		sinks.SetMaxDeferredGroups(bound)
		sinks.SetMaxPendingContributions(held)
		c, err := sink.BeginCommit(ctx, []int64{at}, at+1)
		if err != nil {
			t.Fatal(err)
		}
		model, modelFloor := maps.Clone(committed), floor
		var truncated bool
		for range 1 + rng.IntN(6) {
			var cs []projections.Contribution
			if rng.IntN(25) == 0 {
				version["truncate"] += 1000
				cs = append(cs, projections.Contribution{Truncate: true, Version: version["truncate"]})
				truncated = true
				modelFloor = version["truncate"]
				for k, r := range model {
					if r.version < modelFloor {
						model[k] = modelRow{r.version, nil}
					}
				}
			}
			for range 1 + rng.IntN(8) {
				if len(sent) > 0 && rng.IntN(5) == 0 {
					cs = append(cs, sent[rng.IntN(len(sent))]) // a duplicate or a late event
					continue
				}
				key := fmt.Sprintf("k%d", rng.IntN(30))
				version[key] = max(version[key], version["truncate"]) + 1 + uint64(rng.IntN(3))
				c := contrib(key, version[key])
				cs = append(cs, c)
				sent = append(sent, c)
			}
			for _, c := range cs {
				if r, ok := model[c.SourceKey]; !c.Truncate && c.Version > modelFloor && (!ok || c.Version > r.version) {
					var g any
					if c.Group != nil {
						g = string(c.Group[0].Bytes())
					}
					model[c.SourceKey] = modelRow{c.Version, g}
				}
			}
			if err := c.Apply(p, &projections.Batch{Contributions: cs}); err != nil {
				c.Rollback()
				t.Fatal(err)
			}
		}
		if rng.IntN(8) == 0 {
			c.Rollback()
			continue
		}
		if err := c.Commit(projections.Frontier{Checkpoint: at + 1, Next: event.Offsets{}}); err != nil {
			t.Fatal(err)
		}
		at++
		committed, floor = model, modelFloor
		if g, w := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT key_text, g_g FROM `_readside_agg_stats` ORDER BY key_text"), modelText(committed); g != w {
			t.Fatalf("after commit %d (a truncation in it: %v): the contributions are not the newest of each source row: %s", commit, truncated, testbed.FirstDifference(g, w))
		}
		w, g := testbed.RowsText(t, sink.Shards[0].DB(), want), testbed.RowsText(t, sink.Shards[0].DB(), got)
		if w != g {
			t.Fatalf("after commit %d (a truncation in it: %v): the read table is not what the contributions give: %s", commit, truncated, testbed.FirstDifference(g, w))
		}
	}
}
