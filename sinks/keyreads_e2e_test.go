package sinks_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

// TestKeyReadsLockOnlyTheirKeys: a batch's locking read of its keys'
// stored state is a range of the primary key however the server would
// plan it. Here a children state just filled (1,200 rows, statistics of
// a small table) and a batch of 1,500 new keys, whose read MariaDB would
// rewrite into a join (an IN list of 1,000 or more) and plan as a scan of
// the link index that covers the columns read: a scan FOR UPDATE stops at
// a row another transaction holds. Another transaction holds one stored
// child of another parent; the batch must apply while it does.
func TestKeyReadsLockOnlyTheirKeys(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "krd", "id INT PRIMARY KEY, pid INT NULL, v VARCHAR(10) NOT NULL")
	p, sink := childrenSink(t, bed, src, sinkDB)
	var stale atomic.Int64
	apply := func(ctx context.Context, ws []projections.ChildWrite) error {
		return sink.Apply(ctx, p, &projections.Batch{ChildWrites: ws, Stale: &stale})
	}
	var first []projections.ChildWrite
	for id := 1; id <= 1200; id++ {
		first = append(first, item(id, 10, 1+id%2, fmt.Sprint(id)))
	}
	if err := apply(ctx, first); err != nil {
		t.Fatal(err)
	}
	db := sink.Shards[0].DB()
	var state string
	if err := db.QueryRowContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '\\_readside\\_child\\_%'").Scan(&state); err != nil {
		t.Fatal(err)
	}
	// The other transaction: one child of parent 2 locked, as a batch
	// of another projector's connection would hold it until its commit.
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "SELECT * FROM `"+state+"` WHERE `_rs_key` = '{\"id\":600}' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	var next []projections.ChildWrite
	for id := 5001; id <= 6500; id++ {
		next = append(next, item(id, 20, 3, fmt.Sprint(id)))
	}
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- apply(actx, next) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the batch of 1,500 new children failed while another transaction held an unrelated child: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the batch of 1,500 new children waited 20 s on a child of another parent that another transaction holds: its read of their stored links locked rows it does not read (a scan)")
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// Parent 3 has no parent row: its children wait in the state.
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+state+"` WHERE `c_pid` = 3").Scan(&n); err != nil || n != 1500 {
		t.Fatalf("parent 3's children in the state: %d (%v), want 1500", n, err)
	}
}
