package sinks_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestFrozenCommitEndedByTakeover: an applier frozen inside a consistent
// commit (here: a commit opened and left alone) holds the frontier row.
// The applier that took the sink over waits at the row until its lock
// wait times out, then ends the frozen commit's connection (the one
// holding the frontier's owner mark) and commits on its next attempt;
// the frozen commit, once it goes on, fails and leaves nothing. A session
// that holds the row without the mark (an operator's SELECT … FOR
// UPDATE) is never ended: the wait just times out.
func TestFrozenCommitEndedByTakeover(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "frozen", "id INT PRIMARY KEY, v INT")
	p, old := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	// The taking-over applier's lock waits last 2 s instead of 50 (a
	// session variable set by the DSN).
	taker, err := sinks.OpenSharded(ctx, "s", config.Sink{DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB + "?innodb_lock_wait_timeout=2")})
	if err != nil {
		t.Fatal(err)
	}
	defer taker.Close()
	row := func(id int) *projections.Batch {
		return &projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: uint64(id), Values: projections.ValuesOf(id, 10*id)}}}
	}
	commit := func(s *sinks.Sharded, from, at int64, id int) error {
		c, err := s.BeginCommit(ctx, []int64{from}, at)
		if err != nil {
			return err
		}
		if err := c.Apply(p, row(id)); err != nil {
			c.Rollback()
			return err
		}
		return c.Commit(projections.Frontier{Checkpoint: at, Next: event.Offsets{}})
	}
	markHolder := func() sql.NullInt64 {
		t.Helper()
		var id sql.NullInt64
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT IS_USED_LOCK("+strings.ReplaceAll(sinks.OwnerMark, "DATABASE()", "'"+sinkDB+"'")+")", "s").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}

	if err := commit(old, -1, 1, 1); err != nil {
		t.Fatal(err)
	}
	if id := markHolder(); id.Valid {
		t.Fatalf("connection %d still holds the owner mark after its commit: the COMMIT must release it", id.Int64)
	}
	frozen, err := old.BeginCommit(ctx, []int64{1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := frozen.Apply(p, row(2)); err != nil {
		t.Fatal(err)
	}
	if id := markHolder(); !id.Valid {
		t.Fatal("no connection holds the owner mark while a commit holds the frontier")
	}

	var errs []string
	for attempt := 1; ; attempt++ {
		err := commit(taker, 1, 2, 3)
		if err == nil {
			break
		}
		if !sinks.Retryable(err) {
			t.Fatalf("attempt %d: %v (not retried)", attempt, err)
		}
		errs = append(errs, err.Error())
		if attempt == 4 {
			t.Fatalf("the taking-over commit never got past the frozen one's frontier lock:\n%s", strings.Join(errs, "\n"))
		}
	}
	if !strings.Contains(strings.Join(errs, "\n"), "ended sink connection") {
		t.Errorf("no retried error says which connection was ended:\n%s", strings.Join(errs, "\n"))
	}
	if err := frozen.Commit(projections.Frontier{Checkpoint: 2, Next: event.Offsets{}}); err == nil {
		t.Fatal("the frozen commit committed after its connection was ended")
	}
	var ids string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT GROUP_CONCAT(id ORDER BY id) FROM "+sinkDB+".t_copy").Scan(&ids); err != nil {
		t.Fatal(err)
	}
	f, err := taker.Shards[0].Frontier(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if ids != "1,3" || f.Checkpoint != 2 {
		t.Errorf("rows %s at frontier %d, want 1,3 at 2: the taking-over commit's, nothing of the frozen one", ids, f.Checkpoint)
	}

	// An operator's session holding the row holds no mark: left alone.
	operator, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer operator.Close()
	if _, err := operator.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.ExecContext(ctx, "SELECT * FROM `"+sinkDB+"`.`_readside_frontier` FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if err := commit(taker, 2, 3, 4); err == nil || !sinks.Retryable(err) {
		t.Fatalf("a commit behind an operator's lock on the frontier ended with %v, want a retried lock wait timeout", err)
	}
	if err := operator.PingContext(ctx); err != nil {
		t.Fatalf("the operator's session was ended: %v", err)
	}
	if _, err := operator.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatalf("the operator's session was ended: %v", err)
	}
	if err := commit(taker, 2, 3, 4); err != nil {
		t.Fatalf("after the operator's rollback: %v", err)
	}
	rolledBack, err := taker.BeginCommit(ctx, []int64{3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	rolledBack.Rollback()
	if id := markHolder(); id.Valid {
		t.Fatalf("connection %d still holds the owner mark after its commit rolled back: the ROLLBACK must release it", id.Int64)
	}
}
