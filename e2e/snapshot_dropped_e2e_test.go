package e2e

// A snapshot request of a table dropped after it was written, on the real
// test bed: the request fails alone, and every report shows it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestSnapshotOfDroppedTable: a snapshot of a captured table is requested
// while readside is down, then the table is dropped. On start the tailer
// fails that request and streams on (rows written afterwards reach the
// read table; a later request still snapshots). Before the start
// `readside snapshot --pending` lists both requests as not read yet; after
// it, /status, `readside status` (from the daemon, and without one) and
// `--pending` show the failure with the table, the error and the fix.
func TestSnapshotOfDroppedTable(t *testing.T) {
	bed := testbed.Get(t)
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__MODE", "never")
	p := newOpsPipeline(t, "snapdrop", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	db := bed.MySQL.DB()
	gone := p.src + ".gone"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+p.src+"`.gone LIKE `"+p.src+"`.messages",
		"INSERT INTO `"+p.src+"`.gone VALUES (1, 1, '2026-01-01 00:00:01', 'g')"); err != nil {
		t.Fatal(err)
	}
	cfgText, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(cfgText), "tables: ["+p.src+".messages]", "tables: ["+p.src+".messages, "+gone+"]", 1)
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	serverID := p.serverID()
	p.insertRange(ctx, 1, 20, "s")

	d := p.run()
	// A live row applied: the tailer has committed a checkpoint, so the
	// next start resumes from it and reads the requests written meanwhile.
	p.insertRange(ctx, 100, 100, "m")
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id = 100"), 2*time.Minute, "a live row before the stop")
	d.stopClean()
	if out, code := p.snapshotCmd(p.cfgPath, "--table", gone); code != 0 {
		t.Fatalf("snapshot of %s (exit %d):\n%s", gone, code, out)
	}
	if err := bed.MySQL.Exec(ctx, "DROP TABLE `"+p.src+"`.gone"); err != nil {
		t.Fatal(err)
	}
	if out, code := p.snapshotCmd(p.cfgPath, "--table", p.src+".messages", "--where", "id <= 10"); code != 0 {
		t.Fatalf("snapshot of messages (exit %d):\n%s", code, out)
	}
	var goneID, msgID int64
	if err := db.QueryRowContext(ctx, "SELECT MAX(CASE WHEN table_name = ? THEN id END), MAX(CASE WHEN table_name = ? THEN id END) FROM readside._readside_snapshot_requests WHERE server_id = ?",
		gone, p.src+".messages", serverID).Scan(&goneID, &msgID); err != nil {
		t.Fatal(err)
	}
	out, code := p.snapshotCmd(p.cfgPath, "--pending")
	t.Logf("readside snapshot --pending, daemon down (exit %d):\n%s", code, out)
	for _, w := range []string{
		fmt.Sprintf("written  %s  request %d,", gone, goneID),
		fmt.Sprintf("written  %s.messages  request %d where id <= 10,", p.src, msgID),
		"none queued or running",
	} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("snapshot --pending (exit %d) lacks %q", code, w)
		}
	}

	d.restart()
	p.insertRange(ctx, 21, 30, "live")
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id <= 10 OR id > 20"), 2*time.Minute, "live rows and the later request after the failed one")
	if !d.running() {
		t.Fatalf("readside exited; log:\n%s", tail(p.logPath))
	}
	var errLines []string
	for _, l := range strings.Split(p.log(), "\n") {
		if strings.Contains(l, "snapshot request failed") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 || !strings.Contains(errLines[0], "level=ERROR") || !strings.Contains(errLines[0], fmt.Sprintf("request=%d table=%s", goneID, gone)) ||
		!strings.Contains(errLines[0], "does not exist") {
		t.Errorf("want one ERROR line naming request %d of %s; got:\n%s", goneID, gone, strings.Join(errLines, "\n"))
	}
	if strings.Contains(p.log(), "level=ERROR msg=\"tailer") || strings.Contains(p.log(), "stream interrupted") {
		t.Errorf("the dropped table stopped or restarted the tailer; log:\n%s", tail(p.logPath))
	}

	// /status, from the daemon.
	wantFailure := func(what, out string) {
		t.Helper()
		for _, w := range []string{
			fmt.Sprintf("FAILED snapshot request %d of %s at ", goneID, gone),
			"table " + gone + " does not exist on the source",
			"fix: the table is gone from the source: recreate it and request again with `readside snapshot --table " + gone + "`, or remove it from source.tables",
		} {
			// Long lines are wrapped: compare with the spaces collapsed.
			if !strings.Contains(strings.Join(strings.Fields(out), " "), w) {
				t.Errorf("%s lacks %q:\n%s", what, w, out)
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, body, err := p.get(sctx, "/status")
	if err != nil || status != http.StatusOK {
		t.Fatalf("/status: %d %v", status, err)
	}
	var rep struct {
		Source struct {
			SnapshotFailures []struct {
				Request uint64 `json:"request"`
				Table   string `json:"table"`
				Error   string `json:"error"`
				Fix     string `json:"fix"`
			} `json:"snapshot_failures"`
		} `json:"source"`
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if f := rep.Source.SnapshotFailures; len(f) != 1 || f[0].Request != uint64(goneID) || f[0].Table != gone || !strings.Contains(f[0].Error, "does not exist") ||
		!strings.Contains(f[0].Fix, "readside snapshot --table "+gone) {
		t.Errorf("/status source.snapshot_failures: %+v; want request %d of %s with its error and fix", f, goneID, gone)
	}
	out, code = p.status(t)
	t.Logf("readside status, daemon (exit %d):\n%s", code, out)
	wantFailure("readside status from the daemon", out)
	out, code = p.snapshotCmd(p.cfgPath, "--pending")
	t.Logf("readside snapshot --pending, daemon up (exit %d):\n%s", code, out)
	wantFailure("snapshot --pending", out)
	if code != 0 || strings.Contains(out, "written  ") {
		t.Errorf("snapshot --pending (exit %d) still lists requests as not read:\n%s", code, out)
	}

	d.stopClean()
	out, code = p.status(t)
	t.Logf("readside status, no daemon (exit %d):\n%s", code, out)
	if !strings.Contains(out, "no daemon at") {
		t.Errorf("readside status did not go without the daemon:\n%s", out)
	}
	wantFailure("readside status without a daemon", out)
}
