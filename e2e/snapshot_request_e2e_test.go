package e2e

// Snapshot requests the source cannot run, and cancelled ones, on the
// real test bed: they never stop the tailer.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestSnapshotRequestFailsAlone: a request written straight into the
// request table (as by hand or an older binary) whose where names a column
// the table does not have is recorded in _readside_snapshot_failures with
// the server's error, reported by one ERROR line naming it, and skipped:
// rows written afterwards reach the read table and a later good request
// still snapshots. A request deleted by `readside snapshot --cancel`
// before the tailer reads it is dropped: none of its rows is published.
func TestSnapshotRequestFailsAlone(t *testing.T) {
	bed := testbed.Get(t)
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__MODE", "never")
	p := newOpsPipeline(t, "snapreq", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	p.insertRange(ctx, 1, 300, "s")
	d := p.run()

	serverID := p.serverID()
	db := bed.MySQL.DB()
	res, err := db.ExecContext(ctx, "INSERT INTO readside._readside_snapshot_requests (server_id, table_name, where_clause) VALUES (?, ?, 'bogus_col > 1')", serverID, p.src+".messages")
	if err != nil {
		t.Fatal(err)
	}
	badID, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}

	// Rows written after the bad request still replicate.
	p.insertRange(ctx, 301, 310, "live")
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id > 300"), 2*time.Minute, "live rows after a bad snapshot request")

	failures := func() string {
		return testbed.RowsText(t, db, "SELECT request_id, table_name, where_clause, error FROM readside._readside_snapshot_failures WHERE server_id = ? ORDER BY id", serverID)
	}
	got := failures()
	t.Logf("failed requests:\n%s", got)
	if !strings.HasPrefix(got, strings.Join([]string{strconv.FormatInt(badID, 10), p.src + ".messages", "bogus_col > 1", ""}, "|")) ||
		!strings.Contains(got, "Unknown column 'bogus_col'") {
		t.Errorf("failed requests on the source:\n%s\nwant one row of request %d with the Unknown column error", got, badID)
	}
	var errLines []string
	for _, l := range strings.Split(p.log(), "\n") {
		if strings.Contains(l, "snapshot request failed") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 || !strings.Contains(errLines[0], "level=ERROR") || !strings.Contains(errLines[0], "request="+strconv.FormatInt(badID, 10)) ||
		!strings.Contains(errLines[0], "bogus_col") || !strings.Contains(errLines[0], "readside snapshot") {
		t.Errorf("want one ERROR line naming request %d, its error and the fix; got:\n%s", badID, strings.Join(errLines, "\n"))
	}

	// A later good request still works.
	out, code := p.snapshotCmd(p.cfgPath, "--table", p.src+".messages", "--where", "id <= 100")
	if code != 0 {
		t.Fatalf("snapshot (exit %d):\n%s", code, out)
	}
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id <= 100 OR id > 300"), 2*time.Minute, "after a good snapshot request")

	// --cancel: a request written and cancelled while the daemon is down is
	// dropped when the tailer reads both from the binlog.
	d.stopClean()
	if out, code := p.snapshotCmd(p.cfgPath, "--table", p.src+".messages", "--where", "id > 100 AND id <= 300"); code != 0 {
		t.Fatalf("snapshot (exit %d):\n%s", code, out)
	}
	out, code = p.snapshotCmd(p.cfgPath, "--table", p.src+".messages", "--cancel")
	t.Logf("readside snapshot --cancel (exit %d):\n%s", code, out)
	if code != 0 || !strings.Contains(out, "deleted 3 snapshot request(s) of "+p.src+".messages") {
		t.Fatalf("snapshot --cancel (exit %d):\n%s", code, out)
	}
	if got := testbed.RowsText(t, db, "SELECT id FROM readside._readside_snapshot_requests WHERE server_id = ?", serverID); got != "" {
		t.Fatalf("requests left after --cancel:\n%s", got)
	}
	d.restart()
	// Two markers written after the cancel: the cancelled chunk's high
	// watermark, had it been read, precedes the second in the binlog.
	p.insertRange(ctx, 311, 311, "m")
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id <= 100 OR id > 300"), 2*time.Minute, "first marker after --cancel")
	p.insertRange(ctx, 312, 312, "m")
	p.waitRows(p.rows("`"+p.src+"`.messages WHERE id <= 100 OR id > 300"), 2*time.Minute, "second marker after --cancel")
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !testbed.Poll(waitCtx, 500*time.Millisecond, func() bool { return strings.Contains(p.log(), "snapshot request cancelled") }) {
		t.Fatalf("no 'snapshot request cancelled' in the log:\n%s", tail(p.logPath))
	}
	if strings.Count(p.log(), "snapshot done") != 1 {
		t.Errorf("want only the good request's 'snapshot done'; log:\n%s", tail(p.logPath))
	}
}
