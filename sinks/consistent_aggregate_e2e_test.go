package sinks_test

import (
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestConsistentCommitsReadWhatTheSinkHolds: an aggregate's consecutive
// consistent commits withdraw each row from the group the sink holds it
// in — after a commit that was rolled back, after a truncation, after a
// repair's withdrawal made outside the applier (verify --repair) — never
// from one a commit remembers. Each step's groups are what the stored
// contributions give. It guards any cache of contributions an applier
// might keep between commits (bench/results/history/consistency-issue42.md
// measured one).
func TestConsistentCommitsReadWhatTheSinkHolds(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "ccache", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	at := int64(-1)
	// commit applies cs in one consistent commit on top of the last one,
	// and commits it unless told to roll it back.
	commit := func(rollback bool, cs ...projections.Contribution) {
		t.Helper()
		c, err := sink.BeginCommit(ctx, []int64{at}, at+1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(p, &projections.Batch{Contributions: cs}); err != nil {
			c.Rollback()
			t.Fatal(err)
		}
		if rollback {
			c.Rollback()
			return
		}
		if err := c.Commit(projections.Frontier{Checkpoint: at + 1, Next: event.Offsets{}}); err != nil {
			t.Fatal(err)
		}
		at++
	}
	step := func(what, want string) {
		t.Helper()
		got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT g, n, total, low FROM stats ORDER BY g")
		if got != want {
			t.Fatalf("%s: %s", what, testbed.FirstDifference(got, want))
		}
	}
	commit(false, contribution("a", 10, 1, "5.00"), contribution("b", 10, 1, "2.00"))
	step("two rows in group 1", "1|2|7.00|2.00|\n")
	commit(false, contribution("b", 11, 2, "3.00"))
	step("a row committed before moves from group 1 to 2", "1|1|5.00|5.00|\n2|1|3.00|3.00|\n")

	commit(true, contribution("a", 12, 2, "1.00"))
	commit(false, contribution("a", 13, 3, "4.00"))
	step("after a rolled-back move, the row moves from where the sink has it", "2|1|3.00|3.00|\n3|1|4.00|4.00|\n")

	commit(false, projections.Contribution{Truncate: true, Version: 14}, contribution("c", 15, 3, "6.00"), contribution("d", 15, 3, "1.50"))
	step("a truncation withdraws the older rows", "3|2|7.50|1.50|\n")
	commit(false, contribution("a", 16, 4, "8.00"), contribution("c", 17, 4, "1.00"))
	step("after a truncation, rows withdrawn by it are not withdrawn again", "3|1|1.50|1.50|\n4|2|9.00|1.00|\n")

	repairOutside(t, sink, p, []sinks.Member{{Key: []byte("a"), Version: 16}}, [][]any{{4}})
	step("the repair withdrew a", "3|1|1.50|1.50|\n4|1|1.00|1.00|\n")
	commit(false, contribution("a", 18, 5, "2.00"))
	step("after a repair, the row withdrawn by it is not withdrawn again", "3|1|1.50|1.50|\n4|1|1.00|1.00|\n5|1|2.00|2.00|\n")
}

// repairOutside withdraws gone and rebuilds groups as verify --repair
// does, outside the applier.
func repairOutside(t *testing.T, sink *sinks.Sharded, p *projections.Projection, gone []sinks.Member, groups [][]any) {
	t.Helper()
	if err := sink.Shards[0].RepairGroups(t.Context(), p, gone, groups); err != nil {
		t.Fatal(err)
	}
}
