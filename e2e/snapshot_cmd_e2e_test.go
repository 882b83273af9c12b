package e2e

// readside snapshot as the user runs it: the built binary against a
// running daemon on the real test bed.

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

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
	p := newOpsPipeline(t, "snapcmd", bed.Kafka.Brokers(), "")
	ctx := t.Context()
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
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT table_name, COALESCE(where_clause, '<none>') FROM readside._readside_snapshot_requests WHERE server_id = ? ORDER BY id", serverID)
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

	out, code := p.snapshotCmd(p.cfgPath, "--table", p.src+".messages", "--where", "id > 100")
	t.Logf("readside snapshot --where 'id > 100' (exit %d):\n%s", code, out)
	if code != 0 || !strings.Contains(out, "snapshot of "+p.src+".messages requested") {
		t.Fatalf("snapshot (exit %d):\n%s", code, out)
	}
	if got, want := requests(), p.src+".messages|id > 100|\n"; got != want {
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
