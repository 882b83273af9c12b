package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestDaemonKill9WithProjection: `readside run` (tailer and projector in
// one process) is killed with SIGKILL again and again while a seeded
// workload inserts, edits, re-keys (sender changes move rows in the read
// table), deletes and re-inserts messages. After the last restart the
// read table messages_by_sender equals the SQL expectation on the source.
func TestDaemonKill9WithProjection(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "chatk")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "readsk")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.messages (id INT PRIMARY KEY, sender_id INT NOT NULL, created_at DATETIME(6) NOT NULL, body VARCHAR(100))", src)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix := "pk" + strconv.Itoa(rand.IntN(1e6))
	cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %d
  tables: [%[2]s.messages]
kafka:
  brokers: [%[3]s]
  topic_prefix: %[4]s
  partitions: 4
sinks:
  reads:
    dsn: "${SINK_DSN}"
projections:
  messages_by_sender:
    from: %[2]s.messages
    sink: reads
    key: [sender_id, created_at, id]
    shard_by: sender_id
    columns: {sender_id: sender_id, created_at: created_at, id: id, body: body}
`, testbed.NewServerID(), src, strings.Join(bed.Kafka.Brokers(), ", "), prefix)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	t.Setenv("SINK_DSN", bed.MySQL.AdminDSN()+sinkDB)
	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	waitForCheckpoint(t, bed, prefix)

	seed := seedFromEnv(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	wctx, stopWriter := context.WithCancel(ctx)
	werr := make(chan error, 1)
	ops := envInt("E2E_PROJECTION_OPS", 20_000)
	go func() {
		live := map[int]bool{}
		table := "`" + src + "`.messages"
		for i := 0; i < ops && wctx.Err() == nil; i++ {
			id := 1 + rng.IntN(2000)
			var err error
			switch r := rng.IntN(100); {
			case !live[id]:
				_, err = bed.MySQL.DB().ExecContext(wctx, "INSERT INTO "+table+" VALUES (?, ?, ?, ?)", id, rng.IntN(50),
					fmt.Sprintf("2026-01-01 00:%02d:%02d.%06d", rng.IntN(60), rng.IntN(60), rng.IntN(1e6)), fmt.Sprintf("m%d", i))
				live[id] = true
			case r < 40:
				_, err = bed.MySQL.DB().ExecContext(wctx, "UPDATE "+table+" SET body = ? WHERE id = ?", fmt.Sprintf("e%d", i), id)
			case r < 75:
				_, err = bed.MySQL.DB().ExecContext(wctx, "UPDATE "+table+" SET sender_id = ? WHERE id = ?", rng.IntN(50), id)
			default:
				_, err = bed.MySQL.DB().ExecContext(wctx, "DELETE FROM "+table+" WHERE id = ?", id)
				delete(live, id)
			}
			if err != nil && wctx.Err() == nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	kills := d.killWhile(rand.New(rand.NewPCG(seed, 8)), werr, 5) // its own rng: the writer uses rng
	stopWriter()
	t.Logf("%d writes, %d SIGKILLs of readside run", ops, kills)

	q := func(table string) string {
		rows, err := bed.MySQL.DB().QueryContext(ctx, "SELECT sender_id, created_at, id, COALESCE(body, '<null>') FROM "+table+" ORDER BY sender_id, created_at, id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var s, c, i, body string
			if err := rows.Scan(&s, &c, &i, &body); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s|%s|%s|%s\n", s, c, i, body)
		}
		return b.String()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		want, got := q("`"+src+"`.messages"), q("`"+sinkDB+"`.messages_by_sender")
		if want == got {
			t.Logf("read table equals the source: %d rows", strings.Count(want, "\n"))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read table differs from the source after 2 minutes; log tail:\n%s", tail(logPath))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
