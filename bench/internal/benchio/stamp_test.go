package benchio

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/e2e/testbed"
)

// TestStampTriggers: a workload's latency samples are only as good as the
// stamps. Each statement below sets _bench_visible_at to a sentinel
// itself: if the trigger stamped, NOW(6) replaced it; if not, it stayed
// (no clock compared). A fan-out (another column changed) must not
// restamp, or a join's rows would measure the parent's change against
// their own commit; a smaller value (a group's maximum that left) must
// not either; onEqual restamps a row written again at the same value (the
// last piece of a source transaction split over batches).
func TestStampTriggers(t *testing.T) {
	bed := testbed.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := bed.MySQL.CreateDatabase(ctx, "stamp")
	if err != nil {
		t.Fatal(err)
	}
	const sentinel = "2000-01-01 00:00:00.000000"
	for _, onEqual := range []bool{false, true} {
		tbl := "t_strict"
		if onEqual {
			tbl = "t_equal"
		}
		q := "`" + db + "`.`" + tbl + "`"
		if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+q+" (id INT PRIMARY KEY, commit_us BIGINT NOT NULL, name VARCHAR(20), _bench_visible_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))"); err != nil {
			t.Fatal(err)
		}
		// The triggers are created in the table's database.
		conn, err := bed.MySQL.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "USE `"+db+"`"); err != nil {
			t.Fatal(err)
		}
		for _, s := range StampTriggers(tbl, "commit_us", onEqual) {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		for _, c := range []struct {
			why         string
			stmt        string
			stamped     bool  // _bench_visible_at is no longer the sentinel
			equalStamps bool  // with onEqual, stamped instead
			stampedUS   int64 // _bench_stamped_us after
		}{
			{"an insert stamps", "INSERT INTO " + tbl + " (id, commit_us, name, _bench_visible_at) VALUES (1, 100, 'a', '" + sentinel + "')", true, true, 100},
			{"a fan-out (another column) keeps the stamp; onEqual restamps", "UPDATE " + tbl + " SET name = 'b', _bench_visible_at = '" + sentinel + "' WHERE id = 1", false, true, 100},
			{"a newer commit restamps", "UPDATE " + tbl + " SET commit_us = 200, _bench_visible_at = '" + sentinel + "' WHERE id = 1", true, true, 200},
			{"an older value (a maximum that left) keeps the stamp", "UPDATE " + tbl + " SET commit_us = 150, _bench_visible_at = '" + sentinel + "' WHERE id = 1", false, false, 200},
			{"the projector's upsert shape restamps on a newer commit", "INSERT INTO " + tbl + " (id, commit_us, name, _bench_visible_at) VALUES (1, 300, 'c', '" + sentinel + "') ON DUPLICATE KEY UPDATE commit_us = VALUES(commit_us), _bench_visible_at = VALUES(_bench_visible_at)", true, true, 300},
		} {
			if _, err := conn.ExecContext(ctx, c.stmt); err != nil {
				t.Fatalf("%s: %v", c.stmt, err)
			}
			var visible string
			var stamped int64
			if err := conn.QueryRowContext(ctx, "SELECT _bench_visible_at, _bench_stamped_us FROM "+tbl+" WHERE id = 1").Scan(&visible, &stamped); err != nil {
				t.Fatal(err)
			}
			want := c.stamped
			if onEqual {
				want = c.equalStamps
			}
			if (visible != sentinel) != want || stamped != c.stampedUS {
				t.Errorf("onEqual=%v, %s: _bench_visible_at %s (stamped: %v, want %v), _bench_stamped_us %d (want %d)", onEqual, c.why, visible, visible != sentinel, want, stamped, c.stampedUS)
			}
		}
		conn.Close()
	}
}

// TestTableChecksum: the aggregate's B2 check compares tables whose
// columns differ in width (its sums are DECIMAL(65,0), the projector's
// what CREATE TABLE … AS SELECT gives): the same values must sum alike,
// a changed value or a NULL for an empty string must not.
func TestTableChecksum(t *testing.T) {
	bed := testbed.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := bed.MySQL.CreateDatabase(ctx, "checksum")
	if err != nil {
		t.Fatal(err)
	}
	q := func(tbl string) string { return "`" + db + "`.`" + tbl + "`" }
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+q("a")+" (g INT PRIMARY KEY, s DECIMAL(41,0), m DATETIME(6) NULL, n VARCHAR(10) NULL)",
		"CREATE TABLE "+q("b")+" (g BIGINT PRIMARY KEY, s DECIMAL(65,0), m DATETIME(6) NULL, n VARCHAR(40) NULL)",
		"INSERT INTO "+q("a")+" VALUES (1, 12345, '2026-01-01 00:00:01', ''), (2, NULL, NULL, '5')",
		"INSERT INTO "+q("b")+" SELECT * FROM "+q("a")); err != nil {
		t.Fatal(err)
	}
	// A handle on the database, as the bench's sink is.
	sink, err := sql.Open("mysql", bed.MySQL.AdminDSN()+db)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	cols := []string{"g", "s", "m", "n"}
	sum := func(tbl string) (int64, int64) {
		t.Helper()
		rows, s, err := TableChecksum(ctx, sink, tbl, cols)
		if err != nil {
			t.Fatal(err)
		}
		return rows, s
	}
	ra, sa := sum("a")
	if rb, sb := sum("b"); ra != 2 || ra != rb || sa != sb {
		t.Fatalf("the same values in wider columns: a %d rows, %d; b %d rows, %d", ra, sa, rb, sb)
	}
	for _, c := range []struct{ why, stmt string }{
		{"a changed sum", "UPDATE b SET s = 12346 WHERE g = 1"},
		{"NULL instead of an empty string", "UPDATE b SET n = NULL WHERE g = 1"},
		{"a NULL in another column (the same text once NULLs are skipped)", "UPDATE b SET s = 5, n = NULL WHERE g = 2"},
	} {
		for _, stmt := range []string{"DELETE FROM b", "INSERT INTO b SELECT * FROM a", c.stmt} {
			if _, err := sink.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		if _, sb := sum("b"); sb == sa {
			t.Errorf("%s: the checksum did not change (%d)", c.why, sb)
		}
	}
}
