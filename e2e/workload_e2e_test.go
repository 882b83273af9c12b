package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// change is one row change the writer made, as the tailer must report it:
// the op and the row's `seq` value (after image for c/u, before for d).
type change struct {
	op  string
	seq int64
}

// model is what the writers know they committed, per table and key. Each
// writer owns the keys congruent to its index, so per-key order is the
// writer's own commit order.
type model struct {
	mu      sync.Mutex
	changes map[string]map[string][]change // table -> key -> changes in commit order
	count   int
}

func newModel() *model { return &model{changes: map[string]map[string][]change{}} }

func (m *model) add(table, key string, c change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changes[table] == nil {
		m.changes[table] = map[string][]change{}
	}
	m.changes[table][key] = append(m.changes[table][key], c)
	m.count++
}

func (m *model) total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// workload writes seeded random transactions: inserts, updates, deletes,
// primary key moves, multi-row inserts, and rolled-back transactions (whose
// changes must never appear) to two tables, one with an integer key and
// one with a composite (int, varchar) key.
type workload struct {
	db      *sql.DB
	dbName  string
	seed    uint64
	writers int
	model   *model
	// stop ends the writers between transactions: cancelling ctx instead
	// may cut a COMMIT the server still applies, which the model would
	// then lack.
	stop atomic.Bool
	// pause is a writer's sleep before each transaction (a steady rate
	// rather than as fast as the box allows).
	pause time.Duration
}

const accountKeys = 4000

func createWorkloadTables(ctx context.Context, db *sql.DB, dbName string) error {
	for _, s := range []string{
		fmt.Sprintf("CREATE TABLE `%s`.accounts (id INT PRIMARY KEY, owner VARCHAR(40) NOT NULL, balance DECIMAL(20,2) NOT NULL, seq BIGINT NOT NULL, note TEXT)", dbName),
		fmt.Sprintf("CREATE TABLE `%s`.pairs (a INT NOT NULL, b VARCHAR(20) NOT NULL, seq BIGINT NOT NULL, v DOUBLE, PRIMARY KEY (a, b))", dbName),
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// seedFromEnv returns E2E_SEED or a fresh seed, logged so a failure can be
// replayed.
func seedFromEnv(t *testing.T) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv("E2E_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("workload seed %d (E2E_SEED=%d to replay)", seed, seed)
	return seed
}

// run writes until ctx is done or changes reaches limit.
func (w *workload) run(ctx context.Context, limit int) error {
	var wg sync.WaitGroup
	errs := make([]error, w.writers)
	for i := range w.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.writer(ctx, i, limit)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type pendingChange struct {
	table, key string
	c          change
}

func (w *workload) writer(ctx context.Context, idx, limit int) error {
	rng := rand.New(rand.NewPCG(w.seed, uint64(idx)))
	seq := int64(idx) << 40
	accounts := map[int]int64{}    // id -> seq
	pairs := map[[2]string]int64{} // (a, b) -> seq
	owned := func(id int) bool { return id%w.writers == idx }
	pickFree := func() int {
		for {
			id := rng.IntN(accountKeys)*w.writers + idx
			if _, ok := accounts[id]; !ok && owned(id) {
				return id
			}
		}
	}
	pickUsed := func() (int, bool) {
		for id := range accounts { // map order is random enough
			return id, true
		}
		return 0, false
	}
	for w.model.total() < limit {
		if ctx.Err() != nil || w.stop.Load() {
			return nil
		}
		if w.pause > 0 {
			time.Sleep(w.pause)
		}
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var pending []pendingChange
		newAccounts := map[int]int64{}
		for k, v := range accounts {
			newAccounts[k] = v
		}
		newPairs := map[[2]string]int64{}
		for k, v := range pairs {
			newPairs[k] = v
		}
		saved, savedPairs := accounts, pairs
		accounts, pairs = newAccounts, newPairs
		stmts := 1 + rng.IntN(8)
		for range stmts {
			seq++
			var err error
			switch r := rng.IntN(100); {
			case r < 30 || len(accounts) < 50:
				id := pickFree()
				_, err = tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO `%s`.accounts VALUES (?, ?, ?, ?, ?)", w.dbName), id, fmt.Sprintf("owner-%d", rng.IntN(100)), fmt.Sprintf("%d.%02d", rng.IntN(1e6), rng.IntN(100)), seq, "n")
				accounts[id] = seq
				pending = append(pending, pendingChange{"accounts", strconv.Itoa(id), change{"c", seq}})
			case r < 60:
				id, _ := pickUsed()
				_, err = tx.ExecContext(ctx, fmt.Sprintf("UPDATE `%s`.accounts SET balance = balance + 1, seq = ? WHERE id = ?", w.dbName), seq, id)
				accounts[id] = seq
				pending = append(pending, pendingChange{"accounts", strconv.Itoa(id), change{"u", seq}})
			case r < 72:
				id, _ := pickUsed()
				_, err = tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM `%s`.accounts WHERE id = ?", w.dbName), id)
				pending = append(pending, pendingChange{"accounts", strconv.Itoa(id), change{"d", accounts[id]}})
				delete(accounts, id)
			case r < 80:
				// A primary key move: a delete of the old key and a create of
				// the new one.
				id, _ := pickUsed()
				to := pickFree()
				_, err = tx.ExecContext(ctx, fmt.Sprintf("UPDATE `%s`.accounts SET id = ?, seq = ? WHERE id = ?", w.dbName), to, seq, id)
				pending = append(pending, pendingChange{"accounts", strconv.Itoa(id), change{"d", accounts[id]}},
					pendingChange{"accounts", strconv.Itoa(to), change{"c", seq}})
				delete(accounts, id)
				accounts[to] = seq
			case r < 85:
				// A multi-row insert of up to 200 rows into pairs.
				n := 1 + rng.IntN(200)
				q := fmt.Sprintf("INSERT INTO `%s`.pairs VALUES ", w.dbName)
				var args []any
				for j := range n {
					a := strconv.Itoa(rng.IntN(1000)*w.writers + idx)
					b := fmt.Sprintf("k%d-%d", seq, j)
					if j > 0 {
						q += ", "
					}
					q += "(?, ?, ?, ?)"
					args = append(args, a, b, seq, rng.Float64())
					pairs[[2]string{a, b}] = seq
					pending = append(pending, pendingChange{"pairs", a + "|" + b, change{"c", seq}})
				}
				_, err = tx.ExecContext(ctx, q, args...)
			case r < 95:
				for k := range pairs {
					_, err = tx.ExecContext(ctx, fmt.Sprintf("UPDATE `%s`.pairs SET seq = ?, v = v + 1 WHERE a = ? AND b = ?", w.dbName), seq, k[0], k[1])
					pairs[k] = seq
					pending = append(pending, pendingChange{"pairs", k[0] + "|" + k[1], change{"u", seq}})
					break
				}
			default:
				for k, s := range pairs {
					_, err = tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM `%s`.pairs WHERE a = ? AND b = ?", w.dbName), k[0], k[1])
					delete(pairs, k)
					pending = append(pending, pendingChange{"pairs", k[0] + "|" + k[1], change{"d", s}})
					break
				}
			}
			if err != nil {
				tx.Rollback()
				return fmt.Errorf("writer %d: %w", idx, err)
			}
		}
		if rng.IntN(10) == 0 {
			// Rolled back: none of it may ever be published.
			if err := tx.Rollback(); err != nil {
				return err
			}
			accounts, pairs = saved, savedPairs
			continue
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("writer %d commit: %w", idx, err)
		}
		for _, p := range pending {
			w.model.add(p.table, p.key, p.c)
		}
	}
	return nil
}
