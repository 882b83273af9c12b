package sinks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// childrenSink declares parents (src.p, keyed by id) with the rows of
// src.t nested by pid as items {v: v}, ordered by id, and creates its
// tables.
func childrenSink(t *testing.T, bed *testbed.Bed, src, sinkDB string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	if err := bed.MySQL.Exec(t.Context(), "CREATE TABLE `"+src+"`.p (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return openProjection(t, bed, childrenConfig(bed, src, sinkDB))
}

// childrenConfig projects src.p into sinkDB as parents, with src.t's rows
// (pid, v) as its items.
func childrenConfig(bed *testbed.Bed, src, sinkDB string) config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".p", src + ".t"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"parents": {From: src + ".p", Sink: "s", Key: []string{"id"}, Columns: map[string]string{"id": "id"},
		Children: map[string]config.Children{"items": {From: src + ".t", On: map[string]string{"pid": "id"}, Columns: map[string]string{"v": "v"}}}}}
	return cfg
}

// item is child id's state at version v: under parent pid with value v,
// or none (deleted) when pid is nil. The state columns are pid, id, v.
func item(id int, version uint64, pid any, v string) projections.ChildWrite {
	w := projections.ChildWrite{SourceKey: fmt.Sprintf(`{"id":%d}`, id), Version: version}
	if pid != nil {
		w.Link, w.LinkKey = projections.ValuesOf(pid), fmt.Sprint(pid)
		w.Values = projections.ValuesOf(pid, id, v)
	}
	return w
}

// TestApplyChildWrites: the sink's rules for child state, one at a time:
// children fill their parent's array (in the key's order), a late or
// repeated state changes nothing (counted as stale), a newer one moves
// the child to another parent (both arrays rebuilt), a deleted child
// stays deleted, a parent written after its children picks them up, and
// a truncation withdraws every older state but nothing newer.
func TestApplyChildWrites(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "chl", "id INT PRIMARY KEY, pid INT NULL, v VARCHAR(10) NOT NULL")
	p, sink := childrenSink(t, bed, src, sinkDB)
	var stale atomic.Int64
	apply := func(b *projections.Batch) {
		t.Helper()
		b.Stale = &stale
		if err := sink.Apply(ctx, p, b); err != nil {
			t.Fatal(err)
		}
	}
	children := func(ws ...projections.ChildWrite) { apply(&projections.Batch{ChildWrites: ws}) }
	parent := func(id int, v uint64) projections.Write {
		return projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: v, Values: projections.ValuesOf(id)}
	}
	step := func(what, want string) {
		t.Helper()
		if got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT id, items, items_count FROM parents ORDER BY id"); got != want {
			t.Fatalf("%s: %s", what, testbed.FirstDifference(got, want))
		}
	}
	apply(&projections.Batch{Writes: []projections.Write{parent(1, 5), parent(2, 5)}})
	children(item(2, 10, 1, "b"), item(1, 10, 1, "a"), item(3, 10, 2, "c"))
	step("children fill their parents' arrays", `1|[{"v": "a"},{"v": "b"}]|2|`+"\n"+`2|[{"v": "c"}]|1|`+"\n")
	children(item(1, 9, 2, "old"), item(3, 10, 1, "c"))
	step("an older and a repeated state change nothing", `1|[{"v": "a"},{"v": "b"}]|2|`+"\n"+`2|[{"v": "c"}]|1|`+"\n")
	if stale.Load() != 0 {
		t.Errorf("%d child writes counted stale: the version guard is in the statement, the floor counts", stale.Load())
	}
	children(item(2, 11, 2, "b2"))
	step("a move rebuilds both arrays", `1|[{"v": "a"}]|1|`+"\n"+`2|[{"v": "b2"},{"v": "c"}]|2|`+"\n")
	children(item(1, 12, nil, ""))
	children(item(1, 11, 1, "late"))
	step("a deleted child stays deleted", "1|<nil>|0|\n"+`2|[{"v": "b2"},{"v": "c"}]|2|`+"\n")
	children(item(4, 13, 3, "d"))
	apply(&projections.Batch{Writes: []projections.Write{parent(3, 6)}})
	step("a parent after its children", "1|<nil>|0|\n"+`2|[{"v": "b2"},{"v": "c"}]|2|`+"\n"+`3|[{"v": "d"}]|1|`+"\n")
	children(item(5, 20, 1, "e"), projections.ChildWrite{Truncate: true, Version: 15}, item(6, 14, 1, "f"))
	step("a truncation withdraws what is older, keeps what is newer", `1|[{"v": "e"}]|1|`+"\n2|<nil>|0|\n3|<nil>|0|\n")
	// Child 3 has a state row the truncation withdrew; child 8 has none,
	// so only the recorded truncation keeps its late state out.
	children(item(3, 14, 2, "c3"), item(7, 16, 2, "g"), item(8, 14, 2, "h"))
	step("after a truncation, older states stay out", `1|[{"v": "e"}]|1|`+"\n"+`2|[{"v": "g"}]|1|`+"\n3|<nil>|0|\n")
	if stale.Load() != 3 {
		t.Errorf("%d child writes counted stale below the truncation, want 3", stale.Load())
	}
}

// TestApplyChildWritesShrinkOversizedBatch: a batch of child states too
// large for the sink's max_allowed_packet is cut into statements that
// fit, and every array is whole.
func TestApplyChildWritesShrinkOversizedBatch(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "chlbig", "id INT PRIMARY KEY, pid INT NULL, v VARCHAR(300) NOT NULL")
	setGlobal(t, bed, "max_allowed_packet", 65536)
	p, sink := childrenSink(t, bed, src, sinkDB) // connects after the change: learns 64 KiB
	b := &projections.Batch{}
	for id := range 40 {
		b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: 1, Values: projections.ValuesOf(id)})
	}
	for i := range 3000 {
		b.ChildWrites = append(b.ChildWrites, item(i, 100, i%40, strings.Repeat("x", 200)))
	}
	actx, cancel := context.WithTimeout(ctx, 120*time.Second) // a retry loop must fail the test, not hang it
	defer cancel()
	if err := sink.Apply(actx, p, b); err != nil {
		t.Fatalf("child states over max_allowed_packet must be cut to fit, got %v", err)
	}
	got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT SUM(items_count), SUM(JSON_LENGTH(items)), COUNT(*) FROM parents")
	if want := "3000|3000|40|\n"; got != want {
		t.Fatalf("after the shrunk batch: %q, want %q", got, want)
	}
}

// TestApplyChildStateBeforeLinkLock: a transaction writes its child state
// before it waits for a link another transaction holds, so the two
// transactions of a poll (an order and its lines arrive on different
// topics, so in different ones) write their state side by side and queue
// only for the refresh. The test holds parent 1's link row; a batch of a
// child of parent 1 must be seen waiting with its state row already
// written.
func TestApplyChildStateBeforeLinkLock(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "chb", "id INT PRIMARY KEY, pid INT NULL, v VARCHAR(10) NOT NULL")
	p, sink := childrenSink(t, bed, src, sinkDB)
	db := sink.Shards[0].DB()
	// The link row exists once a batch has locked it.
	parent := projections.Write{Kind: projections.Upsert, Key: "1", Version: 5, Values: projections.ValuesOf(1)}
	if err := sink.Apply(ctx, p, &projections.Batch{Writes: []projections.Write{parent}, ChildWrites: []projections.ChildWrite{item(1, 10, 1, "a")}}); err != nil {
		t.Fatal(err)
	}
	hold, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	var link int
	if err := hold.QueryRowContext(ctx, "SELECT * FROM `"+p.Children[0].LinkTable(p)+"` FOR UPDATE").Scan(&link); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- sink.Apply(ctx, p, &projections.Batch{ChildWrites: []projections.ChildWrite{item(2, 11, 1, "b")}})
	}()
	var modified int
	testbed.Eventually(t, 60*time.Second, func() (bool, string) {
		err := db.QueryRowContext(ctx, "SELECT trx_rows_modified FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&modified)
		return err == nil, fmt.Sprintf("the batch never waited for the held link (%v)", err)
	})
	if modified < 1 {
		t.Errorf("the batch waits for the link with %d rows modified: its child state is written after the lock", modified)
	}
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := testbed.RowsText(t, db, "SELECT id, items, items_count FROM parents"), `1|[{"v": "a"},{"v": "b"}]|2|`+"\n"; got != want {
		t.Errorf("after the wait: %s", testbed.FirstDifference(got, want))
	}
}

// TestChildrenRefusedOnMySQLSink: `readside check` (CheckChildren) and
// every projector start (CheckReadTable) refuse children on a sink that
// is not MariaDB, naming the fix; the same tables on MariaDB pass.
func TestChildrenRefusedOnMySQLSink(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "chmy", "id INT PRIMARY KEY, pid INT NULL, v VARCHAR(10) NOT NULL")
	p, sink := childrenSink(t, bed, src, sinkDB)
	if err := sink.CheckChildren(p); err != nil {
		t.Fatalf("children on MariaDB: %v", err)
	}
	if err := sink.CheckReadTable(ctx, p); err != nil {
		t.Fatalf("the read table on MariaDB: %v", err)
	}
	sink.PretendMySQL()
	const want = "projection parents nests children (items), which need a MariaDB sink"
	if err := sink.CheckChildren(p); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("readside check on a MySQL sink: %v, want %q", err, want)
	}
	if err := sink.CheckReadTable(ctx, p); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a projector's start on a MySQL sink: %v, want %q", err, want)
	}
}
