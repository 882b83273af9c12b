package benchio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// SettleInnoDB must leave the server flushed and with its own flushing
// settings: a bench that left innodb_max_dirty_pages_pct at 0 would
// measure every later stage under a page cleaner in a hurry.
func TestSettleInnoDBFlushesAndRestores(t *testing.T) {
	bed := testbed.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if v, err := bed.MySQL.Version(ctx); err != nil || !strings.Contains(v, "MariaDB") {
		t.Skipf("SettleInnoDB reads MariaDB's InnoDB status (server %q, %v)", v, err)
	}
	db := bed.MySQL.DB()
	settings := func() string {
		var capacity, capacityMax, pct, lwm string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max, @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm").Scan(&capacity, &capacityMax, &pct, &lwm); err != nil {
			t.Fatal(err)
		}
		return strings.Join([]string{capacity, capacityMax, pct, lwm}, " ")
	}
	before := settings()

	dbName, err := bed.MySQL.CreateDatabase(ctx, "settle")
	if err != nil {
		t.Fatal(err)
	}
	// ~30 MB of new rows: thousands of dirty pages, which the page cleaner
	// at the default 200 pages/s would take a minute to write.
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+dbName+"`.t (id BIGINT PRIMARY KEY, b VARCHAR(200))",
		"INSERT INTO `"+dbName+"`.t SELECT seq, REPEAT('x', 150) FROM "+testbed.Seq(200000),
	); err != nil {
		t.Fatal(err)
	}
	dirty, _, _, err := innodbDebt(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if dirty <= settledDirtyPages {
		t.Fatalf("only %d dirty pages after writing 200,000 rows: the test proves nothing", dirty)
	}

	s, err := SettleInnoDB(ctx, db, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Settled || s.DirtyPages < dirty/2 || s.Seconds <= 0 {
		t.Fatalf("settle = %+v, want settled, starting from about %d dirty pages", s, dirty)
	}
	if after, _, _, err := innodbDebt(ctx, db); err != nil || after > settledDirtyPages {
		t.Fatalf("%d dirty pages after settling (%v), want ≤ %d", after, err, settledDirtyPages)
	}
	if got := settings(); got != before {
		t.Fatalf("flushing settings after settling %q, before %q", got, before)
	}
	t.Logf("settled %d dirty pages in %.2f s", s.DirtyPages, s.Seconds)

	// Settled already: a second call returns at once and changes nothing.
	again, err := SettleInnoDB(ctx, db, "again", time.Minute)
	if err != nil || !again.Settled {
		t.Fatalf("second settle = %+v, %v", again, err)
	}
	if got := settings(); got != before {
		t.Fatalf("flushing settings after the second settle %q, before %q", got, before)
	}
}
