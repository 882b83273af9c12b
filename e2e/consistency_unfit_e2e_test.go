package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestConsistentSinkUnfitProjectionHoldsTheSink: a projection of a
// `transaction` sink that does not fit the source at start-up (it maps a
// column the table lacks) holds the whole sink, not only itself. Had the
// applier started with the other projections, the sink's frontier would
// move on without it, and once fixed it would be a projection added to
// the sink later, which only a refill of the sink takes. Held, the sink
// applies nothing; after the fix and a SIGHUP it starts with both, from
// the beginning, and both read tables equal the source.
func TestConsistentSinkUnfitProjectionHoldsTheSink(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	ci := newConsistentItems(t, bed, "consunfit", 20)
	src, sink, exec, write := ci.src, ci.sink, ci.exec, ci.write
	good := fmt.Sprintf("  copy_a: {from: %s.items, sink: reads, key: [id], columns: {id: id, v: v}}\n", src)
	projB := func(col string) string {
		return fmt.Sprintf("  copy_b: {from: %s.items, sink: reads, key: [v, id], columns: {id: id, v: %s}}\n", src, col)
	}
	write(good + projB("vv"))
	logPath := filepath.Join(filepath.Dir(ci.cfgPath), "run.log")
	d := startDaemon(t, logPath, "run", "-c", ci.cfgPath, "--http", freeAddr(t))
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "projection copy_b of sink reads (consistency: transaction) does not fit the source"),
			"the sink was not held for its unfit projection; log:\n" + tail(logPath)
	})
	exec("UPDATE `" + src + "`.items SET v = v + 100 WHERE id <= 5")
	// The tailer publishes the update; a sink that applied copy_a alone
	// would hold its read table and a frontier within a second or two.
	time.Sleep(3 * time.Second)
	utc := utcDB(t, bed)
	var tables int
	if err := utc.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ('copy_a', '_readside_frontier')", sink).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("the sink was applied without its unfit projection (%d of copy_a and _readside_frontier exist); log:\n%s", tables, tail(logPath))
	}

	write(good + projB("v"))
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	exec("DELETE FROM `" + src + "`.items WHERE id = 20")
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		var n int
		err := utc.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ('copy_a', 'copy_b')", sink).Scan(&n)
		return err == nil && n == 2, fmt.Sprintf("the read tables are not there after the fix (%v); log:\n%s", err, tail(logPath))
	})
	want := "SELECT id, v FROM `" + src + "`.items ORDER BY id"
	waitExpected(t, utc, []struct{ name, want, got string }{
		{"copy_a", want, "SELECT id, v FROM `" + sink + "`.copy_a ORDER BY id"},
		{"copy_b", want, "SELECT id, v FROM `" + sink + "`.copy_b ORDER BY id"},
	}, logPath)
	b, _ := os.ReadFile(logPath)
	if strings.Contains(string(b), "added to sink") || strings.Contains(string(b), "restart to apply") {
		t.Errorf("the fixed projection was taken for one added later; log:\n%s", tail(logPath))
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
