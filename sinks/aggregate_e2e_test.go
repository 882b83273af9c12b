package sinks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// aggregateSink declares stats, count(*), sum(amount) and min(amount) of
// src.t per g, and creates its tables.
func aggregateSink(t *testing.T, bed *testbed.Bed, src, sinkDB string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	return aggregatesSink(t, bed, src, sinkDB, map[string]string{"n": "count(*)", "total": "sum(amount)", "low": "min(amount)"})
}

// aggregatesSink declares stats, aggs of src.t per g, and creates its
// tables.
func aggregatesSink(t *testing.T, bed *testbed.Bed, src, sinkDB string, aggs map[string]string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".t"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"stats": {From: src + ".t", Sink: "s", GroupBy: []string{"g"}, Aggregates: aggs}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	types, err := ps[0].SourceColumns(t.Context(), bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(t.Context(), "s", cfg.Sinks["s"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(t.Context(), sinks.DDL(ps[0], types)); err != nil {
		t.Fatal(err)
	}
	return ps[0], sink
}

// contribution is source row key's contribution at version v: to group g
// with amount (the aggregates in read table order: low, n, total), or
// none when g is nil.
func contribution(key string, v uint64, g any, amount any) projections.Contribution {
	c := projections.Contribution{SourceKey: key, Version: v}
	if g != nil {
		c.Group = projections.ValuesOf(g)
		c.Values = projections.ValuesOf(amount, 1, amount)
	}
	return c
}

// TestApplyContributions: the sink's rules for contributions, one at a
// time: new rows add to their group, a late or repeated contribution
// changes nothing (counted as stale), a newer one moves the row between
// groups, a withdrawal of a group's MIN recomputes it, a group left
// without rows disappears, and a truncation withdraws everything older
// than itself but nothing newer.
func TestApplyContributions(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "agg", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	var stale atomic.Int64
	apply := func(cs ...projections.Contribution) {
		t.Helper()
		if err := sink.Apply(ctx, p, &projections.Batch{Contributions: cs, Stale: &stale}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() string {
		return testbed.RowsText(t, sink.Shards[0].DB(), "SELECT g, n, total, low FROM stats ORDER BY g")
	}
	step := func(what, want string) {
		t.Helper()
		if got := rows(); got != want {
			t.Fatalf("%s: %s", what, testbed.FirstDifference(got, want))
		}
	}
	apply(contribution("a", 10, 1, "5.00"), contribution("b", 10, 1, "-2.50"), contribution("c", 10, 2, nil))
	step("three rows in two groups", "1|2|2.50|-2.50|\n2|1|<nil>|<nil>|\n")
	apply(contribution("a", 9, 2, "100.00"), contribution("b", 10, 2, "1.00"))
	step("an older and a repeated version change nothing", "1|2|2.50|-2.50|\n2|1|<nil>|<nil>|\n")
	if stale.Load() != 2 {
		t.Errorf("%d contributions counted stale, want 2", stale.Load())
	}
	apply(contribution("b", 11, 2, "7.25"))
	step("a move withdraws from the old group (its MIN recomputed) and adds to the new one", "1|1|5.00|5.00|\n2|2|7.25|7.25|\n")
	apply(contribution("a", 12, nil, nil))
	step("a group without rows disappears", "2|2|7.25|7.25|\n")
	apply(contribution("a", 11, 1, "1.00"))
	step("a late contribution does not bring a deleted row back", "2|2|7.25|7.25|\n")
	apply(contribution("d", 20, 3, "0.01"), projections.Contribution{Truncate: true, Version: 15}, contribution("e", 14, 3, "9.00"))
	step("a truncation withdraws what is older, keeps what is newer", "3|1|0.01|0.01|\n")
	apply(contribution("b", 13, 2, "3.00"), contribution("f", 16, 2, "4.00"))
	step("after a truncation, older contributions stay out", "2|1|4.00|4.00|\n3|1|0.01|0.01|\n")
}

// TestApplyContributionsShrinkOversizedBatch: a batch of contributions
// too large for the sink's max_allowed_packet is cut into statements that
// fit, and still adds up.
func TestApplyContributionsShrinkOversizedBatch(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "aggbig", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	setGlobal(t, bed, "max_allowed_packet", 65536)
	p, sink := aggregateSink(t, bed, src, sinkDB) // connects after the change: learns 64 KiB
	var cs []projections.Contribution
	for i := range 3000 {
		cs = append(cs, contribution(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, strings.Repeat("x", 200)), 100, i%7, "1.25"))
	}
	actx, cancel := context.WithTimeout(ctx, 120*time.Second) // a retry loop must fail the test, not hang it
	defer cancel()
	if err := sink.Apply(actx, p, &projections.Batch{Contributions: cs}); err != nil {
		t.Fatalf("contributions over max_allowed_packet must be cut to fit, got %v", err)
	}
	got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT SUM(n), SUM(total), COUNT(*) FROM stats")
	if want := "3000|3750.00|7|\n"; got != want {
		t.Fatalf("after the shrunk batch: %q, want %q", got, want)
	}
}

// TestApplyContributionsSameNewKeysConcurrently: transactions that all
// bring the same source rows' first contributions race between reading
// them as absent and inserting them. The one that inserts second finds a
// duplicate key, is retried, and then sees them stored: every row counts
// once, however the transactions interleave.
func TestApplyContributionsSameNewKeysConcurrently(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "aggnew", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	var stale atomic.Int64
	const rounds, writers, keys = 25, 4, 20
	actx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	for round := range rounds {
		errs := make(chan error, writers)
		for range writers {
			go func() {
				var cs []projections.Contribution
				for k := range keys {
					cs = append(cs, contribution(fmt.Sprintf("r%d-%d", round, k), uint64(round+1), 1, "1.00"))
				}
				errs <- sink.Apply(actx, p, &projections.Batch{Contributions: cs, Stale: &stale})
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT g, n, total FROM stats")
	if want := fmt.Sprintf("1|%d|%d.00|\n", rounds*keys, rounds*keys); got != want {
		t.Fatalf("after %d rounds of %d writers bringing the same %d new rows: %q, want %q", rounds, writers, keys, got, want)
	}
	// Every writer but the first of a round finds the rows stored (stale):
	// only then are its contributions skipped.
	if want := int64(rounds * (writers - 1) * keys); stale.Load() != want {
		t.Errorf("%d contributions counted stale, want %d", stale.Load(), want)
	}
}

// TestApplyContributionsExtremes: MIN and MAX of values Go orders itself
// (decimals of several scales, integers, datetimes with and without a
// fraction) stay equal to MIN and MAX over the stored contributions
// through a random history of small batches: inserts, updates that push,
// keep or pull back a group's extreme, moves and deletes, duplicates and
// late events. A batch that withdraws a group's extreme while adding a
// value short of it must read the extreme back from the contributions.
func TestApplyContributionsExtremes(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "aggext", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,3), qty INT, at DATETIME(6)")
	p, sink := aggregatesSink(t, bed, src, sinkDB, map[string]string{"n": "count(*)", "lo": "min(amount)", "hi": "max(amount)",
		"most": "max(qty)", "first_at": "min(at)", "last_at": "max(at)"})
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 27))
	amounts := []any{"1.5", "1.50", "1.500", "-2", "10", "9.999", "0", nil}
	ats := []any{"2026-01-01 00:00:00", "2026-01-01 00:00:00.000001", "2026-01-01 00:00:00.5", "2025-12-31 23:59:59.999999", "2027-06-01 12:00:00", nil}
	// The aggregates in read table order: first_at, hi, last_at, lo, most, n.
	contrib := func(key string, v uint64) projections.Contribution {
		c := projections.Contribution{SourceKey: key, Version: v}
		if rng.IntN(6) == 0 {
			return c // deleted
		}
		at, amount := ats[rng.IntN(len(ats))], amounts[rng.IntN(len(amounts))]
		c.Group = projections.ValuesOf(rng.IntN(3))
		c.Values = projections.ValuesOf(at, amount, at, amount, rng.IntN(50)-10, 1)
		return c
	}
	version := map[string]uint64{}
	var sent []projections.Contribution
	want := "SELECT g_g, COUNT(*), MIN(v_lo), MAX(v_hi), MAX(v_most), MIN(v_first_at), MAX(v_last_at) FROM `_readside_agg_stats` WHERE g_g IS NOT NULL GROUP BY g_g ORDER BY g_g"
	got := "SELECT g, n, lo, hi, most, first_at, last_at FROM stats ORDER BY g"
	for batch := range 300 {
		var cs []projections.Contribution
		for range 1 + rng.IntN(8) {
			if len(sent) > 0 && rng.IntN(5) == 0 {
				cs = append(cs, sent[rng.IntN(len(sent))]) // a duplicate or a late event
				continue
			}
			key := fmt.Sprintf("k%d", rng.IntN(30))
			version[key] += 1 + uint64(rng.IntN(3))
			c := contrib(key, version[key])
			cs = append(cs, c)
			sent = append(sent, c)
		}
		if err := sink.Apply(ctx, p, &projections.Batch{Contributions: cs}); err != nil {
			t.Fatal(err)
		}
		w, g := testbed.RowsText(t, sink.Shards[0].DB(), want), testbed.RowsText(t, sink.Shards[0].DB(), got)
		if w != g {
			t.Fatalf("after batch %d: the read table is not MIN and MAX of the contributions: %s", batch, testbed.FirstDifference(g, w))
		}
	}
}
