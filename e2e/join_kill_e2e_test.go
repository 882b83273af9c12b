package e2e

import (
	"context"
	"database/sql"
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

// TestDaemonKill9JoinsShardsScaleOut is issue 4's acceptance workload on
// the real binary: a seeded random workload of E2E_JOIN_CHANGES (default
// 50,000 in `make test`; `make soak` runs issue 4's 200,000, which took 7
// minutes of the suite's budget on the loaded box) row changes — customers renamed, re-tiered, deleted and
// re-created; orders created before their customers, moved between
// customers, in and out of draft, deleted and re-created; a sysbench-like
// table re-keyed by a column every update changes — while `readside run`
// is SIGKILLed at least five times and a second process (`--role
// projector`) joins and leaves the consumer groups. The sink has two
// shards. At the end orders_by_customer equals the SQL LEFT JOIN on the
// source and sbtest_by_k equals the source, row by row over both shards.
func TestDaemonKill9JoinsShardsScaleOut(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "shopk")
	if err != nil {
		t.Fatal(err)
	}
	var shards [2]string
	for i := range shards {
		if shards[i], err = bed.MySQL.CreateDatabase(ctx, "readk"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testbed.CreateShop(ctx, bed.MySQL, src); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix := "jk" + strconv.Itoa(rand.IntN(1e6))
	config := func(instance string) string {
		path := filepath.Join(dir, instance+".yaml")
		cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %[1]d
  tables: [%[2]s.customers, %[2]s.orders, %[2]s.sbtest]
kafka:
  brokers: [%[3]s]
  topic_prefix: %[4]s
  partitions: 4
  group_instance_id: %[5]s
sinks:
  reads:
    shards:
      - {keyrange: "-80", dsn: "${SINK_DSN}%[6]s"}
      - {keyrange: "80-", dsn: "${SINK_DSN}%[7]s"}
projections:
  orders_by_customer:
    from: %[2]s.orders
    sink: reads
    key: [customer_id, id]
    shard_by: customer_id
    columns: {id: id, customer_id: customer_id, status: status, total_cents: total_cents}
    where: "status <> 'draft'"
    join:
      - from: %[2]s.customers
        on: {id: customer_id}
        columns: {customer_name: name, customer_tier: tier}
  sbtest_by_k:
    from: %[2]s.sbtest
    sink: reads
    key: [k, id]
    shard_by: k
    columns: {k: k, id: id, c: c}
`, testbed.NewServerID(), src, strings.Join(bed.Kafka.Brokers(), ", "), prefix, instance, shards[0], shards[1])
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	t.Setenv("SINK_DSN", bed.MySQL.AdminDSN())
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	a := startDaemon(t, logA, "run", "-c", config("a"))
	waitForCheckpoint(t, bed, prefix)

	seed := seedFromEnv(t)
	target := envInt("E2E_JOIN_CHANGES", 50_000)
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	werr := make(chan error, 1)
	changes := make(chan int, 1)
	go func() {
		n, err := shopWorkload(wctx, bed.MySQL.DB(), src, rand.New(rand.NewPCG(seed, 11)), target)
		changes <- n
		werr <- err
	}()

	// The second worker joins and leaves the groups while A is killed.
	bctx, stopB := context.WithCancel(ctx)
	bdone := make(chan int, 1)
	go func() {
		rng := rand.New(rand.NewPCG(seed, 12))
		var b *daemon
		joins := 0
		for bctx.Err() == nil {
			select {
			case <-bctx.Done():
			case <-time.After(time.Duration(2000+rng.IntN(3000)) * time.Millisecond):
			}
			if bctx.Err() != nil {
				break
			}
			if b == nil || !b.running() {
				if b == nil {
					b = &daemon{t: t, args: []string{"run", "--role", "projector", "-c", config("b")}, logPath: logB}
				}
				b.start()
				joins++
				continue
			}
			if err := b.leave(30 * time.Second); err != nil {
				t.Errorf("second worker: %v", err)
			}
		}
		if b != nil && b.running() {
			if err := b.leave(30 * time.Second); err != nil {
				t.Errorf("second worker: %v", err)
			}
		}
		bdone <- joins
	}()
	kills := a.killWhile(rand.New(rand.NewPCG(seed, 13)), werr, 5)
	stopB()
	joins := <-bdone
	t.Logf("%d row changes, %d SIGKILLs of readside run, the second worker joined %d times", <-changes, kills, joins)

	union := func(table, cols, order string) string {
		return "SELECT " + cols + " FROM (SELECT * FROM `" + shards[0] + "`." + table + " UNION ALL SELECT * FROM `" + shards[1] + "`." + table + ") u ORDER BY " + order
	}
	checks := []struct{ name, want, got string }{
		{"orders_by_customer",
			"SELECT o.customer_id, o.id, o.status, o.total_cents, c.name, c.tier FROM `" + src + "`.orders o LEFT JOIN `" + src + "`.customers c ON c.id = o.customer_id WHERE o.status <> 'draft' ORDER BY 1, 2",
			union("orders_by_customer", "customer_id, id, status, total_cents, customer_name, customer_tier", "1, 2")},
		{"sbtest_by_k", "SELECT k, id, c FROM `" + src + "`.sbtest ORDER BY 1, 2", union("sbtest_by_k", "k, id, c", "1, 2")},
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, c := range checks {
		for {
			want, got := testbed.RowsText(t, bed.MySQL.DB(), c.want), testbed.RowsText(t, bed.MySQL.DB(), c.got)
			if want == got {
				t.Logf("%s equals the SQL expectation over two shards: %d rows", c.name, strings.Count(want, "\n"))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s differs from the SQL expectation after 3 minutes:\nwant %d rows, got %d\nlog tail:\n%s", c.name,
					strings.Count(want, "\n"), strings.Count(got, "\n"), tail(logA))
			}
			time.Sleep(time.Second)
		}
	}
	if code := a.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logA))
	}
}

// leave stops the process with SIGTERM (a clean leave from the group) and
// reports instead of failing, so it can run off the test goroutine.
func (d *daemon) leave(timeout time.Duration) error {
	code, err := d.term(context.Background(), timeout)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(d.logPath))
	}
	return err
}

// shopWorkload runs transactions of 1–6 random statements until target
// row changes have committed (rows the binlog carries: inserted, deleted,
// or actually changed).
func shopWorkload(ctx context.Context, db *sql.DB, src string, rng *rand.Rand, target int) (int, error) {
	c, o, s := "`"+src+"`.customers", "`"+src+"`.orders", "`"+src+"`.sbtest"
	statuses := []string{"draft", "new", "paid", "shipped"}
	tiers := []any{"free", "pro", "vip", nil}
	return randomTxns(ctx, db, rng, target, 6, func(i int) (string, []any) {
		cid, oid, sid := 1+rng.IntN(300), 1+rng.IntN(4000), 1+rng.IntN(6000)
		var q string
		var args []any
		switch r := rng.IntN(100); {
		case r < 8:
			q, args = "INSERT INTO "+c+" VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), tier = VALUES(tier)", []any{cid, fmt.Sprintf("c%d-%d", cid, i), tiers[rng.IntN(4)]}
		case r < 14:
			q, args = "UPDATE "+c+" SET name = ?, tier = ? WHERE id = ?", []any{fmt.Sprintf("renamed %d", i), tiers[rng.IntN(4)], cid}
		case r < 16:
			q, args = "DELETE FROM "+c+" WHERE id = ?", []any{cid}
		case r < 34:
			q, args = "INSERT INTO "+o+" VALUES (?, ?, ?, ?, '2026-01-01 00:00:00') ON DUPLICATE KEY UPDATE total_cents = total_cents + 1", []any{oid, cid, statuses[rng.IntN(4)], rng.IntN(100000)}
		case r < 44:
			q, args = "UPDATE "+o+" SET status = ? WHERE id = ?", []any{statuses[rng.IntN(4)], oid}
		case r < 52:
			q, args = "UPDATE "+o+" SET customer_id = ? WHERE id = ?", []any{cid, oid}
		case r < 56:
			q, args = "UPDATE "+o+" SET total_cents = total_cents + 3 WHERE customer_id = ?", []any{cid}
		case r < 60:
			q, args = "DELETE FROM "+o+" WHERE id = ?", []any{oid}
		case r < 75:
			q, args = "INSERT INTO "+s+" VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE k = k + 1", []any{sid, rng.IntN(1000), fmt.Sprintf("c-%d-%d", sid, i), "pad"}
		case r < 93:
			q, args = "UPDATE "+s+" SET k = k + 1 WHERE id = ?", []any{sid} // every update a key move
		case r < 97:
			q, args = "UPDATE "+s+" SET c = ? WHERE id = ?", []any{fmt.Sprintf("c-%d", i), sid}
		default:
			q, args = "DELETE FROM "+s+" WHERE id = ?", []any{sid}
		}
		return q, args
	})
}

// randomTxns runs transactions of 1–maxStmts statements, each the one
// next picks for transaction i, until target row changes have committed
// (rows the binlog carries: inserted, deleted, or actually changed) or ctx
// ends.
func randomTxns(ctx context.Context, db *sql.DB, rng *rand.Rand, target, maxStmts int, next func(i int) (string, []any)) (int, error) {
	done := 0
	for i := 0; done < target; i++ {
		if ctx.Err() != nil {
			return done, nil
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return done, err
		}
		n := 0
		for range 1 + rng.IntN(maxStmts) {
			q, args := next(i)
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				_ = tx.Rollback()
				if ctx.Err() != nil {
					return done, nil
				}
				return done, fmt.Errorf("%s: %w", q, err)
			}
			k, _ := res.RowsAffected()
			if strings.Contains(q, "ON DUPLICATE") && k == 2 {
				k = 1 // an upsert that updated: one row change
			}
			n += int(k)
		}
		if err := tx.Commit(); err != nil {
			if ctx.Err() != nil {
				return done, nil
			}
			return done, err
		}
		done += n
	}
	return done, nil
}
