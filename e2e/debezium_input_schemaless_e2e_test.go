package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// TestProjectionsOverDebeziumSchemaless: readside's tailer writes
// kafka.format: debezium without the JSON converter's schema block
// (kafka.debezium.schemas.enable: false, bare payloads as most connectors
// in the field are run), and the same process's projections read it
// back, each column's type from the source's live schema: a copy with
// every column type the workload writes and a joined column, and an
// aggregate. Rows written before the start arrive as the snapshot's op r,
// then a seeded workload (inserts, updates, deletes, primary key changes)
// runs while readside is killed with SIGKILL once. Then a column is added
// and a row carries it: the projections read the table's columns again
// and go on. The read tables equal SQL on the source.
func TestProjectionsOverDebeziumSchemaless(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	m := newOrderReadModels(t, bed, "dbzbare", 37)
	db, o := m.db, m.o

	prefix := fmt.Sprintf("rsbare%09d", rand.IntN(1e9))
	dir := t.TempDir()
	cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
	cfg := fmt.Sprintf(`source:
  dsn: "%s"
  server_id: %d
  tables: [%[3]s.orders, %[3]s.customers]
kafka:
  brokers: [%s]
  topic_prefix: %s
  partitions: 3
  format: debezium
  debezium: {schemas.enable: false}
data_dir: %s
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), prefix, filepath.Join(dir, "data")) + m.projections()
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	equal := m.equal(t, logPath)

	ops := envInt("E2E_DBZ_OPS", 400)
	werr := m.writeInBackground(ctx, ops)
	m.waitForSteps(ops / 2)
	d.kill9()
	d.start()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 2*time.Minute, equal)
	seed := m.seed
	t.Logf("%d writes (seed %d), readside killed once: read tables equal the source %s after the start", ops, seed, time.Since(start).Round(time.Millisecond))

	// The topic holds bare payloads: nothing but the live schema typed them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(prefix+"."+db+".orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	fs := cl.PollFetches(pctx)
	cancel()
	var seen int
	fs.EachRecord(func(rec *kgo.Record) {
		if rec.Value == nil {
			return
		}
		seen++
		if strings.HasPrefix(string(rec.Value), `{"schema"`) || !strings.HasPrefix(string(rec.Value), `{"before"`) {
			t.Fatalf("a record with the schema block, or not an envelope: %.200s", rec.Value)
		}
	})
	if seen == 0 {
		t.Fatalf("no record read back from the orders topic: %v", fs.Errors())
	}

	// ADD COLUMN: a record carrying the new column makes the projections
	// read the table's columns again.
	marker := 9001
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+o+" ADD COLUMN extra DECIMAL(6,3) NULL",
		fmt.Sprintf("INSERT INTO %s (id, customer_id, amount, placed, flag, note, extra) VALUES (%d, 1, 1.00, '2026-01-01 00:00:00', 1, 'after the ADD', 7.125)", o, marker),
		fmt.Sprintf("UPDATE %s SET amount = amount + 1, extra = -0.5 WHERE id <> %d", o, marker)); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, time.Minute, equal)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
	t.Logf("a column added: the projections read the table's columns again and the read tables equal the source %s after the start", time.Since(start).Round(time.Millisecond))
}
