package e2e

// Start-up faults: `readside run` started while the source, the sink or
// the broker is down stays up, says on /healthz what it waits for, and
// replicates once the server is back; a wrong password exits at once
// with one message naming the fix.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// newStartupPipeline is the chat pipeline from src to sink through the
// test bed's broker, its source reached through sourceDSN.
func newStartupPipeline(t *testing.T, name string, src, sink *testbed.MySQL, sourceDSN string) *opsPipeline {
	t.Helper()
	return newPipeline(t, name, pipelineOptions{src: src, sink: sink, sourceDSN: sourceDSN, brokers: testbed.Get(t).Kafka.Brokers(), partitions: 2})
}

// privateMariaDB starts a MariaDB of the test's own, closed at cleanup.
func privateMariaDB(t *testing.T, serverID int) *testbed.MySQL {
	t.Helper()
	if !testbed.Get(t).MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	dir, err := os.MkdirTemp("", "readside-startup-")
	if err != nil {
		t.Fatal(err)
	}
	m, err := testbed.StartMariaDBWith(t.Context(), dir, testbed.MariaDBOptions{ServerID: serverID})
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("closing the private MariaDB: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStartWaitsForServer: readside started while the source, the sink
// or the (real Apache Kafka) broker is stopped keeps running, /healthz
// answers 503 naming what it waits for, and once the server is back a row
// written on the source reaches the read table.
func TestStartWaitsForServer(t *testing.T) {
	bed := testbed.Get(t)
	for _, down := range []string{"source", "sink", "broker"} {
		t.Run(down, func(t *testing.T) {
			var p *opsPipeline
			var stop func() error
			var restart func(context.Context) error
			want, warn := "waiting for "+down, "waiting for "+down
			also := ""
			switch down {
			case "source":
				stopped := privateMariaDB(t, 21)
				p = newStartupPipeline(t, "swsrc", stopped, bed.MySQL, stopped.ReplDSN())
				stop, restart = stopped.Stop, stopped.Restart
			case "sink":
				stopped := privateMariaDB(t, 22)
				p = newStartupPipeline(t, "swsink", bed.MySQL, stopped, bed.MySQL.ReplDSN())
				stop, restart = stopped.Stop, stopped.Restart
				want = "waiting for sink reads"
			case "broker":
				// The test bed's own broker: stopped here, restarted below
				// (and at cleanup should the test fail before).
				p = newStartupPipeline(t, "swbrk", bed.MySQL, bed.MySQL, bed.MySQL.ReplDSN())
				up := true
				stop = func() error {
					err := bed.Kafka.Stop(0)
					up = err != nil
					return err
				}
				restart = func(ctx context.Context) error {
					err := bed.Kafka.Restart(ctx, 0)
					up = err == nil
					return err
				}
				t.Cleanup(func() {
					if !up {
						_ = bed.Kafka.Restart(context.WithoutCancel(t.Context()), 0)
					}
				})
				// Named with the address it cannot reach.
				want, warn = "waiting for kafka: ", "waiting for kafka"
				also = bed.Kafka.Brokers()[0]
			}
			if err := stop(); err != nil {
				if errors.Is(err, testbed.ErrNotControllable) {
					t.Skip("external broker: stopping it needs the test bed's own")
				}
				t.Fatal(err)
			}
			d := p.start()
			ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
			defer cancel()
			var last string
			if !testbed.Poll(ctx, 200*time.Millisecond, func() bool {
				code, body, err := p.get(ctx, "/healthz")
				last = fmt.Sprintf("%d %s %v", code, body, err)
				return !d.running() || err == nil && code == http.StatusServiceUnavailable && strings.Contains(string(body), want) && strings.Contains(string(body), also)
			}) || !d.running() {
				t.Fatalf("/healthz never answered 503 with %q (and %q) while the %s was down: %s\nlog:\n%s", want, also, down, last, tail(p.logPath))
			}
			// Several attempts (1 s, then 2 s apart: startup.Waiter), each
			// with its WARN line: the process must still be up after them.
			if !testbed.Poll(ctx, 200*time.Millisecond, func() bool {
				return !d.running() || thirdAttempt(p.log(), warn)
			}) || !d.running() {
				t.Fatalf("readside exited, or logged no third WARN attempt, while the %s was down (running %v); log:\n%s", down, d.running(), tail(p.logPath))
			}
			// A SIGHUP while start-up waits (an operator's config edit) is
			// held, not the signal's default exit, and applied once running.
			if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if !d.running() {
				t.Fatalf("a SIGHUP while waiting for the %s ended readside; log:\n%s", down, tail(p.logPath))
			}
			if err := restart(ctx); err != nil {
				t.Fatal(err)
			}
			p.waitReady(180 * time.Second)
			if !testbed.Poll(ctx, 200*time.Millisecond, func() bool { return strings.Contains(p.log(), "SIGHUP: reloading the config") }) {
				t.Fatalf("the SIGHUP held during start-up was never applied; log:\n%s", tail(p.logPath))
			}
			if err := p.srcDB.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.messages VALUES (1, 7, NOW(6), 'after the wait')", p.src)); err != nil {
				t.Fatal(err)
			}
			var body string
			if !testbed.Poll(ctx, 200*time.Millisecond, func() bool {
				err := p.sinkDB.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT body FROM `%s`.messages_by_sender WHERE id = 1", p.sink)).Scan(&body)
				return err == nil
			}) {
				t.Fatalf("the row written after the %s came back never reached the read table; log:\n%s", down, tail(p.logPath))
			}
			if body != "after the wait" {
				t.Fatalf("read table body %q, want %q", body, "after the wait")
			}
			if code := d.stop(60 * time.Second); code != 0 {
				t.Fatalf("exit %d after SIGTERM, want 0; log:\n%s", code, tail(p.logPath))
			}
		})
	}
}

// thirdAttempt reports whether log holds the WARN line of the third
// attempt of the start-up wait whose message begins with warn.
func thirdAttempt(log, warn string) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=WARN msg=\""+warn) && strings.Contains(line, " attempt=3 ") {
			return true
		}
	}
	return false
}

// TestStartWrongPassword: a wrong source password is a configuration
// error: readside exits promptly, non-zero, with one message naming the
// fix rather than retrying or repeating the error per projection.
func TestStartWrongPassword(t *testing.T) {
	bed := testbed.Get(t)
	user, _ := bed.MySQL.ReplCredentials()
	dsn := fmt.Sprintf("%s:wrong-password@tcp(%s)/", user, bed.MySQL.Addr())
	p := newStartupPipeline(t, "swpw", bed.MySQL, bed.MySQL, dsn)
	d := p.start()
	select {
	case <-d.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("readside still running 90 s after starting with a wrong password; log:\n%s", tail(p.logPath))
	}
	if code := d.cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("exit 0 with a wrong password; log:\n%s", tail(p.logPath))
	}
	log := p.log()
	if n := strings.Count(log, "Access denied"); n != 1 {
		t.Fatalf("%d messages with \"Access denied\", want exactly one; log:\n%s", n, log)
	}
	if !strings.Contains(log, "Fix: check the user and password in source.dsn") {
		t.Fatalf("the message does not name the fix; log:\n%s", log)
	}
	if strings.Contains(log, "waiting for source") {
		t.Fatalf("a wrong password was retried as if the source were down; log:\n%s", log)
	}
	t.Logf("exit %d:\n%s", d.cmd.ProcessState.ExitCode(), log)
}

// TestStartMissingGrant: a source user without the replication grants is a
// configuration error: readside exits promptly, non-zero, naming the
// missing privilege once.
func TestStartMissingGrant(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	user := fmt.Sprintf("rsnogrant%d", rand.IntN(1e6))
	p := newStartupPipeline(t, "swgrant", bed.MySQL, bed.MySQL, fmt.Sprintf("%s:pw@tcp(%s)/", user, bed.MySQL.Addr()))
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", user), fmt.Sprintf("GRANT SELECT ON `%s`.* TO '%s'@'%%'", p.src, user),
		// The snapshot tables' grant, so the missing one is the replication grant.
		fmt.Sprintf("GRANT CREATE, INSERT, UPDATE, SELECT ON readside.* TO '%s'@'%%'", user)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.MySQL.Exec(context.WithoutCancel(ctx), fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
	d := p.start()
	select {
	case <-d.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("readside still running 90 s after starting without grants; log:\n%s", tail(p.logPath))
	}
	log := p.log()
	t.Logf("exit %d:\n%s", d.cmd.ProcessState.ExitCode(), log)
	if code := d.cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("exit 0 without grants; log:\n%s", log)
	}
	// (A WARN about the optional REPLICATION MASTER ADMIN grant may come
	// first: the server_id preflight goes on without it.)
	if n := strings.Count(log, "level=ERROR"); n != 1 {
		t.Fatalf("%d ERROR lines, want exactly one; log:\n%s", n, log)
	}
	if strings.Contains(log, "stream interrupted") {
		t.Fatalf("the missing grant was retried; log:\n%s", log)
	}
	if !strings.Contains(log, "BINLOG MONITOR") || !strings.Contains(log, "Fix: grant the user in source.dsn") {
		t.Fatalf("the message does not name the missing privilege and the fix; log:\n%s", log)
	}
}
