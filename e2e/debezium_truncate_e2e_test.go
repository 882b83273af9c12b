package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// TestDebeziumConnectorTruncates: the real Debezium MariaDB connector
// run with `skipped.operations=none` publishes a TRUNCATE as an `op: t`
// record (no key, so on one partition of the table's three), and the
// projections over its topics (input.kind: debezium) empty what the
// truncated table fed: the copy's rows, the aggregate's groups, the
// nested arrays; a truncated joined parent leaves its names NULL in the
// copy and its rows out of the children's read table. Changes on the
// other partitions written before the TRUNCATE may be read after it and
// must not bring rows back; changes after it must all land. readside is
// killed with SIGKILL once between the two truncates. Every read table
// ends equal to SQL on the source.
func TestDebeziumConnectorTruncates(t *testing.T) {
	bed := connectorBed(t)
	ctx := t.Context()
	m := newOrderReadModels(t, bed, "dbztr", 23)
	db := m.db
	run := rand.IntN(1e9)
	dz := fmt.Sprintf("dzt%09d", run)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 3, -1, nil, dz+"."+db+".orders", dz+"."+db+".customers"); err != nil {
		t.Fatal(err)
	}
	cdir := filepath.Join(t.TempDir(), "connect")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	conn, err := bed.StartConnect(ctx, cdir, mariadbConnector(t, bed, dz, db, append(dbzJSONConverters(true), "skipped.operations=none")...))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()

	dir := t.TempDir()
	cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
	cfg := dbzInputConfig(bed, db, fmt.Sprintf("rst%09d", run), dz, "", filepath.Join(dir, "data")) + m.projectionsIn(m.sink, true, false)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, logPath, "run", "--role", "projector", "-c", cfgPath)

	converge := func(what string) {
		t.Helper()
		testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
			if err := conn.Check(); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ('orders_copy', 'customer_totals', 'customer_orders')", m.sink).Scan(&n); err != nil || n < 3 {
				return false, fmt.Sprintf("%s: the read tables are not all created yet (%v); log tail:\n%s", what, err, tail(logPath))
			}
			// The copy, the aggregate and the nested arrays (not
			// new_orders: no column is added here).
			var diffs []string
			for _, rt := range m.tables(t, m.sink, true)[:3] {
				if rt.got != rt.want {
					diffs = append(diffs, rt.name+": "+rowDiff(rt.got, rt.want, 10))
				}
			}
			return len(diffs) == 0, what + ": read tables differ from the source\n" + strings.Join(diffs, "\n") + "\nlog tail:\n" + tail(logPath)
		})
	}
	steps := func(n int) {
		t.Helper()
		for range n {
			if err := m.w.step(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	truncate := func(table string) {
		t.Helper()
		// Changes just before it, on every partition, race the t record.
		steps(60)
		if _, err := bed.MySQL.DB().ExecContext(ctx, "TRUNCATE TABLE "+table); err != nil {
			t.Fatal(err)
		}
		if table == m.o {
			m.w.live = map[int]bool{}
		}
	}
	steps(150)
	converge("before the truncates")
	if n := strings.Count(m.tables(t, m.sink, true)[0].got, "\n"); n < 20 {
		t.Fatalf("the orders copy holds %d rows before the truncate: the workload did not fill it", n)
	}
	truncate(m.o)
	converge("after TRUNCATE of the orders")
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		n := dbzTruncateRecords(t, bed.Kafka.Brokers(), dz+"."+db+".orders")
		return n == 1, fmt.Sprintf("the connector's orders topic holds %d op t records, want 1: the test did not cover a truncate", n)
	})
	d.kill9()
	steps(150)
	d.start()
	converge("orders written again after the truncate, readside killed once")
	truncate(m.c)
	converge("after TRUNCATE of the customers (a joined parent and the children's parent)")
	steps(150)
	converge("after more writes")
	if n := dbzTruncateRecords(t, bed.Kafka.Brokers(), dz+"."+db+".customers"); n != 1 {
		t.Errorf("the connector's customers topic holds %d op t records, want 1", n)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

// dbzTruncateRecords counts the op t records in a topic the connector
// writes with the JSON converter.
func dbzTruncateRecords(t *testing.T, brokers []string, topic string) int {
	t.Helper()
	n := 0
	if !eachRecordToEnd(t, brokers, topic, func(r *kgo.Record) {
		if bytes.Contains(r.Value, []byte(`"op":"t"`)) {
			n++
		}
	}) {
		t.Fatalf("%s not read to its end in 30s", topic)
	}
	return n
}
