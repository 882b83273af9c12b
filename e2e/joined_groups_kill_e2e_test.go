package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// rentalSchema is a sakila-like source: payments taken by staff (each of
// a store) for inventory items (each a copy of a film, of a category).
var rentalSchema = []string{
	"CREATE TABLE `%[1]s`.staff (staff_id INT PRIMARY KEY, store_id INT NULL)",
	"CREATE TABLE `%[1]s`.film (film_id INT PRIMARY KEY, category_id INT NULL)",
	"CREATE TABLE `%[1]s`.inventory (inventory_id INT PRIMARY KEY, film_id INT NOT NULL)",
	"CREATE TABLE `%[1]s`.payment (payment_id INT PRIMARY KEY, staff_id INT NULL, inventory_id INT NULL, amount DECIMAL(7,2) NOT NULL, payment_date DATETIME NOT NULL)",
}

// rentalProjections group payments by a joined parent's column: the
// staff member's store (and month), and the film's category two joins
// away.
const rentalProjections = `  revenue_by_store_month:
    from: %[1]s.payment
    sink: reads
    join: [{from: %[1]s.staff, on: {staff_id: staff_id}, columns: {store_id: store_id}}]
    group_by: [store_id, "bucket(payment_date, 'month')"]
    aggregates: {revenue: "sum(amount)", payments: "count(*)", last_at: "max(payment_date)"}
  sales_by_category:
    from: %[1]s.payment
    sink: reads
    join:
      - {from: %[1]s.inventory, as: i, on: {inventory_id: inventory_id}}
      - {from: %[1]s.film, via: i, on: {film_id: film_id}, columns: {category_id: category_id}}
    group_by: [category_id]
    aggregates: {revenue: "sum(amount)", payments: "count(*)", smallest: "min(amount)"}
`

func rentalExpectations(src, sink string) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	return []struct{ name, want, got string }{
		{"revenue_by_store_month",
			"SELECT s.store_id, DATE_FORMAT(p.payment_date, '%Y-%m'), SUM(p.amount), COUNT(*), MAX(p.payment_date) FROM " + q("payment") + " p JOIN " + q("staff") +
				" s ON s.staff_id = p.staff_id WHERE s.store_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
			"SELECT store_id, bucket_payment_date_month, revenue, payments, last_at FROM `" + sink + "`.revenue_by_store_month ORDER BY 1, 2"},
		{"sales_by_category",
			"SELECT f.category_id, SUM(p.amount), COUNT(*), MIN(p.amount) FROM " + q("payment") + " p JOIN " + q("inventory") + " i ON i.inventory_id = p.inventory_id JOIN " +
				q("film") + " f ON f.film_id = i.film_id WHERE f.category_id IS NOT NULL GROUP BY 1 ORDER BY 1",
			"SELECT category_id, revenue, payments, smallest FROM `" + sink + "`.sales_by_category ORDER BY 1"},
	}
}

// TestJoinedGroupsKill9Shuffled: groups from joined parents on the real
// binary, MariaDB and Kafka. A seeded history — payments changed, moved
// between staff and inventory items and deleted; staff moving store (or
// to none), films changing category, inventory moving film, parents
// deleted and re-inserted — while `readside run` is SIGKILLed at least
// three times converges to the source's GROUP BY over the joins and
// verifies EQUAL; the same history shuffled with duplicates, into a
// second sink through a projector SIGKILLed again, converges too.
func TestJoinedGroupsKill9Shuffled(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sink := sourceAndSinkDBs(t, bed, "jg")
	var stmts []string
	for _, s := range rentalSchema {
		stmts = append(stmts, fmt.Sprintf(s, src))
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	tables := []string{src + ".staff", src + ".film", src + ".inventory", src + ".payment"}
	dir := t.TempDir()
	head := bedConfigHead(bed, tables, "jg", filepath.Join(dir, "data"), sink)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(head+fmt.Sprintf(rentalProjections, src)), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	prefix := topicPrefixOf(t, head)
	waitForCheckpoint(t, bed, prefix)

	seed := seedFromEnv(t)
	target := envInt("E2E_JOINED_GROUP_CHANGES", 3_000)
	werr, changes := make(chan error, 1), make(chan int, 1)
	go func() {
		n, err := rentalWorkload(ctx, bed.MySQL.DB(), src, rand.New(rand.NewPCG(seed, 51)), target)
		changes <- n
		werr <- err
	}()
	kills := d.killWhile(rand.New(rand.NewPCG(seed, 52)), werr, 3)
	t.Logf("%d row changes, %d SIGKILLs of readside run", <-changes, kills)

	utc := utcDB(t, bed)
	waitExpected(t, utc, rentalExpectations(src, sink), logPath)
	expectReadside(t, cfgPath, "after the kills", "verify", 0, "revenue_by_store_month: EQUAL", "sales_by_category: EQUAL")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
	p, log2, sink2 := shuffledRun{seed: seed, dir: dir, prefix: prefix, src: src, sink: sink, sink2: "jg_r2", head: head,
		projections: rentalProjections, tables: []string{"staff", "film", "inventory", "payment"}}.run(t, bed)
	waitExpected(t, utc, rentalExpectations(src, sink2), log2)
	if code := p.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(log2))
	}
}

// rentalWorkload runs transactions of 1–4 random statements until target
// row changes have committed: few parents, so each moves many payments.
func rentalWorkload(ctx context.Context, db *sql.DB, src string, rng *rand.Rand, target int) (int, error) {
	st, f, inv, pay := "`"+src+"`.staff", "`"+src+"`.film", "`"+src+"`.inventory", "`"+src+"`.payment"
	orNull := func(n, max int) any {
		if rng.IntN(n) == 0 {
			return nil
		}
		return 1 + rng.IntN(max)
	}
	return randomTxns(ctx, db, rng, target, 4, func(i int) (string, []any) {
		at := time.Date(2024, time.Month(1+rng.IntN(6)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), 0, 0, time.UTC)
		switch x := rng.IntN(100); {
		case x < 45:
			return "INSERT INTO " + pay + " VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE staff_id = VALUES(staff_id), inventory_id = VALUES(inventory_id), amount = VALUES(amount)",
				[]any{1 + rng.IntN(600), orNull(15, 8), orNull(15, 20), fmt.Sprintf("%d.%02d", rng.IntN(30), rng.IntN(100)), at}
		case x < 55:
			return "DELETE FROM " + pay + " WHERE payment_id = ?", []any{1 + rng.IntN(600)}
		case x < 70:
			return "INSERT INTO " + st + " VALUES (?, ?) ON DUPLICATE KEY UPDATE store_id = VALUES(store_id)", []any{1 + rng.IntN(8), orNull(8, 3)}
		case x < 73:
			return "DELETE FROM " + st + " WHERE staff_id = ?", []any{1 + rng.IntN(8)}
		case x < 85:
			return "INSERT INTO " + f + " VALUES (?, ?) ON DUPLICATE KEY UPDATE category_id = VALUES(category_id)", []any{1 + rng.IntN(6), orNull(8, 4)}
		case x < 87:
			return "DELETE FROM " + f + " WHERE film_id = ?", []any{1 + rng.IntN(6)}
		case x < 98:
			return "INSERT INTO " + inv + " VALUES (?, ?) ON DUPLICATE KEY UPDATE film_id = VALUES(film_id)", []any{1 + rng.IntN(20), 1 + rng.IntN(6)}
		default:
			return "DELETE FROM " + inv + " WHERE inventory_id = ?", []any{1 + rng.IntN(20)}
		}
	})
}
