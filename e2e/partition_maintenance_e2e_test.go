package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestPartitionMaintenanceDrift: a time-partitioned table whose oldest
// partition is dropped (retention) and another truncated. The server
// removes their rows without row events, so the read table kept them and
// nothing said so. check warns about the partitioned table (exit 0); the
// tailer logs a warning naming the table, the statement and the repair
// when each runs; verify finds the rows (extra, exit 1), verify --repair
// removes them and verify is EQUAL.
func TestPartitionMaintenanceDrift(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "ptm")
	events := "`" + src + "`.events"
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+events+" (id INT NOT NULL, day DATE NOT NULL, v INT, PRIMARY KEY (id, day)) PARTITION BY RANGE COLUMNS(day) ("+
			"PARTITION p1 VALUES LESS THAN ('2026-02-01'), PARTITION p2 VALUES LESS THAN ('2026-03-01'), PARTITION pmax VALUES LESS THAN (MAXVALUE))",
		"INSERT INTO "+events+" VALUES (1, '2026-01-05', 1), (2, '2026-01-20', 2), (3, '2026-02-10', 3), (4, '2026-03-15', 4)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := bedConfigHead(bed, []string{src + ".events"}, "ptm", filepath.Join(dir, "data"), sinkDB) + fmt.Sprintf(`  events_copy:
    from: %s.events
    sink: reads
    key: [id, day]
    columns: {id: id, day: day, v: v}
`, src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, cfgPath, "a partitioned table", "check", 0,
		"WARNING source       captured table "+src+".events is partitioned (RANGE COLUMNS, 3 partitions): ALTER TABLE ... DROP PARTITION, TRUNCATE PARTITION, EXCHANGE PARTITION and CONVERT PARTITION move its rows without row events",
		"fix: DELETE a partition's rows (binlogged) before dropping or truncating it; or readside verify --projection events_copy --repair after such maintenance", "0 problem(s)")

	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	read := func() string {
		return driftRows(ctx, bed, "SELECT id, v FROM `"+sinkDB+"`.events_copy ORDER BY id")
	}
	wait := func(what, want string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		var got string
		if !testbed.Poll(wctx, 200*time.Millisecond, func() bool { got = read(); return got == want || !d.running() }) || got != want {
			t.Fatalf("%s: the read table holds\n%s\nwant\n%s\nlog tail:\n%s", what, got, want, tail(logPath))
		}
	}
	wait("snapshot", "1 1\n2 2\n3 3\n4 4\n")
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+events+" DROP PARTITION p1", "ALTER TABLE "+events+" TRUNCATE PARTITION p2",
		"INSERT INTO "+events+" VALUES (5, '2026-03-20', 5)"); err != nil {
		t.Fatal(err)
	}
	// The control: the rows the partitions held are still there.
	wait("after the partition maintenance", "1 1\n2 2\n3 3\n4 4\n5 5\n")
	for _, want := range []string{"DROP PARTITION p1", "TRUNCATE PARTITION p2"} {
		found := false
		for _, line := range strings.Split(readFile(logPath), "\n") {
			if strings.Contains(line, "partition maintenance moved rows of a captured table without row events") && strings.Contains(line, want) &&
				strings.Contains(line, "readside verify --projection P --repair for each projection that reads "+src+".events") {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning for %s; log tail:\n%s", want, tail(logPath))
		}
	}
	expectReadside(t, cfgPath, "the drift", "verify --projection events_copy --settle 3s", 1, "events_copy: DRIFT", "missing 0, extra 3, different 0")
	expectReadside(t, cfgPath, "repair", "verify --repair --settle 3s", 0, "events_copy: DRIFT", "0 key(s) still differ")
	expectReadside(t, cfgPath, "after the repair", "verify", 0, "events_copy: EQUAL")
	if got := read(); got != "4 4\n5 5\n" {
		t.Errorf("after the repair the read table holds\n%s", got)
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Errorf("readside run exit %d on SIGTERM; log:\n%s", code, tail(logPath))
	}
}
