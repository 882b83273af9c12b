package e2e

// SIGHUP: readside run reloads the log level and starts new projections,
// and says what it did not reload.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestSighupReload: after editing the config — log.level info → debug, a
// new projection messages_by_id on the captured table in a new sink extra,
// and a changed shutdown_timeout — SIGHUP makes the running daemon log at
// debug (a batch logs "batch applied", a debug line), take the new sink,
// create messages_by_id there and fill it to equal the source (history
// included), and log that shutdown_timeout needs a restart (and nothing
// about sinks: one only added needs none); the daemon keeps running.
func TestSighupReload(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "hup", bed.Kafka.Brokers(), "log:\n  level: info\nshutdown_timeout: 30s\n")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	for i := 1; i <= 50; i++ {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.messages VALUES (%d, %d, '2026-01-01 00:00:00', 'b%d')", p.src, i, i%5, i)); err != nil {
			t.Fatal(err)
		}
	}
	p.converge(time.Minute)
	if strings.Contains(p.log(), "level=DEBUG") {
		t.Fatalf("debug lines at log.level info:\n%s", tail(p.logPath))
	}
	b, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := bed.MySQL.CreateDatabase(ctx, "hup_x")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "projections:\n", fmt.Sprintf("projections:\n  messages_by_id:\n    from: %s.messages\n    sink: extra\n    key: [id]\n    columns: {id: id, body: body}\n", p.src), 1)
	cfg = strings.Replace(cfg, "sinks:\n", fmt.Sprintf("sinks:\n  extra:\n    dsn: %q\n", bed.MySQL.AdminDSN()+extra), 1)
	cfg = strings.Replace(cfg, "level: info", "level: debug", 1)
	cfg = strings.Replace(cfg, "shutdown_timeout: 30s", "shutdown_timeout: 40s", 1)
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !testbed.Poll(wctx, 100*time.Millisecond, func() bool { return strings.Contains(p.log(), "SIGHUP: reload done") }) {
		t.Fatalf("no reload after SIGHUP; log:\n%s", tail(p.logPath))
	}
	l := p.log()
	for _, line := range strings.Split(l, "\n") {
		if strings.Contains(line, "SIGHUP") {
			t.Log(line)
		}
	}
	for _, want := range []string{"SIGHUP: reloaded log.level", "from=info to=debug", `SIGHUP: took new sinks" sinks=[extra]`, `SIGHUP: started the projector of a new projection" projection=messages_by_id`,
		`SIGHUP: not reloaded, restart to apply" changed=[shutdown_timeout]`} {
		if !strings.Contains(l, want) {
			t.Errorf("the log does not say %q:\n%s", want, tail(p.logPath))
		}
	}
	for i := 51; i <= 60; i++ {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.messages VALUES (%d, 1, '2026-01-01 00:00:00', 'n%d')", p.src, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.messages SET body = 'edited' WHERE id = 3", p.src)); err != nil {
		t.Fatal(err)
	}
	p.converge(time.Minute)
	src := "SELECT id, body FROM `" + p.src + "`.messages ORDER BY id"
	read := "SELECT id, body FROM `" + extra + "`.messages_by_id ORDER BY id"
	if !testbed.Poll(wctx, 200*time.Millisecond, func() bool {
		var n int
		err := bed.MySQL.DB().QueryRowContext(wctx, "SELECT COUNT(*) FROM `"+extra+"`.messages_by_id").Scan(&n)
		return err == nil && n == 60
	}) {
		t.Fatalf("the new projection's table did not fill; log:\n%s", tail(p.logPath))
	}
	if want, got := testbed.RowsText(t, bed.MySQL.DB(), src), testbed.RowsText(t, bed.MySQL.DB(), read); want != got {
		t.Errorf("messages_by_id differs from the source:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(p.log(), `level=DEBUG msg="batch applied"`) {
		t.Errorf("no debug line after the reload to log.level debug")
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
