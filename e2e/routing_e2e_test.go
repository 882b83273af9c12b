package e2e

// The daemon follows a projection's routing generation: a cutover done by
// hand here (what readside reshard does, on one server) moves
// messages_by_sender to the sink moved, which the config file lists (added
// after the daemon started) but the projection does not name.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/httpapi"
)

// TestDaemonFollowsRouting: with the daemon running, the test fences
// messages_by_sender's routing row on its sink, copies its rows and offsets
// to the sink moved, and records generation 1 naming moved on both; the
// daemon, started before moved was added to its config file, takes moved
// from the file and moves the projection onto it (INFO line), rows written
// afterwards appear there and not on the old sink, /status shows sink
// moved at generation 1, and the other projection (messages_by_id, on the
// old sink) keeps applying.
func TestDaemonFollowsRouting(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	p := newOpsPipeline(t, "route", bed.Kafka.Brokers(), "")
	moved, err := bed.MySQL.CreateDatabase(ctx, "route_m")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "projections:\n", fmt.Sprintf("projections:\n  messages_by_id:\n    from: %s.messages\n    sink: reads\n    key: [id]\n    columns: {id: id, body: body}\n", p.src), 1)
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MOVED_DSN", bed.MySQL.AdminDSN()+moved)

	d := p.start()
	p.waitReady(90 * time.Second)
	// The sink moved is added to the file beside the running daemon, as
	// docs/operations.md ("Resharding") has it before readside reshard.
	cfg = strings.Replace(cfg, "sinks:\n", "sinks:\n  moved:\n    dsn: \"${MOVED_DSN}\"\n", 1)
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p.insertRange(ctx, 1, 50, "a")
	p.converge(2 * time.Minute)
	before := p.rows("`" + p.sink + "`.messages_by_sender")

	// The cutover, in one transaction on the one server both sinks share:
	// the fence on the routing row, the copy, the new generation on both.
	db := bed.MySQL.DB()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	old, dst := "`"+p.sink+"`.", "`"+moved+"`."
	for _, q := range []string{
		"INSERT IGNORE INTO " + old + "`_readside_routing` (projection, generation, sink, ranges) VALUES ('messages_by_sender', 0, 'reads', '-')",
		"SELECT generation FROM " + old + "`_readside_routing` WHERE projection = 'messages_by_sender' FOR UPDATE",
		"CREATE TABLE " + dst + "messages_by_sender LIKE " + old + "messages_by_sender",
		"INSERT INTO " + dst + "messages_by_sender SELECT * FROM " + old + "messages_by_sender",
		"CREATE TABLE " + dst + "`_readside_offsets` LIKE " + old + "`_readside_offsets`",
		"INSERT INTO " + dst + "`_readside_offsets` SELECT * FROM " + old + "`_readside_offsets` WHERE projection = 'messages_by_sender'",
		"CREATE TABLE " + dst + "`_readside_tombstones` LIKE " + old + "`_readside_tombstones`",
		"INSERT INTO " + dst + "`_readside_tombstones` SELECT * FROM " + old + "`_readside_tombstones` WHERE projection = 'messages_by_sender'",
		"CREATE TABLE " + dst + "`_readside_routing` LIKE " + old + "`_readside_routing`",
		"INSERT INTO " + dst + "`_readside_routing` (projection, generation, sink, ranges) VALUES ('messages_by_sender', 1, 'moved', '-')",
		"UPDATE " + old + "`_readside_routing` SET generation = 1, sink = 'moved', ranges = '-' WHERE projection = 'messages_by_sender'",
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	p.insertRange(ctx, 51, 80, "b")
	want := p.rows("`" + p.src + "`.messages")
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		got := p.rows("`" + moved + "`.messages_by_sender")
		return got == want, fmt.Sprintf("the moved sink's table differs from the source (%d vs %d rows)\n%s\nlog tail:\n%s",
			strings.Count(got, "\n"), strings.Count(want, "\n"), rowDiff(got, want, 10), tail(p.logPath))
	})
	if got := p.rows("`" + p.sink + "`.messages_by_sender"); got != before {
		t.Errorf("the old sink's table changed after the cutover:\n%s", rowDiff(got, before, 10))
	}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+p.sink+"`.messages_by_id").Scan(&n)
		return err == nil && n == 80, fmt.Sprintf("messages_by_id holds %d rows (%v), want 80; log tail:\n%s", n, err, tail(p.logPath))
	})
	if l := p.log(); !strings.Contains(l, "projection messages_by_sender follows routing generation 1 on sink moved") {
		t.Errorf("no INFO line for the move; log tail:\n%s", tail(p.logPath))
	}
	var st httpapi.Report
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		code, body, err := p.get(sctx, "/status")
		if err != nil || code != 200 || json.Unmarshal(body, &st) != nil {
			return false, fmt.Sprintf("/status: %d %v %s", code, err, body)
		}
		for _, ps := range st.Projections {
			if ps.Name == "messages_by_sender" {
				// Its offsets are read on moved's server.
				onMoved := len(ps.Partitions) > 0
				for _, part := range ps.Partitions {
					onMoved = onMoved && part.Sink == "moved"
				}
				return ps.Sink == "moved" && ps.Generation == 1 && ps.State == "consuming" && ps.ConsumerLag == 0 && onMoved,
					fmt.Sprintf("/status shows messages_by_sender %+v", ps)
			}
		}
		return false, fmt.Sprintf("/status has no messages_by_sender: %s", body)
	})
	out, code := p.status(t)
	if code != 0 || !strings.Contains(out, "messages_by_sender applies through sink moved at routing generation 1") {
		t.Errorf("readside status (exit %d) does not show the sink moved:\n%s", code, out)
	}
	t.Logf("readside status:\n%s", out)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
