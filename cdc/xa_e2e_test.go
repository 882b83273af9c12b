package cdc

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestXATransactions: XA transactions on a table readside does not
// capture (another application's, a sink's on the source's server) are
// passed over — prepared then committed, prepared then rolled back, and
// in one phase — while the changes of the captured table around them are
// published in order and the tailer keeps running; an XA transaction that
// changes a captured table stops it naming the table, the position and
// the fix (xa.go).
func TestXATransactions(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "xa")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY)", db),
		fmt.Sprintf("CREATE TABLE `%s`.other (id INT PRIMARY KEY)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".t")
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t"))
	done := runTailer(t, cfg)
	waitForTailer(t, bed, cfg)

	// One session holds each XA transaction from XA START to its
	// prepare; the captured inserts go through the pool.
	xa, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer xa.Close()
	run := func(conn *sql.Conn, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	captured := func(id int) {
		t.Helper()
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.t VALUES (%d)", db, id)); err != nil {
			t.Fatal(err)
		}
	}
	other := func(id int) string { return fmt.Sprintf("INSERT INTO `%s`.other VALUES (%d)", db, id) }
	captured(1)
	run(xa, "XA START 'two'", other(1), "XA END 'two'", "XA PREPARE 'two'")
	captured(2) // between the prepare and the decision
	run(xa, "XA COMMIT 'two'")
	captured(3)
	run(xa, "XA START 'one'", other(2), "XA END 'one'", "XA COMMIT 'one' ONE PHASE")
	captured(4)
	run(xa, "XA START 'back'", other(3), "XA END 'back'", "XA PREPARE 'back'", "XA ROLLBACK 'back'")
	captured(5)

	events := cons.next(5, 30*time.Second)
	slices.SortFunc(events, func(a, b testEvent) int { return int(a.Version) - int(b.Version) })
	var ids []string
	for _, e := range events {
		ids = append(ids, fmt.Sprint(e.After["id"]))
	}
	if fmt.Sprint(ids) != "[1 2 3 4 5]" {
		t.Errorf("published %v in version order, want [1 2 3 4 5]", ids)
	}
	select {
	case err := <-done:
		t.Fatalf("the tailer stopped on XA transactions of a table it does not capture: %v", err)
	default:
	}

	// Prepared, never decided here: the rows might still roll back.
	t.Cleanup(func() {
		if err := bed.MySQL.Exec(context.Background(), "XA ROLLBACK 'cap'"); err != nil {
			t.Errorf("rolling back the prepared XA transaction: %v", err)
		}
	})
	run(xa, "XA START 'cap'", fmt.Sprintf("INSERT INTO `%s`.t VALUES (6)", db), "XA END 'cap'", "XA PREPARE 'cap'")
	expectStop(t, done, "XA transaction on the source at", "changes captured table "+db+".t", "Fix: write "+db+".t in plain transactions", "fresh snapshot")
}
