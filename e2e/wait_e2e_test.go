package e2e

// /wait: read-your-writes against the daemon's HTTP endpoint.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// writeGTID runs one statement on its own connection and returns the
// GTID (MariaDB) or GTID set (MySQL) covering its transaction.
func writeGTID(t *testing.T, m *testbed.MySQL, stmt string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	conn, err := m.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, stmt, args...); err != nil {
		t.Fatal(err)
	}
	gtid, err := m.LastGTID(ctx, conn)
	if err != nil || gtid == "" {
		t.Fatalf("the write's GTID: %q %v", gtid, err)
	}
	return gtid
}

func (p *opsPipeline) wait(ctx context.Context, addr, projection, gtid, timeout string) (int, map[string]any) {
	p.t.Helper()
	u := fmt.Sprintf("http://%s/wait?projection=%s&gtid=%s&timeout=%s", addr, url.QueryEscape(projection), url.QueryEscape(gtid), timeout)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestWaitReadYourWrites: for each of many writes (inserts, updates that
// move the row to another read key, deletes), /wait with the write's GTID
// answers 200 and a read of the read table right after shows the write.
// A GTID of a transaction on a table readside does not capture answers
// 200 too (it must not wait for an event that never comes). Bad requests
// name the problem.
func TestWaitReadYourWrites(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "wait", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	db := bed.MySQL.DB()
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+p.src+"`.other (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.waitReady(90 * time.Second)
	table := "`" + p.src + "`.messages"
	read := "`" + p.sink + "`.messages_by_sender"
	var slowest time.Duration
	for i := 1; i <= 30; i++ {
		sender := i % 7
		var stmt string
		var args []any
		switch i % 3 {
		case 1:
			stmt, args = "INSERT INTO "+table+" VALUES (?, ?, '2026-01-01 00:00:00', ?)", []any{i, sender, fmt.Sprintf("b%d", i)}
		case 2:
			sender = 100 + i // a key move: the read row changes key
			stmt, args = "UPDATE "+table+" SET sender_id = ?, body = ? WHERE id = ?", []any{sender, fmt.Sprintf("u%d", i), i - 1}
		case 0:
			stmt, args = "DELETE FROM "+table+" WHERE id = ?", []any{i - 2}
		}
		gtid := writeGTID(t, bed.MySQL, stmt, args...)
		start := time.Now()
		code, body := p.wait(ctx, p.httpAddr, "messages_by_sender", gtid, "10s")
		slowest = max(slowest, time.Since(start))
		if code != http.StatusOK {
			t.Fatalf("write %d (gtid %s): /wait %d %v", i, gtid, code, body)
		}
		var n int
		var q string
		switch i % 3 {
		case 1:
			q = fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id = %d AND sender_id = %d AND body = 'b%d'", read, i, sender, i)
		case 2:
			q = fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id = %d AND sender_id = %d AND body = 'u%d'", read, i-1, sender, i)
		case 0:
			q = fmt.Sprintf("SELECT 1 - COUNT(*) FROM %s WHERE id = %d", read, i-2)
		}
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("write %d (gtid %s): /wait answered 200 but the read table does not show it yet (%s)", i, gtid, q)
		}
	}
	t.Logf("30 writes: each visible in the read table when /wait returned 200; slowest /wait %s", slowest)

	gtid := writeGTID(t, bed.MySQL, "INSERT INTO `"+p.src+"`.other VALUES (1)")
	if code, body := p.wait(ctx, p.httpAddr, "messages_by_sender", gtid, "10s"); code != http.StatusOK {
		t.Errorf("/wait for a GTID that touched no captured table: %d %v", code, body)
	}
	for _, c := range []struct {
		projection, gtid, timeout string
		code                      int
	}{
		{"nope", gtid, "1s", http.StatusNotFound},
		{"messages_by_sender", "", "1s", http.StatusBadRequest},
		{"messages_by_sender", "not-a-gtid", "1s", http.StatusBadRequest},
		{"messages_by_sender", gtid, "forever", http.StatusBadRequest},
	} {
		if code, body := p.wait(ctx, p.httpAddr, c.projection, c.gtid, c.timeout); code != c.code || body["error"] == nil {
			t.Errorf("/wait projection=%q gtid=%q timeout=%q: %d %v, want %d with an error", c.projection, c.gtid, c.timeout, code, body, c.code)
		}
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// TestWaitTimesOutWithoutProjector: with only the tailer running (the
// projector stopped), /wait for a new write answers 504 after its
// timeout; once a projector process starts, the same /wait answers 200
// and the row is in the read table.
func TestWaitTimesOutWithoutProjector(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "waitto", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	tailer := startDaemon(t, p.logPath, "run", "-c", p.cfgPath, "--role", "tailer")
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if !testbed.Poll(wctx, 200*time.Millisecond, func() bool {
		code, body, err := p.get(wctx, "/status")
		var st struct {
			Source struct{ Tailer string } `json:"source"`
		}
		return err == nil && code == 200 && json.Unmarshal(body, &st) == nil && st.Source.Tailer == "connected"
	}) {
		t.Fatalf("tailer not connected; log:\n%s", tail(p.logPath))
	}
	gtid := writeGTID(t, bed.MySQL, "INSERT INTO `"+p.src+"`.messages VALUES (1, 1, '2026-01-01 00:00:00', 'x')")
	start := time.Now()
	code, body := p.wait(ctx, p.httpAddr, "messages_by_sender", gtid, "2s")
	took := time.Since(start)
	if code != http.StatusGatewayTimeout || took < 2*time.Second || took > 5*time.Second {
		t.Fatalf("/wait with no projector: %d after %s %v, want 504 after the 2s timeout", code, took, body)
	}
	t.Logf("no projector: /wait answered %d after %s: %v", code, took.Round(time.Millisecond), body["error"])
	projAddr := freeAddr(t)
	projector := startDaemon(t, p.logPath, "run", "-c", p.cfgPath, "--role", "projector", "--http", projAddr)
	code, body = p.wait(ctx, p.httpAddr, "messages_by_sender", gtid, "60s")
	if code != http.StatusOK {
		t.Fatalf("/wait after the projector started: %d %v; log:\n%s", code, body, tail(p.logPath))
	}
	var n int
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+p.sink+"`.messages_by_sender WHERE id = 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("/wait answered 200 but the row is not in the read table: %d %v", n, err)
	}
	// The projector process answers too (the checkpoint from the topic).
	if code, body := p.wait(ctx, projAddr, "messages_by_sender", gtid, "10s"); code != http.StatusOK {
		t.Errorf("/wait on the projector process: %d %v", code, body)
	}
	for _, d := range []*daemon{projector, tailer} {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	}
}
