package e2e

import (
	"encoding/binary"
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

// TestProjectionsOverDebeziumAvro: readside's tailer writes kafka.format:
// debezium-avro (the Confluent wire format, schemas in the test bed's
// registry) and the same process's projections read it back through the
// registry: a copy with a joined column and an aggregate. Rows written
// before the start arrive as the snapshot's op r, then a seeded workload
// (inserts, updates of every column type, deletes, primary key changes)
// runs while readside is killed with SIGKILL once. Then the registry stops
// answering lookups, readside is killed again and a column is added (a
// new schema version): the restarted projector, which holds no schema
// yet, waits without applying or skipping anything and goes on once the
// registry answers. Last, a record naming a schema id
// the registry never held stops the projections with an error naming it,
// their offsets before it. The read tables equal SQL on the source.
func TestProjectionsOverDebeziumAvro(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	m := newOrderReadModels(t, bed, "dbzav", 31)
	db, o, seed := m.db, m.o, m.seed
	reg := bed.Registry(t)

	prefix := fmt.Sprintf("rsav%09d", rand.IntN(1e9))
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
  format: debezium-avro
  schema_registry: {url: "%s"}
data_dir: %s
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), prefix, reg.URL(), filepath.Join(dir, "data")) + m.projections()
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	r := "`" + m.sink + "`"
	equal := m.equal(t, logPath)

	ops := envInt("E2E_DBZ_OPS", 600)
	werr := m.writeInBackground(ctx, ops)
	m.waitForSteps(ops / 2)
	d.kill9()
	d.start()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 2*time.Minute, equal)
	t.Logf("%d writes (seed %d), readside killed once: read tables equal the source %s after the start", ops, seed, time.Since(start).Round(time.Millisecond))

	// The registry stops answering lookups; a restarted projector holds
	// no schema, and a column added meanwhile gives the table a schema
	// version no one has read yet: it cannot decode what it reads.
	reg.FailLookups(true)
	d.kill9()
	marker := 9001
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+o+" ADD COLUMN extra INT NULL",
		fmt.Sprintf("INSERT INTO %s (id, customer_id, amount, placed, flag, note, extra) VALUES (%d, 1, 1.00, '2026-01-01 00:00:00', 1, 'while the registry is down', 7)", o, marker)); err != nil {
		t.Fatal(err)
	}
	d.start()
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "cannot fetch the records' schemas"), "no warning of the registry failing in the log:\n" + tail(logPath)
	})
	time.Sleep(2 * time.Second) // a few retries
	var n int
	if err := bed.MySQL.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s.orders_copy WHERE id = %d", r, marker)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("the row written while the registry failed lookups is in the read table: it was applied without its schema")
	}
	reg.FailLookups(false)
	testbed.Eventually(t, time.Minute, equal)
	t.Log("the registry answering again, the projector went on where it waited")

	// A record naming a schema id the registry never held.
	topic := prefix + "." + db + ".orders"
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const unknownID = 999999
	bogus := binary.BigEndian.AppendUint32([]byte{0}, unknownID)
	res, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: append(bogus, 0, 0)}).First()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders_copy", "customer_totals"} {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), fmt.Sprintf("projection %s: %s: the schema registry at %s (kafka.schema_registry.url) holds no schema id %d", name, "no Avro schema of that id in the registry", reg.URL(), unknownID)),
				"the projection did not stop naming the unknown schema id:\n" + tail(logPath)
		})
		var next int64
		row := bed.MySQL.DB().QueryRowContext(ctx, "SELECT next_offset FROM "+r+".`_readside_offsets` WHERE projection = ? AND topic = ? AND part = 0", name, topic)
		if err := row.Scan(&next); err != nil {
			t.Fatal(err)
		}
		if next > res.Offset {
			t.Errorf("%s consumed partition 0 up to offset %d, past the record of an unknown schema at %d", name, next, res.Offset)
		}
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
