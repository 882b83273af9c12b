package sinks_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// first is contribution marked as an insert's: the sink writes it
// without reading its key first.
func first(key string, v uint64, g any, amount any) projections.Contribution {
	c := contribution(key, v, g, amount)
	c.First = true
	return c
}

// firstContributionsHistory is a history of batches whose insert
// contributions are sometimes stored already: a duplicate delivery, a
// replay after a crash (half of the batch applied before), a key reused
// after its delete, a late insert behind the row's update. want is the
// read table after each batch (g, n, total, low), readsAll whether the
// sink then reads every key.
var firstContributionsHistory = []struct {
	what     string
	batch    []projections.Contribution
	want     string
	readsAll bool
}{
	{"new rows", []projections.Contribution{first("a", 10, 1, "5.00"), first("b", 10, 1, "2.00")},
		"1|2|7.00|2.00|\n", false},
	{"the same inserts delivered again", []projections.Contribution{first("a", 10, 1, "5.00"), first("b", 10, 1, "2.00")},
		"1|2|7.00|2.00|\n", true},
	{"a replay: one insert applied before, one new", []projections.Contribution{first("b", 10, 1, "2.00"), first("c", 11, 2, "1.00")},
		"1|2|7.00|2.00|\n2|1|1.00|1.00|\n", true},
	{"new rows only: the sink guesses again afterwards", []projections.Contribution{first("d", 12, 2, "4.00")},
		"1|2|7.00|2.00|\n2|2|5.00|1.00|\n", false},
	{"a delete", []projections.Contribution{contribution("a", 13, nil, nil)},
		"1|1|2.00|2.00|\n2|2|5.00|1.00|\n", false},
	{"the deleted key inserted again, into another group", []projections.Contribution{first("a", 14, 2, "0.50"), first("e", 14, 3, "3.00")},
		"1|1|2.00|2.00|\n2|3|5.50|0.50|\n3|1|3.00|3.00|\n", true},
	{"an update and a new row", []projections.Contribution{contribution("e", 16, 1, "6.00"), first("f", 16, 3, "9.00")},
		"1|2|8.00|2.00|\n2|3|5.50|0.50|\n3|1|9.00|9.00|\n", false},
	{"the insert of a row updated since, late", []projections.Contribution{first("e", 15, 3, "3.00")},
		"1|2|8.00|2.00|\n2|3|5.50|0.50|\n3|1|9.00|9.00|\n", true},
}

// TestApplyContributionsFirstStoredAfterAll: insert contributions the
// sink holds already (duplicates, replays, reused keys, late inserts)
// change the groups as they would read first: the insert that finds the
// key fails, and the batch is applied again reading every key, without
// end-less retries; once a batch that read every key finds no insert's
// key stored, the sink guesses again.
func TestApplyContributionsFirstStoredAfterAll(t *testing.T) {
	bed := testbed.Get(t)
	src, sinkDB := sourceAndSink(t, bed, "aggfirst", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // an endless retry fails the test
	defer cancel()
	var stale atomic.Int64
	for i, step := range firstContributionsHistory {
		if err := sink.Apply(ctx, p, &projections.Batch{Contributions: step.batch, Stale: &stale}); err != nil {
			t.Fatalf("batch %d (%s): %v", i, step.what, err)
		}
		checkFirstStep(t, sink, p, i, step.what, step.want, step.readsAll)
	}
	if want := int64(4); stale.Load() != want {
		t.Errorf("%d contributions counted stale, want %d (a, b, b, late e)", stale.Load(), want)
	}
}

// TestConsistentCommitsFirstStoredAfterAll: the same history in
// consistent commits, each batch cut in two chunks (the key found stored
// in the second, after a chunk of new keys): a commit whose insert finds
// a key stored fails as contention and, started again as the applier
// does, reads every key of the whole cut.
func TestConsistentCommitsFirstStoredAfterAll(t *testing.T) {
	bed := testbed.Get(t)
	src, sinkDB := sourceAndSink(t, bed, "cfirst", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	ctx := t.Context()
	at := int64(-1)
	for i, step := range firstContributionsHistory {
		n := len(step.batch)
		chunks := [][]projections.Contribution{step.batch[n/2:], step.batch[:n/2]}
		var err error
		for attempt := 1; attempt <= 2; attempt++ {
			if err = consistentCommit(ctx, sink, p, at, chunks); err == nil {
				break
			}
			if !sinks.Retryable(err) {
				t.Fatalf("batch %d (%s): %v (not retried)", i, step.what, err)
			}
			// Its next attempt reads every key: the applier starts the
			// commit again without waiting.
			if !sinks.RetryAtOnce(err) {
				t.Fatalf("batch %d (%s): %v (a wrong guess, not told apart for a retry at once)", i, step.what, err)
			}
		}
		if err != nil {
			t.Fatalf("batch %d (%s): still failing after one attempt that reads every key: %v", i, step.what, err)
		}
		at++
		checkFirstStep(t, sink, p, i, step.what, step.want, step.readsAll)
	}
}

// consistentCommit applies chunks in one consistent commit on top of at.
func consistentCommit(ctx context.Context, sink *sinks.Sharded, p *projections.Projection, at int64, chunks [][]projections.Contribution) error {
	c, err := sink.BeginCommit(ctx, []int64{at}, at+1)
	if err != nil {
		return err
	}
	for _, cs := range chunks {
		if err := c.Apply(p, &projections.Batch{Contributions: cs}); err != nil {
			c.Rollback()
			return err
		}
	}
	return c.Commit(projections.Frontier{Checkpoint: at + 1, Next: event.Offsets{}})
}

func checkFirstStep(t *testing.T, sink *sinks.Sharded, p *projections.Projection, i int, what, want string, readsAll bool) {
	t.Helper()
	got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT g, n, total, low FROM stats ORDER BY g")
	if got != want {
		t.Fatalf("after batch %d (%s): %s", i, what, testbed.FirstDifference(got, want))
	}
	if r := sink.Shards[0].ReadsEveryKey(p); r != readsAll {
		t.Errorf("after batch %d (%s): reads every key %v, want %v", i, what, r, readsAll)
	}
	if err := checkGroupsFromContributions(t, sink); err != "" {
		t.Fatalf("after batch %d (%s): %s", i, what, err)
	}
}

// checkGroupsFromContributions compares the read table with the groups
// the stored contributions give.
func checkGroupsFromContributions(t *testing.T, sink *sinks.Sharded) string {
	db := sink.Shards[0].DB()
	got := testbed.RowsText(t, db, "SELECT g, n, total, low FROM stats ORDER BY g")
	want := testbed.RowsText(t, db, "SELECT g_g, COUNT(*), SUM(v_total), MIN(v_low) FROM `_readside_agg_stats` WHERE g_g IS NOT NULL GROUP BY g_g ORDER BY g_g")
	if got != want {
		return fmt.Sprintf("the read table is not the contributions' groups: %s", testbed.FirstDifference(got, want))
	}
	return ""
}

// TestConsistentCommitAfterTruncationReadsEveryKey: a truncated table's
// keys come back as inserts (First contributions) in the same consistent
// commit as the truncation, in a later chunk. Their withdrawn
// contributions are stored, so guessing them new would fail the whole
// commit once (a rollback of millions of rows after a large truncation):
// the truncation makes the projection read every key, and the commit
// lands at its first attempt with the groups of the new rows only.
func TestConsistentCommitAfterTruncationReadsEveryKey(t *testing.T) {
	bed := testbed.Get(t)
	src, sinkDB := sourceAndSink(t, bed, "ctrunc", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	ctx := t.Context()
	firstOf := func(key string, v uint64, g int, amount string) projections.Contribution {
		c := contribution(key, v, g, amount)
		c.First = true
		return c
	}
	if err := consistentCommit(ctx, sink, p, -1, [][]projections.Contribution{{firstOf("1", 10, 1, "1.00"), firstOf("2", 11, 1, "2.00"), firstOf("3", 12, 2, "3.00")}}); err != nil {
		t.Fatal(err)
	}
	if sink.Shards[0].ReadsEveryKey(p) {
		t.Fatal("new keys guessed right: the projection reads every key already")
	}
	err := consistentCommit(ctx, sink, p, 0, [][]projections.Contribution{
		{{Truncate: true, Version: 20}},
		{firstOf("1", 21, 2, "5.00"), firstOf("2", 22, 3, "7.00")},
	})
	if err != nil {
		t.Fatalf("the commit of a truncation and the truncated keys inserted again failed (retry at once %v): %v", sinks.RetryAtOnce(err), err)
	}
	if got, want := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT g, n, total, low FROM stats ORDER BY g"), "2|1|5.00|5.00|\n3|1|7.00|7.00|\n"; got != want {
		t.Fatalf("groups after the truncation and the new rows: %s", testbed.FirstDifference(got, want))
	}
	if err := checkGroupsFromContributions(t, sink); err != "" {
		t.Fatal(err)
	}
}
