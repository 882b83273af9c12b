package sinks_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// TestRoutingFence: a live apply waits on a reshard's SELECT … FOR UPDATE
// of the projection's routing row, and once the generation is bumped and
// committed it reads the new one and returns RoutingChanged with nothing
// of its batch committed; an apply at the new generation goes through.
// Both ways a batch's statements reach the server: pipelined, and one per
// round trip (multiStatements=false).
func TestRoutingFence(t *testing.T) {
	bed := testbed.Get(t)
	for i, tc := range []struct{ name, params string }{
		{"pipelined", ""},
		{"one statement per round trip", "?multiStatements=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			src, sinkDB := sourceAndSink(t, bed, fmt.Sprintf("rf%d", i), "id INT PRIMARY KEY, v INT NOT NULL")
			p, sink := copyTableAs(t, bed, src, sinkDB, "t_copy", map[string]string{"id": "id", "v": "v"}, tc.params)
			db := sink.Shards[0].DB()
			batch := func(offset int64, ids ...int) *projections.Batch {
				b := &projections.Batch{Offsets: event.Offsets{}}
				b.Offsets.Set(p.Topic, 0, offset)
				for _, id := range ids {
					b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Values: projections.ValuesOf(id, id*10), Version: uint64(100 + id)})
				}
				return b
			}
			live := sink.Routed(0)
			if err := live.Apply(ctx, p, batch(2, 1)); err != nil {
				t.Fatalf("generation 0 (no routing row) must apply at generation 0: %v", err)
			}

			// The reshard's side of the fence, held by the test.
			fence, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer fence.Rollback()
			if _, err := fence.ExecContext(ctx, "INSERT IGNORE INTO `_readside_routing` (projection, generation, sink, ranges) VALUES (?, 0, 's', '-')", p.Name); err != nil {
				t.Fatal(err)
			}
			var gen uint64
			if err := fence.QueryRowContext(ctx, "SELECT generation FROM `_readside_routing` WHERE projection = ? FOR UPDATE", p.Name).Scan(&gen); err != nil {
				t.Fatal(err)
			}

			done := make(chan error, 1)
			go func() { done <- live.Apply(ctx, p, batch(5, 2, 3)) }()
			waitLockWait(t, db, done)
			if _, err := fence.ExecContext(ctx, "UPDATE `_readside_routing` SET generation = 1, sink = 'other' WHERE projection = ?", p.Name); err != nil {
				t.Fatal(err)
			}
			if err := fence.Commit(); err != nil {
				t.Fatal(err)
			}
			var applyErr error
			select {
			case applyErr = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the apply blocked on the fence did not return after the fence committed")
			}
			var changed *keyspace.RoutingChanged
			if !errors.As(applyErr, &changed) || changed.Want != 0 || changed.Have != 1 || changed.Projection != p.Name {
				t.Fatalf("the apply blocked on the fence returned %v, want RoutingChanged from 0 to 1", applyErr)
			}
			if n, next := rowsAndOffset(t, db, p); n != 1 || next != 2 {
				t.Fatalf("after the refused batch: %d rows and offset %d, want 1 and 2 (nothing of it committed)", n, next)
			}
			// A batch with no query before its COMMIT is refused too.
			if err := live.Apply(ctx, p, batch(6)); !errors.As(err, &changed) {
				t.Fatalf("an offsets-only batch at the old generation returned %v, want RoutingChanged", err)
			}
			if err := sink.Routed(1).Apply(ctx, p, batch(5, 2, 3)); err != nil {
				t.Fatalf("at the new generation the batch must apply: %v", err)
			}
			if n, next := rowsAndOffset(t, db, p); n != 3 || next != 5 {
				t.Fatalf("after the batch at the new generation: %d rows and offset %d, want 3 and 5", n, next)
			}
		})
	}
}

// waitLockWait waits until a transaction on db waits for a row lock (the
// apply reached the fence), failing if the apply returns first. It asks
// every testbed.PollEvery, not faster: InnoDB refreshes INNODB_TRX only
// when nobody has read it for 0.1 s (CACHE_MIN_IDLE_TIME_US), so polling
// more often keeps showing the transactions of the first read — on a
// loaded box, one from before the apply began to wait.
func waitLockWait(t *testing.T, db *sql.DB, done chan error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the apply did not wait for the fence's lock on the routing row: it returned %v", err)
		case <-time.After(testbed.PollEvery):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apply never waited for the fence's lock on the routing row; the server's sessions:\n%s", sessions(t, db))
		}
	}
}

// sessions is the server's process list and InnoDB transactions, for a
// failure that must say where the apply was instead.
func sessions(t *testing.T, db *sql.DB) string {
	var out strings.Builder
	for _, q := range []string{
		"SELECT id, command, time, COALESCE(state, ''), COALESCE(LEFT(info, 200), '') FROM information_schema.PROCESSLIST WHERE command <> 'Daemon'",
		"SELECT trx_mysql_thread_id, trx_state, COALESCE(LEFT(trx_query, 200), ''), trx_started FROM information_schema.INNODB_TRX",
	} {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			fmt.Fprintf(&out, "%s: %v\n", q, err)
			continue
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				fmt.Fprintf(&out, "%v\n", err)
				break
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
			}
			fmt.Fprintln(&out, vals...)
		}
		rows.Close()
	}
	return out.String()
}

func rowsAndOffset(t *testing.T, db *sql.DB, p *projections.Projection) (rows int, next int64) {
	t.Helper()
	ctx := context.Background()
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_copy").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(next_offset), -1) FROM `_readside_offsets` WHERE projection = ?", p.Name).Scan(&next); err != nil {
		t.Fatal(err)
	}
	return rows, next
}

// BenchmarkApplyRouting is the routing check's cost: a caught-up batch (10
// upserts) applied to a real MariaDB sink with and without the check (run
// with E2E=1: go test -run x -bench ApplyRouting ./sinks/).
func BenchmarkApplyRouting(b *testing.B) {
	bed := testbed.Get(b)
	for _, routed := range []bool{false, true} {
		b.Run(fmt.Sprintf("routed=%v", routed), func(b *testing.B) {
			ctx := b.Context()
			src, err := bed.MySQL.CreateDatabase(ctx, "brsrc")
			if err != nil {
				b.Fatal(err)
			}
			sinkDB, err := bed.MySQL.CreateDatabase(ctx, "brsink")
			if err != nil {
				b.Fatal(err)
			}
			if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, v INT NOT NULL)"); err != nil {
				b.Fatal(err)
			}
			p, sink := copyTableAs(b, bed, src, sinkDB, "t_copy", map[string]string{"id": "id", "v": "v"}, "")
			var s projections.Sink = sink
			if routed {
				s = sink.Routed(0)
			}
			n := 0
			for b.Loop() {
				batch := &projections.Batch{Offsets: event.Offsets{}}
				n++
				batch.Offsets.Set(p.Topic, 0, int64(n))
				for i := range 10 {
					id := (n*10 + i) % 5000
					batch.Writes = append(batch.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Values: projections.ValuesOf(id, n), Version: uint64(n)})
				}
				if err := s.Apply(ctx, p, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
