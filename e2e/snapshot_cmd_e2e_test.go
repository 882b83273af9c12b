package e2e

// readside snapshot as the user runs it: the built binary against a
// running daemon on the real test bed.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/e2e/testbed"
)

// snapshotCmd runs `readside snapshot -c cfg` with args.
func (p *opsPipeline) snapshotCmd(cfg string, args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.CommandContext(p.t.Context(), readsideBinary(p.t), append([]string{"snapshot", "-c", cfg}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		p.t.Fatal(err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// TestSnapshotCommandWhere: rows that exist before the daemon starts
// (source.snapshot.mode: never, so none is published on start) are
// published by `readside snapshot --table db.t --where "id > 100"` as `r`
// events — exactly the matching rows, each once — and reach the read
// table, which then holds exactly them. A --where the source does not
// accept and a table it does not have exit 1 naming the fix; a table not
// in source.tables exits 2; none of them writes a request.
func TestSnapshotCommandWhere(t *testing.T) {
	bed := testbed.Get(t)
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__MODE", "never")
	ctx := t.Context()
	// The signal database defaults to latin1 (upstream MariaDB's default):
	// a request whose where clause is not Latin-1 still goes through.
	signalDB := fmt.Sprintf("snapcmd_signal_%d", rand.IntN(1e6))
	repl, err := mysqldriver.ParseDSN(bed.MySQL.ReplDSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE DATABASE "+signalDB+" CHARACTER SET latin1"); err != nil {
		t.Fatal(err)
	}
	// What an operator grants readside's user on its signal database; an
	// external bed whose source user has no such account (root@localhost)
	// holds every privilege already.
	_ = bed.MySQL.Exec(ctx, "GRANT CREATE, INSERT, UPDATE, DELETE ON "+signalDB+".* TO '"+repl.User+"'@'%'")
	t.Cleanup(func() { _ = bed.MySQL.Exec(context.Background(), "DROP DATABASE IF EXISTS "+signalDB) })
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__SIGNAL_DB", signalDB)
	p := newOpsPipeline(t, "snapcmd", bed.Kafka.Brokers(), "")
	p.insertRange(ctx, 1, 300, "s")
	d := p.start()
	t.Cleanup(func() {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	})
	p.waitReady(90 * time.Second)
	adm := adminClient(t, bed.Kafka.Brokers())
	topic := p.messagesTopic(adm)
	read := "`" + p.sink + "`.messages_by_sender"
	if got := p.rows(read); got != "" {
		t.Fatalf("with snapshot.mode never the read table already has rows:\n%s", got)
	}

	cfgText, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	serverID := regexp.MustCompile(`server_id: (\d+)`).FindStringSubmatch(string(cfgText))[1]
	requests := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT table_name, COALESCE(where_clause, '<none>') FROM "+signalDB+"._readside_snapshot_requests WHERE server_id = ? ORDER BY id", serverID)
	}
	// A config naming a captured table the source does not have (the
	// command checks source.tables first, the source after).
	missingCfg := p.cfgPath + ".missing"
	if err := os.WriteFile(missingCfg, []byte(strings.Replace(string(cfgText), "tables: ["+p.src+".messages]", "tables: ["+p.src+".messages, "+p.src+".nosuch]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		why  string
		cfg  string
		args []string
		code int
		want []string
	}{
		{"a column the table does not have", p.cfgPath, []string{"--table", p.src + ".messages", "--where", "nosuch > 100"}, 1,
			[]string{`--where "nosuch > 100" is not a condition the source accepts on ` + p.src + ".messages", "Unknown column", "fix the SQL"}},
		{"SQL the source cannot parse", p.cfgPath, []string{"--table", p.src + ".messages", "--where", "id >"}, 1,
			[]string{`--where "id >" is not a condition the source accepts`, "fix the SQL"}},
		{"a captured table the source does not have", missingCfg, []string{"--table", p.src + ".nosuch"}, 1,
			[]string{"table " + p.src + ".nosuch does not exist on the source", "name an existing table in --table"}},
		{"a table not in source.tables", p.cfgPath, []string{"--table", p.src + ".other"}, 2,
			[]string{p.src + ".other is not in source.tables: add it first"}},
	} {
		out, code := p.snapshotCmd(c.cfg, c.args...)
		t.Logf("%s: readside snapshot %s (exit %d):\n%s", c.why, strings.Join(c.args, " "), code, out)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d", c.why, code, c.code)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q", c.why, w)
			}
		}
	}
	if got := requests(); got != "" {
		t.Fatalf("refused snapshots left requests on the source:\n%s", got)
	}

	where := "id > 100 AND body <> '日本語'"
	out, code := p.snapshotCmd(p.cfgPath, "--table", p.src+".messages", "--where", where)
	t.Logf("readside snapshot --where %q (exit %d):\n%s", where, code, out)
	if code != 0 || !strings.Contains(out, "snapshot of "+p.src+".messages requested") {
		t.Fatalf("snapshot (exit %d):\n%s", code, out)
	}
	if got, want := requests(), p.src+".messages|"+where+"|\n"; got != want {
		t.Errorf("requests on the source:\n%s\nwant\n%s", got, want)
	}
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id > 100"), 2*time.Minute, "after the snapshot")

	events := consumeEvents(t, bed, 200, 2*time.Minute, topic)
	var ids []int
	for _, e := range events {
		id := 0
		for _, c := range e.key() {
			id = id*10 + int(c-'0')
		}
		if e.Op != "r" || id <= 100 || id > 300 {
			t.Errorf("event op %q id %s on the topic; want only r events of ids 101..300", e.Op, e.key())
		}
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for i, id := range ids {
		if id != 101+i {
			t.Fatalf("snapshot events by id: %v...; want each of 101..300 once", ids[max(0, i-3):min(len(ids), i+3)])
		}
	}
	if len(ids) != 200 {
		t.Fatalf("%d snapshot events, want 200", len(ids))
	}
	t.Logf("the snapshot published exactly ids 101..300 as r events (%d) and the read table holds exactly them", len(ids))
}

// TestSnapshotWaitProgress: `readside snapshot --table db.t --wait` with
// stderr not a terminal follows its request until the snapshot is
// complete: timestamped progress lines every --progress-every while the
// tailer publishes (rows of the table's estimate and the rate), then the
// total on stdout, exit 0; the read table gets every row.
func TestSnapshotWaitProgress(t *testing.T) {
	bed := testbed.Get(t)
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__MODE", "never")
	// Small chunks (2,000 of them, each with its watermark commits): the
	// snapshot takes seconds, so lines come while it runs.
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__CHUNK_ROWS", "10")
	p := newOpsPipeline(t, "snapwait", bed.Kafka.Brokers(), "")
	const rows = 20000
	for lo := 1; lo <= rows; lo += 1000 {
		p.insertRange(t.Context(), lo, lo+999, "w")
	}
	d := p.start()
	t.Cleanup(func() {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	})
	p.waitReady(90 * time.Second)
	cmd := exec.CommandContext(t.Context(), readsideBinary(t), "snapshot", "-c", p.cfgPath, "--table", p.src+".messages", "--wait", "--progress-every", "500ms")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	t.Logf("readside snapshot --wait: exit %d after %s\nstdout:\n%s\nstderr:\n%s", cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	stamp := regexp.MustCompile(`^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d`)
	running := regexp.MustCompile(`snapshot of \S+ \(request \d+\): running, (\d+) of ~\d+ rows \(\d+%\)(, \d+ rows/s)?$`)
	var lines, runningLines, withRate int
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.Contains(l, "\r") {
			t.Errorf("a carriage return on a stderr that is no terminal: %q", l)
		}
		if !stamp.MatchString(l) {
			t.Errorf("a progress line without its time: %q", l)
			continue
		}
		lines++
		if m := running.FindStringSubmatch(l); m != nil {
			runningLines++
			if m[2] != "" {
				withRate++
			}
		}
	}
	if runningLines < 2 {
		t.Errorf("%d progress lines while the snapshot ran, want periodic ones (at least 2)", runningLines)
	}
	if withRate == 0 {
		t.Errorf("no progress line with the rate")
	}
	if !regexp.MustCompile(`: done, ` + fmt.Sprint(rows) + ` of ~\d+ rows`).MatchString(stderr.String()) {
		t.Errorf("no final progress line with the %d rows", rows)
	}
	if !regexp.MustCompile(`(?m)^snapshot of ` + regexp.QuoteMeta(p.src) + `\.messages done: ` + fmt.Sprint(rows) + ` rows in [0-9.]+m?s \(\d+ rows/s\)$`).MatchString(stdout.String()) {
		t.Errorf("stdout lacks the total: snapshot of %s.messages done: %d rows in … (… rows/s)", p.src, rows)
	}
	p.converge(2 * time.Minute)
}
