package sinks_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// TestConsistentCommitWaitsAtTheFrontierLock: a commit opened while
// another one holds the frontier (a zombie beside the active applier)
// waits at the frontier lock, and commits only on top of what the other
// committed: after its commit it lands; after its rollback it fails with
// ErrFrontierMoved and nothing of it is written.
func TestConsistentCommitWaitsAtTheFrontierLock(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "cif", "id INT PRIMARY KEY, v INT")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	row := func(id int) *projections.Batch {
		return &projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: uint64(id), Values: projections.ValuesOf(id, 10*id)}}}
	}
	begin := func(from, target int64) projections.SinkCommit {
		t.Helper()
		c, err := sink.BeginCommit(ctx, []int64{from}, target)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// onTop opens a commit from checkpoint from to at, applies row id and
	// commits, in the background: it may wait at the lock from the start.
	onTop := func(from, at int64, id int) <-chan error {
		done := make(chan error, 1)
		go func() {
			c, err := sink.BeginCommit(ctx, []int64{from}, at)
			if err != nil {
				done <- err
				return
			}
			err = c.Apply(p, row(id))
			if err == nil {
				err = c.Commit(projections.Frontier{Checkpoint: at, Next: event.Offsets{}})
			}
			if err != nil {
				c.Rollback()
			}
			done <- err
		}()
		return done
	}
	if err := <-onTop(-1, 1, 1); err != nil {
		t.Fatal(err)
	}

	under := begin(1, 2)
	if err := under.Apply(p, row(2)); err != nil {
		t.Fatal(err)
	}
	later := onTop(2, 3, 3)
	if err := under.Commit(projections.Frontier{Checkpoint: 2, Next: event.Offsets{}}); err != nil {
		t.Fatal(err)
	}
	if err := <-later; err != nil {
		t.Fatalf("the commit opened while another held the frontier failed after that one committed: %v", err)
	}

	under = begin(3, 4)
	if err := under.Apply(p, row(4)); err != nil {
		t.Fatal(err)
	}
	later = onTop(4, 5, 5)
	under.Rollback()
	if err := <-later; !errors.Is(err, projections.ErrFrontierMoved) {
		t.Fatalf("the commit opened while another held the frontier ended with %v after that one rolled back, want ErrFrontierMoved", err)
	}

	f, err := sink.Shards[0].Frontier(ctx, sink.Name)
	if err != nil {
		t.Fatal(err)
	}
	var ids string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT GROUP_CONCAT(id ORDER BY id) FROM "+sinkDB+".t_copy").Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if f.Checkpoint != 3 || ids != "1,2,3" {
		t.Errorf("frontier at %d with rows %s, want 3 with 1,2,3: each commit on top of the one before it, none on top of a rollback", f.Checkpoint, ids)
	}
}
