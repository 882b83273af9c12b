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

// TestSourceKeyChange: a DDL gives a captured table another primary key
// while the daemon runs (`DROP PRIMARY KEY, ADD PRIMARY KEY (code)`). Every
// later event was keyed by code: an aggregate counted the row updated
// afterwards twice (count 3 for 2 rows), silently. The tailer now stops at
// the first row under the new key, naming both keys and the fixes, and a
// restart stops again (the checkpoint keeps the keys published); the
// aggregate still counts each row once. The fix that keeps the old key — a
// UNIQUE index on id and source.keys [id] — lets the daemon go on, and the
// aggregate and the copy equal the source.
func TestSourceKeyChange(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "keychg")
	o := "`" + src + "`.o"
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+o+" (id INT NOT NULL, code VARCHAR(10) NOT NULL, g INT NOT NULL, v INT, PRIMARY KEY (id), UNIQUE KEY (code))",
		"INSERT INTO "+o+" VALUES (1, 'a', 1, 1), (2, 'b', 1, 2)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	head := bedConfigHead(bed, []string{src + ".o"}, "keychg", filepath.Join(dir, "data"), sinkDB)
	projections := fmt.Sprintf(`  per_g:
    from: %[1]s.o
    sink: reads
    group_by: [g]
    aggregates: {n: "count(*)", total: "sum(v)"}
  o_copy:
    from: %[1]s.o
    sink: reads
    key: [id]
    columns: {id: id, code: code, v: v}
`, src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	write := func(cfg string) {
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(head + projections)
	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	groups := func() string { return driftRows(ctx, bed, "SELECT g, n, total FROM `"+sinkDB+"`.per_g ORDER BY g") }
	waitGroups := func(what, want string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var got string
		if !testbed.Poll(wctx, 200*time.Millisecond, func() bool { got = groups(); return got == want }) {
			t.Fatalf("%s: per_g holds\n%s\nwant\n%s\nlog tail:\n%s", what, got, want, tail(logPath))
		}
	}
	waitGroups("the snapshot", "1 2 3\n")

	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+o+" DROP PRIMARY KEY, ADD PRIMARY KEY (code)", "UPDATE "+o+" SET v = 10 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	refusal := "the key of captured table " + src + ".o changed from (id) to (code)"
	// stopped waits for the daemon to exit with one more refusal in its
	// log than before.
	stopped := func(what string, before int) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if !testbed.Poll(wctx, 200*time.Millisecond, func() bool { return !d.running() }) || strings.Count(readFile(logPath), refusal) <= before {
			t.Fatalf("%s: the daemon did not stop at the key change; log tail:\n%s", what, tail(logPath))
		}
	}
	stopped("running", 0)
	if got := groups(); got != "1 2 3\n" {
		t.Errorf("after the key change per_g holds\n%s\nwant each row counted once, before the change (1 2 3)", got)
	}
	// A restart does not forget the key the events had.
	before := strings.Count(readFile(logPath), refusal)
	d.start()
	stopped("restarted", before)

	// The fix that keeps the old key.
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+o+" ADD UNIQUE KEY (id)", "INSERT INTO "+o+" VALUES (3, 'c', 1, 5)"); err != nil {
		t.Fatal(err)
	}
	write(strings.Replace(head, "  tables: [", fmt.Sprintf("  keys: {%s.o: [id]}\n  tables: [", src), 1) + projections)
	d.start()
	waitGroups("with source.keys [id]", "1 3 17\n")
	want := driftRows(ctx, bed, "SELECT id, code, v FROM "+o+" ORDER BY id")
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		got := driftRows(ctx, bed, "SELECT id, code, v FROM `"+sinkDB+"`.o_copy ORDER BY id")
		return got == want, fmt.Sprintf("o_copy holds\n%s\nwant\n%s", got, want)
	})
	if code := d.stop(time.Minute); code != 0 {
		t.Errorf("exit %d after SIGTERM; log tail:\n%s", code, tail(logPath))
	}
}
