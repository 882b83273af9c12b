package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	db, err := bed.MySQL.CreateDatabase(ctx, "dbzbare")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := bed.MySQL.CreateDatabase(ctx, "dbzbare_r")
	if err != nil {
		t.Fatal(err)
	}
	o, c := "`"+db+"`.orders", "`"+db+"`.customers"
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+c+" (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
		"CREATE TABLE "+o+" (id INT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL,"+
			" placed DATETIME(6) NOT NULL, paid TIMESTAMP(3) NULL, flag BIT(1) NOT NULL, code VARBINARY(8), note VARCHAR(40))",
	); err != nil {
		t.Fatal(err)
	}
	seed := seedFromEnv(t)
	w := &orderWorkload{db: bed.MySQL.DB(), o: o, c: c, rng: rand.New(rand.NewPCG(seed, 37)), live: map[int]bool{}}
	for i := 0; i < 40; i++ { // the snapshot's rows
		if err := w.step(ctx); err != nil {
			t.Fatal(err)
		}
	}

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
sinks:
  reads:
    dsn: "%s"
projections:
  orders_copy:
    from: %[3]s.orders
    sink: reads
    key: [id]
    columns: {id: id, customer_id: customer_id, amount: amount, placed: placed, paid: paid, flag: flag, code: code, note: note}
    join:
      - from: %[3]s.customers
        on: {id: customer_id}
        columns: {customer_name: name}
  customer_totals:
    from: %[3]s.orders
    sink: reads
    group_by: [customer_id]
    aggregates:
      orders: "count(*)"
      total: "sum(amount)"
      last_placed: "max(placed)"
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), prefix, filepath.Join(dir, "data"), bed.MySQL.AdminDSN()+sink)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := startDaemon(t, logPath, "run", "-c", cfgPath)

	query := func(q string) string {
		t.Helper()
		return queryText(t, bed.MySQL.DB(), q)
	}
	r := "`" + sink + "`"
	equal := func() (bool, string) {
		wantCopy := query("SELECT o.id, o.customer_id, o.amount, o.placed, o.paid, o.flag+0, HEX(o.code), o.note, c.name FROM " + o + " o LEFT JOIN " + c + " c ON c.id = o.customer_id ORDER BY o.id")
		gotCopy := query("SELECT id, customer_id, amount, placed, paid, flag+0, HEX(code), note, customer_name FROM " + r + ".orders_copy ORDER BY id")
		wantAgg := query("SELECT customer_id, COUNT(*), SUM(amount), MAX(placed) FROM " + o + " GROUP BY customer_id ORDER BY customer_id")
		gotAgg := query("SELECT customer_id, orders, total, last_placed FROM " + r + ".customer_totals ORDER BY customer_id")
		if wantCopy == gotCopy && wantAgg == gotAgg {
			return true, ""
		}
		return false, fmt.Sprintf("read tables differ from the source\ncopy: %s\naggregate: %s\nlog tail:\n%s",
			rowDiff(gotCopy, wantCopy, 10), rowDiff(gotAgg, wantAgg, 10), tail(logPath))
	}

	ops := envInt("E2E_DBZ_OPS", 400)
	var done atomic.Int64
	werr := make(chan error, 1)
	go func() {
		for i := 0; i < ops; i++ {
			if err := w.step(ctx); err != nil {
				werr <- err
				return
			}
			done.Add(1)
		}
		werr <- nil
	}()
	for done.Load() < int64(ops/2) {
		time.Sleep(10 * time.Millisecond)
	}
	d.kill9()
	d.start()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 2*time.Minute, equal)
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
