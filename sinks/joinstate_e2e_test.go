package sinks_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

// TestApplyParentWritesUnderTruncation: a truncation of a join's parent
// table empties the copies older than it, and a parent change older than
// the truncation (late, replayed, or in the same batch) stays out of the
// join state and of every read row, counted as stale; a newer one comes
// back.
func TestApplyParentWritesUnderTruncation(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "jtr", "id INT PRIMARY KEY, cid INT NULL")
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.c (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".t", src + ".c"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"t_named": {From: src + ".t", Sink: "s", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "cid": "cid"},
		Join:    []config.Join{{From: src + ".c", On: map[string]string{"id": "cid"}, Columns: map[string]string{"name": "name"}}}}}
	p, sink := openProjection(t, bed, cfg)

	var stale atomic.Int64
	apply := func(b *projections.Batch) {
		t.Helper()
		b.Stale = &stale
		if err := sink.Apply(ctx, p, b); err != nil {
			t.Fatal(err)
		}
	}
	row := func(id, cid int, version uint64) projections.Write {
		vals := make([]any, len(p.Columns))
		for i, c := range p.Columns {
			vals[i] = map[string]any{"id": id, "cid": cid}[c.Name]
		}
		return projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: version, Values: projections.ValuesOf(vals...),
			Parents: []projections.ParentRef{{Key: fmt.Sprint(cid), Values: projections.ValuesOf(cid)}}}
	}
	parent := func(cid int, name string, version uint64) projections.ParentWrite {
		return projections.ParentWrite{Join: 0, Key: fmt.Sprint(cid), KeyValues: projections.ValuesOf(cid), Values: projections.ValuesOf(name), Version: version}
	}
	truncate := func(version uint64) projections.ParentWrite {
		return projections.ParentWrite{Join: 0, Truncate: true, Version: version}
	}
	step := func(what, want string, staleWant int64) {
		t.Helper()
		if got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT id, cid, name FROM t_named ORDER BY id"); got != want {
			t.Fatalf("%s: %s", what, testbed.FirstDifference(got, want))
		}
		if got := stale.Load(); got != staleWant {
			t.Fatalf("%s: %d writes counted stale, want %d", what, got, staleWant)
		}
	}

	apply(&projections.Batch{Parents: []projections.ParentWrite{parent(1, "a", 5), parent(2, "b", 5)}})
	apply(&projections.Batch{Writes: []projections.Write{row(1, 1, 10), row(2, 2, 10)}})
	step("rows copy their parents", "1|1|a|\n2|2|b|\n", 0)
	apply(&projections.Batch{Parents: []projections.ParentWrite{truncate(20)}})
	step("a truncation empties the older copies", "1|1|<nil>|\n2|2|<nil>|\n", 0)
	// Parent 1 has a state row the truncation emptied; parent 3 has none,
	// so only the recorded truncation keeps its late change out.
	apply(&projections.Batch{Parents: []projections.ParentWrite{parent(1, "late", 15), parent(3, "late", 18)}})
	step("parent changes older than the truncation stay out", "1|1|<nil>|\n2|2|<nil>|\n", 2)
	apply(&projections.Batch{Writes: []projections.Write{row(3, 1, 21), row(4, 3, 21)}})
	step("rows written after the truncation find no older parent", "1|1|<nil>|\n2|2|<nil>|\n3|1|<nil>|\n4|3|<nil>|\n", 2)
	apply(&projections.Batch{Parents: []projections.ParentWrite{parent(1, "new", 25), parent(3, "c", 25)}})
	step("newer parent changes come back", "1|1|new|\n2|2|<nil>|\n3|1|new|\n4|3|c|\n", 2)
	// One batch: a truncation, a change older than it and one newer.
	apply(&projections.Batch{Parents: []projections.ParentWrite{parent(2, "old", 28), truncate(30), parent(2, "b2", 31), parent(4, "old", 29)}})
	apply(&projections.Batch{Writes: []projections.Write{row(5, 4, 32)}})
	step("in one batch, only the change newer than the truncation is kept", "1|1|<nil>|\n2|2|b2|\n3|1|<nil>|\n4|3|<nil>|\n5|4|<nil>|\n", 4)
}
