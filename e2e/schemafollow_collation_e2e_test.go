package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestGroupCollationChangeStops: a source DDL that changes the collation
// of a column an aggregate groups by or counts distinct values of
// (utf8mb4_unicode_ci → utf8mb4_bin: 'Zoe' and 'ZOE' were one, now two).
// The sink would take the ALTER and every later row without an error,
// while the groups and distinct values already stored stay merged: a
// read table the source's GROUP BY no longer gives, for good. So the
// aggregate stops naming the column and the rebuild (of the projection
// on a row sink, of the whole sink on a consistent one), and applies no
// row of the new shape; a copy of the same column follows the DDL (each
// read row is one source row, nothing merged). An ENUM member respelled
// in case alone ('paid' → 'Paid'), which a _ci read column would store
// in the old spelling without an error, stops its copy the same way.
func TestGroupCollationChangeStops(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	f := newFollowBed(t, bed, "coll", "visits",
		"CREATE TABLE SRC.visits (id INT PRIMARY KEY, grp INT NOT NULL, buyer VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL, "+
			"st ENUM('new','paid') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL DEFAULT 'new')", `  coll_copy:
    from: SRC.visits
    sink: reads
    key: [id]
    columns: {id: id, buyer: buyer}
  coll_status:
    from: SRC.visits
    sink: reads
    key: [id]
    columns: {id: id, st: st}
  coll_by_buyer:
    from: SRC.visits
    sink: reads
    group_by: [buyer]
    aggregates: {n: "count(*)"}
  coll_uniques:
    from: SRC.visits
    sink: txn
    group_by: [grp]
    aggregates: {buyers: "count(distinct buyer)"}
`)
	src, sinkDB, txnDB, logPath := f.src, f.sinkDB, f.txnDB, f.logPath
	exec1 := func(stmt string) { t.Helper(); f.exec(t, stmt) }
	exec1("INSERT INTO SRC.visits VALUES (1, 1, 'Zoe', 'new'), (2, 1, 'ZOE', 'paid'), (3, 1, 'bob', 'paid')")
	d := startDaemon(t, logPath, "run", "-c", f.cfgPath)
	defer func() {
		if d.running() {
			d.stop(time.Minute)
		}
	}()
	waitRows := func(what, want, got string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		var have string
		if !testbed.Poll(wctx, 300*time.Millisecond, func() bool {
			have = driftRows(ctx, bed, got)
			return have == want || !d.running()
		}) || have != want {
			t.Fatalf("%s holds\n%s\nwant\n%s\nlog tail:\n%s", what, have, want, tail(logPath))
		}
	}
	waitRows("the aggregate by buyer", "2\n", "SELECT COUNT(*) FROM `"+sinkDB+"`.coll_by_buyer")
	waitRows("the distinct count", "1 2\n", "SELECT grp, buyers FROM `"+txnDB+"`.coll_uniques")

	waitRows("the status copy", "1 new\n2 paid\n3 paid\n", "SELECT id, st FROM `"+sinkDB+"`.coll_status ORDER BY id")
	// A member respelled ('paid' → 'Paid') changes no type name either;
	// the read column, under a _ci collation, would store 'Paid' as
	// 'paid' without an error.
	exec1("ALTER TABLE SRC.visits MODIFY buyer VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL")
	exec1("INSERT INTO SRC.visits VALUES (4, 1, 'zoe', 'new')")
	waitRows("the status copy", "1 new\n2 paid\n3 paid\n4 new\n", "SELECT id, st FROM `"+sinkDB+"`.coll_status ORDER BY id")
	exec1("ALTER TABLE SRC.visits MODIFY st ENUM('new','Paid') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL DEFAULT 'new'")
	exec1("INSERT INTO SRC.visits VALUES (5, 1, 'al', 'Paid')")
	f.waitLog(t, d, "a group column's collation changed, an ENUM member respelled",
		"projections.coll_by_buyer.columns.buyer", "decides which values are one group or one distinct value",
		"readside replay --projection coll_by_buyer --rebuild",
		"projections.coll_uniques.columns.buyers", "rebuild sink txn (consistency: transaction)",
		"projections.coll_status.columns.st", "readside replay --projection coll_status --rebuild")
	// The copy follows: its read column takes the new collation and the
	// new row.
	waitRows("the copy", driftRows(ctx, bed, "SELECT id, buyer FROM `"+src+"`.visits ORDER BY id"), "SELECT id, buyer FROM `"+sinkDB+"`.coll_copy ORDER BY id")
	if got := driftRows(ctx, bed, "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '"+sinkDB+"' AND TABLE_NAME = 'coll_copy' AND COLUMN_NAME = 'buyer'"); got != "utf8mb4_bin\n" {
		t.Errorf("the copy's buyer column is %q, want it to follow the source to utf8mb4_bin", got)
	}
	// The stopped projections applied nothing of the new shape.
	if got := driftRows(ctx, bed, "SELECT COUNT(*) FROM `"+sinkDB+"`.coll_status"); got != "4\n" {
		t.Errorf("the stopped status copy holds %q rows, want the 4 from before the respelling", got)
	}
	if got := driftRows(ctx, bed, "SELECT SUM(n) FROM `"+sinkDB+"`.coll_by_buyer"); got != "3\n" {
		t.Errorf("the stopped aggregate counts %q rows, want the 3 from before the DDL", got)
	}
	if got := driftRows(ctx, bed, "SELECT buyers FROM `"+txnDB+"`.coll_uniques"); got != "2\n" {
		t.Errorf("the stopped consistent sink's distinct count is %q, want 2 from before the DDL", got)
	}
}
