package sinks_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestConsistentCommitRefreshesArraysAtItsEnd: in a consistent commit of
// several batches, the child states are written batch by batch and the
// arrays they touch refreshed once, before the frontier
// (children_deferred.go). After every commit the parents' arrays and
// counts are exactly what the same batches give applied one transaction
// each in row mode (which refreshes every batch's arrays at once), over
// children moved between parents back and forth across batches, deleted,
// late and repeated states, parents written before and after their
// children and deleted, truncations in the middle of a commit, commits
// rolled back, and notes refreshed early when they grow past their bound.
func TestConsistentCommitRefreshesArraysAtItsEnd(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "chdefer", "id INT PRIMARY KEY, pid INT NULL, v VARCHAR(10) NOT NULL")
	p, sink := childrenSink(t, bed, src, sinkDB)
	rowDB, err := bed.MySQL.CreateDatabase(ctx, "chdefer_row")
	if err != nil {
		t.Fatal(err)
	}
	rowP, rowSink := openProjection(t, bed, childrenConfig(bed, src, rowDB))

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 45))
	version := map[string]uint64{}
	var sent []projections.ChildWrite
	next := func(key string) uint64 {
		version[key] = max(version[key], version["truncate"]) + 1 + uint64(rng.IntN(3))
		return version[key]
	}
	batch := func() *projections.Batch {
		b := &projections.Batch{}
		if rng.IntN(20) == 0 {
			version["truncate"] += 1000
			b.ChildWrites = append(b.ChildWrites, projections.ChildWrite{Truncate: true, Version: version["truncate"]})
		}
		for range 1 + rng.IntN(10) {
			if len(sent) > 0 && rng.IntN(5) == 0 {
				b.ChildWrites = append(b.ChildWrites, sent[rng.IntN(len(sent))]) // late or repeated
				continue
			}
			id := 1 + rng.IntN(40)
			var pid any
			if rng.IntN(6) > 0 {
				pid = 1 + rng.IntN(6)
			}
			w := item(id, next(fmt.Sprintf("c%d", id)), pid, fmt.Sprintf("v%d", rng.IntN(100)))
			b.ChildWrites = append(b.ChildWrites, w)
			sent = append(sent, w)
		}
		for range rng.IntN(3) {
			id := 1 + rng.IntN(6)
			w := projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: next(fmt.Sprintf("p%d", id)), Values: projections.ValuesOf(id)}
			if rng.IntN(4) == 0 {
				w = projections.Write{Kind: projections.Delete, Key: fmt.Sprint(id), Version: w.Version, Values: projections.ValuesOf(id)}
			}
			b.Writes = append(b.Writes, w)
		}
		return b
	}
	const arrays = "SELECT id, items, items_count FROM parents ORDER BY id"
	at, full := int64(-1), 0
	defer sinks.SetMaxDeferredLinks(sinks.SetMaxDeferredLinks(20_000))
	for commit := range 100 {
		bound := 20_000
		if commit%2 == 1 {
			bound = 1 + rng.IntN(3) // refreshed early, several times a commit
		}
		sinks.SetMaxDeferredLinks(bound)
		c, err := sink.BeginCommit(ctx, []int64{at}, at+1)
		if err != nil {
			t.Fatal(err)
		}
		var bs []*projections.Batch
		for range 1 + rng.IntN(6) {
			b := batch()
			bs = append(bs, b)
			if err := c.Apply(p, b); err != nil {
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
		for _, b := range bs {
			if err := rowSink.Apply(ctx, rowP, b); err != nil {
				t.Fatal(err)
			}
		}
		w, g := testbed.RowsText(t, rowSink.Shards[0].DB(), arrays), testbed.RowsText(t, sink.Shards[0].DB(), arrays)
		if w != g {
			t.Fatalf("after commit %d (bound %d): the arrays differ from row mode's: %s", commit, bound, testbed.FirstDifference(g, w))
		}
		if n := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT COUNT(*) FROM parents WHERE items_count > 1"); n != "0|\n" {
			full++
		}
	}
	if full < 10 {
		t.Errorf("a parent had two children or more after only %d commits: the test checks little", full)
	}
}
