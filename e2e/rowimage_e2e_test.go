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

// TestRowImageMinimalStopsDaemon: one session with binlog_row_image=MINIMAL
// updating a captured table (on the live MariaDB) stops `readside run`
// (exit 1) with the table, the position, the setting and the fix, while
// the read table keeps the row as it was (nothing of the partial image is
// applied). A restart meets the same event and stops again: the binlog
// still holds it.
func TestRowImageMinimalStopsDaemon(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "rimg")
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.items (id INT PRIMARY KEY, a INT NOT NULL, b INT NOT NULL)",
		"INSERT INTO `"+src+"`.items VALUES (1, 10, 100)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := bedConfigHead(bed, []string{src + ".items"}, "rimg", filepath.Join(dir, "data"), sinkDB) + fmt.Sprintf(`  items_copy:
    from: %s.items
    sink: reads
    key: [id]
    columns: {id: id, a: a, b: b}
`, src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	read := func() string { return driftRows(ctx, bed, "SELECT id, a, b FROM `"+sinkDB+"`.items_copy ORDER BY id") }
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !testbed.Poll(wctx, 200*time.Millisecond, func() bool { return read() == "1 10 100\n" || !d.running() }) || read() != "1 10 100\n" {
		t.Fatalf("snapshot: read table holds %q; log:\n%s", read(), tail(logPath))
	}

	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"SET SESSION binlog_row_image = MINIMAL", "UPDATE `" + src + "`.items SET a = 11 WHERE id = 1"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	// The pooled connection goes back to the shared test bed: with
	// MINIMAL left in its session, a later test's writes would be
	// refused as incomplete rows.
	if _, err := conn.ExecContext(ctx, "SET SESSION binlog_row_image = FULL"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	want := []string{"row image of " + src + ".items at ", "is not FULL", "binlog_row_image=MINIMAL or NOBLOB", "Fix: SET GLOBAL binlog_row_image=FULL", "every restart meets this event again"}
	stopped := func(what string) {
		t.Helper()
		select {
		case <-d.done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: readside run still runs a minute after the MINIMAL update; log:\n%s", what, tail(logPath))
		}
		if code := d.cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("%s: exit %d, want 1", what, code)
		}
		b, _ := os.ReadFile(logPath)
		if n := strings.Count(string(b), want[0]); n != d.starts {
			t.Errorf("%s: the refusal is logged %d times in %d runs", what, n, d.starts)
		}
		log := tail(logPath)
		for _, w := range want {
			if !strings.Contains(log, w) {
				t.Errorf("%s: the log lacks %q:\n%s", what, w, log)
			}
		}
	}
	stopped("the MINIMAL update")
	if got := read(); got != "1 10 100\n" {
		t.Errorf("the read table holds %q after the refused event, want the row as it was", got)
	}
	d.start()
	stopped("a restart")
	t.Logf("log:\n%s", tail(logPath))
}
