package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestReadTableFollowsPrecision: source DDL that adds decimals,
// fractional seconds or float precision to a projected column. The
// server stores such values rounded in a read column as created, with no
// error even in strict mode, so no refused row would ever say so: the
// projector compares its tables with each new table shape before it
// applies a row of it.
//   - DECIMAL(10,2) → DECIMAL(12,3), DATETIME → DATETIME(6), FLOAT →
//     DOUBLE while the daemon runs, then rows that need them: the copy,
//     a transaction-consistent copy and an aggregate (its contributions
//     table too) are altered, every value lands exactly.
//   - INT → DECIMAL(10,2), whose values the read column would round and
//     which no ALTER follows keeping every stored value: the projection
//     stops naming the column and the rebuild; the row is not applied.
func TestReadTableFollowsPrecision(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	f := newFollowBed(t, bed, "prec", "items",
		"CREATE TABLE SRC.items (id INT PRIMARY KEY, grp VARCHAR(5) NOT NULL, amt DECIMAL(10,2) NOT NULL, at DATETIME NULL, f FLOAT NULL, i INT NULL)", `  prec_copy:
    from: SRC.items
    sink: reads
    key: [id]
    columns: {id: id, amt: amt, at: at, f: f, i: i}
  prec_txn:
    from: SRC.items
    sink: txn
    key: [id]
    columns: {id: id, amt: amt, at: at, f: f}
  prec_sums:
    from: SRC.items
    sink: reads
    group_by: [grp]
    aggregates: {total: "sum(amt)", latest: "max(at)", least: "min(f)", n: "count(*)"}
`)
	src, sinkDB, txnDB, logPath := f.src, f.sinkDB, f.txnDB, f.logPath
	exec1 := func(stmt string) { t.Helper(); f.exec(t, stmt) }
	exec1("INSERT INTO SRC.items VALUES (1, 'a', 1.25, '2026-01-01 10:00:00', 1.5, 3)")
	d := startDaemon(t, logPath, "run", "-c", f.cfgPath)

	checks := []struct{ what, want, got string }{
		{"the copy", "SELECT id, amt, at, f, i FROM `" + src + "`.items ORDER BY id", "SELECT id, amt, at, f, i FROM `" + sinkDB + "`.prec_copy ORDER BY id"},
		{"the consistent copy", "SELECT id, amt, at, f FROM `" + src + "`.items ORDER BY id", "SELECT id, amt, at, f FROM `" + txnDB + "`.prec_txn ORDER BY id"},
		{"the aggregate", "SELECT grp, SUM(amt), MAX(at), MIN(f), COUNT(*) FROM `" + src + "`.items GROUP BY grp ORDER BY grp",
			"SELECT grp, total, latest, least, n FROM `" + sinkDB + "`.prec_sums ORDER BY grp"},
	}
	same := func(step string) {
		t.Helper()
		for _, c := range checks {
			want := driftRows(ctx, bed, c.want)
			var got string
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			ok := testbed.Poll(wctx, 300*time.Millisecond, func() bool {
				got = driftRows(ctx, bed, c.got)
				return got == want || !d.running()
			}) && got == want
			cancel()
			if !ok {
				t.Fatalf("%s: %s holds\n%s\nthe source\n%s\nlog tail:\n%s", step, c.what, got, want, tail(logPath))
			}
		}
	}
	same("before any DDL")

	exec1("ALTER TABLE SRC.items MODIFY amt DECIMAL(12,3) NOT NULL, MODIFY at DATETIME(6) NULL, MODIFY f DOUBLE NULL")
	exec1("INSERT INTO SRC.items VALUES (2, 'a', 1.234, '2026-01-01 10:00:00.123456', 1.0000000001, 4)")
	exec1("UPDATE SRC.items SET amt = 2.345, at = '2026-01-02 00:00:00.5' WHERE id = 1")
	same("after decimals, fractional seconds and a double were added")
	if got := driftRows(ctx, bed, "SELECT id, amt, at, f FROM `"+sinkDB+"`.prec_copy ORDER BY id"); !strings.Contains(got, "2.345") || !strings.Contains(got, ".123456") || !strings.Contains(got, "1.0000000001") {
		t.Fatalf("the read table does not hold the new precision, so the test checks nothing:\n%s", got)
	}

	exec1("ALTER TABLE SRC.items MODIFY i DECIMAL(10,2) NULL")
	exec1("INSERT INTO SRC.items VALUES (3, 'b', 1, NULL, NULL, 2.5)")
	f.waitLog(t, d, "INT → DECIMAL(10,2)", "projections.prec_copy.columns.i", "rounded", "readside replay --projection prec_copy --rebuild")
	if got := driftRows(ctx, bed, "SELECT COUNT(*) FROM `"+sinkDB+"`.prec_copy WHERE id = 3"); got != "0\n" {
		t.Errorf("row 3 reached the read table (count %q): its 2.5 stored rounded", got)
	}
	if d.running() {
		d.stop(time.Minute)
	}
}
