package reshard

import (
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestCopyStateTakesFanOutNotes: with fan_out: background, the copy of a
// projection's state to a new shard takes the notes of parents whose
// rows still wait for their copy (the pending table) beside the join
// state, so the new shard's projector copies those parents into the rows
// moved there; without them, a parent renamed just before the copy would
// stay old in the moved rows.
func TestCopyStateTakesFanOutNotes(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "rscsrc")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, cid INT NOT NULL)",
		"CREATE TABLE `"+src+"`.c (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var dbs []string
	for range 2 {
		db, err := bed.MySQL.CreateDatabase(ctx, "rscsink")
		if err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	cfg := bed.Config("rsc", src+".t", src+".c")
	cfg.Sinks = map[string]config.Sink{"old": {DSN: config.Secret(bed.MySQL.AdminDSN() + dbs[0])}, "new": {DSN: config.Secret(bed.MySQL.AdminDSN() + dbs[1])}}
	cfg.Projections = map[string]config.Projection{"named": {From: src + ".t", Sink: "old", Key: []string{"id"}, Columns: map[string]string{"id": "id", "cid": "cid"},
		FanOut: "background",
		Join:   []config.Join{{From: src + ".c", On: map[string]string{"id": "cid"}, Columns: map[string]string{"name": "name"}}}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string) *sinks.Sharded {
		s, err := sinks.OpenSharded(ctx, name, cfg.Sinks[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Exec(ctx, sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	oldSink, newSink := open("old"), open("new")
	// A row of customer 7, then customer 7 renamed: the rename leaves a
	// note for the background copy, which no runner takes here.
	if err := oldSink.Apply(ctx, p, &projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: "1", Version: 10,
		Values: projections.ValuesOf(7, 1), Parents: []projections.ParentRef{{Key: "7", Values: projections.ValuesOf(7)}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := oldSink.Apply(ctx, p, &projections.Batch{Parents: []projections.ParentWrite{{Join: 0, Key: "7", KeyValues: projections.ValuesOf(7), Values: projections.ValuesOf("renamed"), Version: 11}}}); err != nil {
		t.Fatal(err)
	}
	pending := "SELECT k_id FROM `" + p.Joins[0].PendingTable(p) + "`"
	if got := testbed.RowsText(t, oldSink.Shards[0].DB(), pending); got != "7|\n" {
		t.Fatalf("the rename's note on the old shard: %q, want customer 7", got)
	}
	r := &Reshard{p: p, o: Options{Old: oldSink, New: newSink, ChunkRows: 100}}
	if err := r.copyState(ctx, oldSink.Shards[0], newSink.Shards[0], true); err != nil {
		t.Fatal(err)
	}
	if got := testbed.RowsText(t, newSink.Shards[0].DB(), pending); got != "7|\n" {
		t.Errorf("notes on the new shard after the state copy: %q, want customer 7's", got)
	}
	if got := testbed.RowsText(t, newSink.Shards[0].DB(), "SELECT k_id, c_name FROM `"+p.Joins[0].StateTable(p)+"`"); got != "7|renamed|\n" {
		t.Errorf("join state on the new shard after the state copy: %q, want customer 7 renamed", got)
	}
}
