package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/readside/readside/e2e/testbed"
)

// TestOnlineSchemaChangeCutOver: an online schema change the way
// pt-online-schema-change runs one (gh-ost and Spirit end the same way)
// on a captured table under live writes: a new table beside it with a
// column added in the middle and a column widened, triggers copying every
// change into it, the rows copied in chunks, then the cut-over `RENAME
// TABLE t TO t_old, t_new TO t`. The tailer stopped the whole daemon at
// the rename ("captured table was renamed to _messages_old, which is not
// in source.tables"). The captured name is followed to the table that now
// has it: the read table equals the source after writes before, during
// and after the migration, a value only the widened column holds
// included, and the daemon never stops.
func TestOnlineSchemaChangeCutOver(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "osc", bed.Kafka.Brokers(), "")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	p.insertRange(ctx, 1, 300, "a")
	db := bed.MySQL.DB()
	q := func(name string) string { return "`" + p.src + "`." + name }
	tbl, nw, old := q("messages"), q("_messages_new"), q("_messages_old")

	// The application writes by column name all along, the way an
	// application that outlives a migration does.
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	writerErr := make(chan error, 1)
	// The cut-over holds the writes, as gh-ost's table lock does, while
	// the triggers go and the tables swap: MariaDB failed writes after a
	// RENAME with the triggers still there (1146 on the trigger's target,
	// now renamed), so they go first; nothing is written in between.
	var cutOver sync.RWMutex
	go func() {
		rng := rand.New(rand.NewPCG(53, 7))
		for i := 0; wctx.Err() == nil; i++ {
			id := 1 + rng.IntN(400)
			var err error
			cutOver.RLock()
			switch rng.IntN(4) {
			case 0:
				_, err = db.ExecContext(wctx, "INSERT INTO "+tbl+" (id, sender_id, created_at, body) VALUES (?, ?, '2026-01-01 00:00:00', ?) ON DUPLICATE KEY UPDATE body = VALUES(body)",
					id, rng.IntN(20), fmt.Sprintf("i%d", i))
			case 1:
				_, err = db.ExecContext(wctx, "UPDATE "+tbl+" SET body = ? WHERE id = ?", fmt.Sprintf("u%d", i), id)
			case 2:
				_, err = db.ExecContext(wctx, "UPDATE "+tbl+" SET sender_id = ? WHERE id = ?", rng.IntN(20), id)
			default:
				_, err = db.ExecContext(wctx, "DELETE FROM "+tbl+" WHERE id = ?", id)
			}
			cutOver.RUnlock()
			if err != nil && wctx.Err() == nil && !retryableWrite(err) && !triggerTargetGone(err) {
				writerErr <- err
				return
			}
		}
		writerErr <- nil
	}()

	exec := func(stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			for attempt := 0; ; attempt++ {
				_, err := db.ExecContext(ctx, s)
				if err == nil {
					break
				}
				if !retryableWrite(err) || attempt == 20 {
					t.Fatalf("%s: %v", s, err)
				}
			}
		}
	}
	cols := "id, sender_id, created_at, body"
	exec("CREATE TABLE "+nw+" LIKE "+tbl,
		"ALTER TABLE "+nw+" ADD COLUMN note VARCHAR(20) NULL AFTER id, MODIFY body VARCHAR(300)",
		"CREATE TRIGGER "+q("osc_ins")+" AFTER INSERT ON "+tbl+" FOR EACH ROW REPLACE INTO "+nw+" ("+cols+") VALUES (NEW.id, NEW.sender_id, NEW.created_at, NEW.body)",
		"CREATE TRIGGER "+q("osc_upd")+" AFTER UPDATE ON "+tbl+" FOR EACH ROW REPLACE INTO "+nw+" ("+cols+") VALUES (NEW.id, NEW.sender_id, NEW.created_at, NEW.body)",
		"CREATE TRIGGER "+q("osc_del")+" AFTER DELETE ON "+tbl+" FOR EACH ROW DELETE IGNORE FROM "+nw+" WHERE id = OLD.id")
	for lo := 1; lo <= 400; lo += 50 {
		exec(fmt.Sprintf("INSERT IGNORE INTO %s (%s) SELECT %s FROM %s WHERE id BETWEEN %d AND %d LOCK IN SHARE MODE", nw, cols, cols, tbl, lo, lo+49))
		time.Sleep(50 * time.Millisecond)
	}
	cutOver.Lock()
	exec("DROP TRIGGER "+q("osc_ins"), "DROP TRIGGER "+q("osc_upd"), "DROP TRIGGER "+q("osc_del"),
		"RENAME TABLE "+tbl+" TO "+old+", "+nw+" TO "+tbl)
	cutOver.Unlock()
	exec("DROP TABLE " + old)
	time.Sleep(2 * time.Second)
	stopWriter()
	if err := <-writerErr; err != nil {
		t.Fatalf("the application's writes failed: %v", err)
	}
	// A value only the widened column holds, and the new column set.
	exec("UPDATE "+tbl+" SET body = REPEAT('w', 200), note = 'n' WHERE id = (SELECT id FROM (SELECT MIN(id) AS id FROM "+tbl+") m)",
		"INSERT INTO "+tbl+" (id, note, sender_id, created_at, body) VALUES (1000, 'new', 3, '2026-02-01 00:00:00', 'after')")
	p.converge(time.Minute)
	if !strings.Contains(p.log(), "captured table swapped for another in one RENAME TABLE") {
		t.Errorf("the tailer did not log the cut-over; log:\n%s", tail(p.logPath))
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM (the daemon stopped on its own?); log:\n%s", code, tail(p.logPath))
	}
}

// retryableWrite is a deadlock or a lock wait timeout, which a writer
// beside a migration's copy retries.
func retryableWrite(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// triggerTargetGone is MariaDB failing an application's write right after
// the cut-over with "Table '…_messages_new' doesn't exist" (the copy
// triggers' target, renamed), seen under load even with the triggers
// dropped before the RENAME and the writes held meanwhile. The write did
// not happen on the source, which is what the read table is compared with.
func triggerTargetGone(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146 && strings.Contains(me.Message, "_messages_new")
}
