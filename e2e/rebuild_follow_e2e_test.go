package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/internal/testsync"
)

// TestRebuildFollowsAWideningDuringItsFill: the source widens a column
// (more decimals, a wider integer) while `readside replay --rebuild`
// fills its shadow — here held right after creating it, with the old
// types, and then stopped, as a crash would. The daemon's projector
// widens the live table; the rerun brings the shadow and its state tables
// to the new types before it fills, so the swapped-in read tables hold
// the source's exact values: no 1.555 rounded to 1.56, no sum(distinct)
// missing a value, no BIGINT refused.
func TestRebuildFollowsAWideningDuringItsFill(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "rbfollow")
	exec1 := func(stmts ...string) {
		t.Helper()
		for _, st := range stmts {
			if err := bed.MySQL.Exec(ctx, strings.ReplaceAll(st, "SRC", "`"+src+"`")); err != nil {
				t.Fatalf("%s: %v", st, err)
			}
		}
	}
	exec1("CREATE TABLE SRC.pay (id INT PRIMARY KEY, merchant INT NOT NULL, amount DECIMAL(10,2) NOT NULL, n INT NOT NULL)")
	for i := 1; i <= 60; i++ {
		exec1(fmt.Sprintf("INSERT INTO SRC.pay VALUES (%d, %d, %d.%02d, %d)", i, i%4, i, i%100, i))
	}
	dir := t.TempDir()
	cfg := bedConfigHead(bed, []string{src + ".pay"}, "rbfollow", filepath.Join(dir, "data"), sinkDB) + fmt.Sprintf(`  pay_copy:
    from: %[1]s.pay
    sink: reads
    key: [id]
    columns: {id: id, merchant: merchant, amount: amount, n: n}
  pay_by_merchant:
    from: %[1]s.pay
    sink: reads
    group_by: [merchant]
    aggregates: {total: "sum(amount)", amounts: "sum(distinct amount)", biggest: "max(n)"}
`, src)
	cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "run.log")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	equal := func(what string) {
		t.Helper()
		queries := [][2]string{
			{"SELECT id, merchant, amount, n FROM `" + src + "`.pay ORDER BY id", "SELECT id, merchant, amount, n FROM `" + sinkDB + "`.pay_copy ORDER BY id"},
			{"SELECT merchant, SUM(amount), SUM(DISTINCT amount), MAX(n) FROM `" + src + "`.pay GROUP BY merchant ORDER BY merchant",
				"SELECT merchant, total, amounts, biggest FROM `" + sinkDB + "`.pay_by_merchant ORDER BY merchant"},
		}
		for _, q := range queries {
			var got, want string
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			ok := testbed.Poll(wctx, 500*time.Millisecond, func() bool {
				want, got = driftRows(ctx, bed, q[0]), driftRows(ctx, bed, q[1])
				return got == want
			})
			cancel()
			if !ok {
				t.Fatalf("%s: %s holds\n%s\nthe source\n%s\nlog tail:\n%s", what, q[1], got, want, tail(logPath))
			}
		}
	}
	equal("before the rebuild")

	for _, projection := range []string{"pay_copy", "pay_by_merchant"} {
		// Held once its shadow exists, then stopped: the shadow stays,
		// with the types of the source as it was.
		out := &testsync.Buffer{}
		cmd := exec.Command(readsideBinary(t), "replay", "-c", cfgPath, "--projection", projection, "--rebuild")
		cmd.Env = append(os.Environ(), "RS_TEST_REBUILD_PAUSE=filling")
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !testbed.Poll(ctx, 200*time.Millisecond, func() bool { return strings.Contains(out.String(), "paused for a test") }) {
			t.Fatalf("the rebuild of %s never paused:\n%s", projection, out.String())
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}

	exec1("ALTER TABLE SRC.pay MODIFY amount DECIMAL(14,3) NOT NULL, MODIFY n BIGINT NOT NULL",
		"INSERT INTO SRC.pay VALUES (61, 1, 1.555, 5000000000), (62, 1, 12345678.125, 7), (63, 2, 0.001, 8)",
		"UPDATE SRC.pay SET amount = amount + 0.004 WHERE id = 5")
	equal("the live projectors after the widening")

	for _, projection := range []string{"pay_copy", "pay_by_merchant"} {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		out, err := exec.CommandContext(rctx, readsideBinary(t), "replay", "-c", cfgPath, "--projection", projection, "--rebuild").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("the rerun of the rebuild of %s: %v\n%s", projection, err, out)
		}
	}
	equal("after the rebuilds")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
