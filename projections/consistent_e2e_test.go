package projections_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// The ledger: accounts and the transfers between them. Every source
// transaction moves money between accounts and records each move in
// transfers, so at every committed state of the source
//   - the balances sum to accounts × 1000, and
//   - each balance is 1000 plus what its account received, less what it
//     sent, by the transfers — held in two more read tables, aggregates
//     of transfers per receiving and per sending account.
//
// Each transfer also has a kind, and each kind a group with a label; now
// and then a transaction relabels a group or moves a kind to another group.
// transfers_labeled carries each transfer's group and label through a join
// and a join hanging off it (`via`), so at every committed state of the
// source
//   - a transfer's group is its kind's group in kinds, and its label that
//     group's label in kgroups (a relabelling reaches every transfer below
//     the group in the same state).
//
// Two more read tables hold what the ledger has under a key that moves and
// under a filter: tiers keys each account by its balance's hundreds (an
// account moves key when its balance crosses one: a delete and an insert),
// and big holds the transfers of 25 or more (where). So at every committed
// state
//   - each account is in tiers exactly once, under its balance's tier,
//     with its balance, and
//   - big holds exactly the transfers of 25 or more.
//
// A reader of the read tables that sees anything else sees a state the
// source never had.
const ledgerAccounts = 40

// ledgerKinds and ledgerGroups: the kinds of transfer, and their groups.
const ledgerKinds, ledgerGroups = 10, 4

// ledgerConfig declares the ledger's projections on the sink "ledger", a
// database of its own on sinkServer.
func ledgerConfig(t *testing.T, bed *testbed.Bed, consistency config.Consistency, sinkServer *testbed.MySQL) (cfg config.Config, src, sinkDB string) {
	t.Helper()
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "bank")
	if err != nil {
		t.Fatal(err)
	}
	if sinkDB, err = sinkServer.CreateDatabase(ctx, "ledger"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+src+"`.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
		"CREATE TABLE `"+src+"`.transfers (id BIGINT AUTO_INCREMENT PRIMARY KEY, from_id INT NOT NULL, to_id INT NOT NULL, amount BIGINT NOT NULL, memo VARCHAR(8) NULL, kind_id INT NULL)",
		"CREATE TABLE `"+src+"`.kinds (id INT PRIMARY KEY, group_id INT NOT NULL)",
		"CREATE TABLE `"+src+"`.kgroups (id INT PRIMARY KEY, label VARCHAR(16) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg = bed.Config("c", src+".accounts", src+".transfers", src+".kinds", src+".kgroups")
	cfg.Sinks = map[string]config.Sink{"ledger": {DSN: config.Secret(sinkServer.AdminDSN() + sinkDB), Consistency: consistency}}
	cfg.Projections = map[string]config.Projection{
		"accounts": {From: src + ".accounts", Sink: "ledger", Key: []string{"id"}, Columns: map[string]string{"id": "id", "balance": "balance"}},
		"transfers": {From: src + ".transfers", Sink: "ledger", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "from_id": "from_id", "to_id": "to_id", "amount": "amount", "memo": "memo"}},
		"received": {From: src + ".transfers", Sink: "ledger", GroupBy: []string{"to_id"}, Aggregates: map[string]string{"amount": "sum(amount)", "n": "count(*)"}},
		"sent":     {From: src + ".transfers", Sink: "ledger", GroupBy: []string{"from_id"}, Aggregates: map[string]string{"amount": "sum(amount)", "n": "count(*)"}},
		"tiers": {From: src + ".accounts", Sink: "ledger", Key: []string{"tier", "id"},
			Columns: map[string]string{"tier": "balance DIV 100", "id": "id", "balance": "balance"}},
		"big": {From: src + ".transfers", Sink: "ledger", Key: []string{"id"}, Where: "amount >= 25",
			Columns: map[string]string{"id": "id", "amount": "amount"}},
		"kinds":   {From: src + ".kinds", Sink: "ledger", Key: []string{"id"}, Columns: map[string]string{"id": "id", "group_id": "group_id"}},
		"kgroups": {From: src + ".kgroups", Sink: "ledger", Key: []string{"id"}, Columns: map[string]string{"id": "id", "label": "label"}},
		"transfers_labeled": {From: src + ".transfers", Sink: "ledger", Key: []string{"id"}, Columns: map[string]string{"id": "id", "kind_id": "kind_id"},
			Join: []config.Join{
				{From: src + ".kinds", As: "k", On: map[string]string{"id": "kind_id"}, Columns: map[string]string{"group_id": "group_id"}},
				{From: src + ".kgroups", Via: "k", On: map[string]string{"id": "group_id"}, Columns: map[string]string{"label": "label"}},
			}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg, src, sinkDB
}

// ledgerTables compiles the projections and creates their read tables.
func ledgerTables(t *testing.T, bed *testbed.Bed, cfg config.Config) (*sinks.Sharded, []*projections.Projection) {
	t.Helper()
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(t.Context(), "ledger", cfg.Sinks["ledger"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	for _, p := range ps {
		cols, err := p.SourceColumns(t.Context(), bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		// What the daemon's planning sets: how the applier learns a
		// widened source column (schema following).
		p.SourceTypes = func(ctx context.Context) (projections.Types, error) { return p.SourceColumns(ctx, bed.MySQL.DB()) }
		if err := sink.Exec(t.Context(), sinks.DDL(p, cols)); err != nil {
			t.Fatal(err)
		}
	}
	return sink, ps
}

// ledgerWorkload opens the accounts in one transaction, then runs transfer
// transactions of 1–4 moves until ctx ends or n transactions committed;
// one in 50 is a batch of 500 moves (several chunks of the applier).
func ledgerWorkload(ctx context.Context, db *sql.DB, src string, seed uint64, n int) (int, error) {
	rng := rand.New(rand.NewPCG(seed, 7))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	for id := 1; id <= ledgerAccounts; id++ {
		if _, err := tx.ExecContext(ctx, "INSERT INTO `"+src+"`.accounts VALUES (?, 1000)", id); err != nil {
			tx.Rollback()
			return 0, err
		}
	}
	for id := 1; id <= max(ledgerKinds, ledgerGroups); id++ {
		var q []string
		if id <= ledgerKinds {
			q = append(q, fmt.Sprintf("INSERT INTO `%s`.kinds VALUES (%d, %d)", src, id, 1+id%ledgerGroups))
		}
		if id <= ledgerGroups {
			q = append(q, fmt.Sprintf("INSERT INTO `%s`.kgroups VALUES (%d, 'g%d')", src, id, id))
		}
		for _, q := range q {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				tx.Rollback()
				return 0, err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	done := 0
	for ; done < n && ctx.Err() == nil; done++ {
		moves := 1 + rng.IntN(4)
		if rng.IntN(50) == 0 {
			moves = 500
		}
		if rng.IntN(25) == 0 {
			// A relabelling or a kind moved to another group: fans out
			// to every transfer below it through the joins.
			q := fmt.Sprintf("UPDATE `%s`.kgroups SET label = 'g%d-%d' WHERE id = %d", src, 1+rng.IntN(ledgerGroups), done, 1+rng.IntN(ledgerGroups))
			if rng.IntN(2) == 0 {
				q = fmt.Sprintf("UPDATE `%s`.kinds SET group_id = %d WHERE id = %d", src, 1+rng.IntN(ledgerGroups), 1+rng.IntN(ledgerKinds))
			}
			if _, err := db.ExecContext(ctx, q); err != nil {
				return done, err
			}
			continue
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return done, err
		}
		for range moves {
			from, to, amount := 1+rng.IntN(ledgerAccounts), 1+rng.IntN(ledgerAccounts), 1+rng.IntN(50)
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{"UPDATE `" + src + "`.accounts SET balance = balance - ? WHERE id = ?", []any{amount, from}},
				{"UPDATE `" + src + "`.accounts SET balance = balance + ? WHERE id = ?", []any{amount, to}},
				{"INSERT INTO `" + src + "`.transfers (from_id, to_id, amount, kind_id) VALUES (?, ?, ?, ?)", []any{from, to, amount, 1 + rng.IntN(ledgerKinds)}},
			} {
				if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
					tx.Rollback()
					return done, err
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return done, err
		}
	}
	return done, nil
}

// ledgerCheck reads the four read tables in one REPEATABLE READ
// transaction and returns what in them no source state had ("" if
// nothing), and the frontier's checkpoint offset it read with them (-1
// without one).
func ledgerCheck(ctx context.Context, db *sql.DB, sinkDB string, withFrontier bool) (string, int64, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return "", 0, err
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return "", 0, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	sums := func(q string) (map[int]int64, error) {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[int]int64{}
		for rows.Next() {
			var id int
			var v int64
			if err := rows.Scan(&id, &v); err != nil {
				return nil, err
			}
			out[id] = v
		}
		return out, rows.Err()
	}
	d := "`" + sinkDB + "`."
	balances, err := sums("SELECT id, balance FROM " + d + "accounts")
	if err != nil {
		return "", 0, err
	}
	received, err := sums("SELECT to_id, amount FROM " + d + "received")
	if err != nil {
		return "", 0, err
	}
	sent, err := sums("SELECT from_id, amount FROM " + d + "sent")
	if err != nil {
		return "", 0, err
	}
	in, err := sums("SELECT to_id, SUM(amount) FROM " + d + "transfers GROUP BY to_id")
	if err != nil {
		return "", 0, err
	}
	labels, err := joinedLabels(ctx, conn, d)
	if err != nil {
		return "", 0, err
	}
	moved, err := movedAndFiltered(ctx, conn, d)
	if err != nil {
		return "", 0, err
	}
	frontier := int64(-1)
	if withFrontier {
		err := conn.QueryRowContext(ctx, "SELECT checkpoint_offset FROM "+d+"`_readside_frontier` WHERE sink = 'ledger'").Scan(&frontier)
		if err != nil && err != sql.ErrNoRows {
			return "", 0, err
		}
	}
	var why []string
	if len(balances) != 0 && len(balances) != ledgerAccounts {
		why = append(why, fmt.Sprintf("%d of the %d accounts opened in one transaction", len(balances), ledgerAccounts))
	}
	var total int64
	for id, b := range balances {
		total += b
		if want := 1000 + received[id] - sent[id]; b != want {
			why = append(why, fmt.Sprintf("account %d: balance %d, but 1000 + received %d - sent %d = %d", id, b, received[id], sent[id], want))
		}
		if received[id] != in[id] {
			why = append(why, fmt.Sprintf("account %d: the aggregate received %d, the transfers table %d", id, received[id], in[id]))
		}
	}
	if len(balances) > 0 && total != 1000*ledgerAccounts {
		why = append(why, fmt.Sprintf("the balances sum to %d, not %d", total, 1000*ledgerAccounts))
	}
	why = append(why, labels...)
	why = append(why, moved...)
	if len(why) > 3 {
		why = append(why[:3], fmt.Sprintf("and %d more", len(why)-3))
	}
	return strings.Join(why, "; "), frontier, nil
}

// joinedLabels checks transfers_labeled against kinds and kgroups in the
// reader's snapshot (d: the sink database, quoted, with its dot): each
// transfer's group and label through the joins are its kind's group and
// that group's label.
func joinedLabels(ctx context.Context, conn *sql.Conn, d string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT t.id, COALESCE(t.group_id, -1), COALESCE(t.label, ''), COALESCE(k.group_id, -1), COALESCE(g.label, '')"+
		" FROM "+d+"transfers_labeled t LEFT JOIN "+d+"kinds k ON k.id = t.kind_id LEFT JOIN "+d+"kgroups g ON g.id = k.group_id"+
		" WHERE NOT (t.group_id <=> k.group_id AND t.label <=> g.label) LIMIT 3")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var why []string
	for rows.Next() {
		var id, group, kindGroup int64
		var label, groupLabel string
		if err := rows.Scan(&id, &group, &label, &kindGroup, &groupLabel); err != nil {
			return nil, err
		}
		why = append(why, fmt.Sprintf("transfer %d: joined group %d label %q, but its kind is in group %d labelled %q", id, group, label, kindGroup, groupLabel))
	}
	return why, rows.Err()
}

// movedAndFiltered checks tiers and big against accounts and transfers in
// the reader's snapshot (d: the sink database, quoted, with its dot).
func movedAndFiltered(ctx context.Context, conn *sql.Conn, d string) ([]string, error) {
	var why []string
	var accounts, tiers, misplaced, big, bigWant, small int
	for _, c := range []struct {
		q    string
		into *int
	}{
		{"SELECT COUNT(*) FROM " + d + "accounts", &accounts},
		{"SELECT COUNT(*) FROM " + d + "tiers", &tiers},
		{"SELECT COUNT(*) FROM " + d + "accounts a LEFT JOIN " + d + "tiers t ON t.id = a.id AND t.balance = a.balance AND t.tier = a.balance DIV 100 WHERE t.id IS NULL", &misplaced},
		{"SELECT COUNT(*) FROM " + d + "big", &big},
		{"SELECT COUNT(*) FROM " + d + "transfers WHERE amount >= 25", &bigWant},
		{"SELECT COUNT(*) FROM " + d + "big b LEFT JOIN " + d + "transfers t ON t.id = b.id AND t.amount = b.amount WHERE t.id IS NULL OR t.amount < 25", &small},
	} {
		if err := conn.QueryRowContext(ctx, c.q).Scan(c.into); err != nil {
			return nil, err
		}
	}
	if tiers != accounts || misplaced > 0 {
		why = append(why, fmt.Sprintf("tiers (keyed by the balance's hundreds) holds %d rows for %d accounts, %d accounts not under their balance's tier", tiers, accounts, misplaced))
	}
	if big != bigWant || small > 0 {
		why = append(why, fmt.Sprintf("big (where amount >= 25) holds %d rows, %d of them not such a transfer, for %d transfers of 25 or more", big, small, bigWant))
	}
	return why, nil
}

// ledgerReaders run the check over and over until stop, and count the
// snapshots read and those holding a state the source never had.
type ledgerReaders struct {
	snapshots, torn atomic.Int64
	// viaTorn, movedTorn, filteredTorn: torn snapshots in the labels
	// joined through via, in tiers (a key that moves), in big (where).
	viaTorn, movedTorn, filteredTorn atomic.Int64
	mu                               sync.Mutex
	first                            []string
	backwards                        atomic.Int64
	// outages: errors are expected (the sink server goes away), counted
	// in failed instead of failing the test.
	outages bool
	failed  atomic.Int64
}

func (r *ledgerReaders) run(ctx context.Context, t *testing.T, db *sql.DB, sinkDB string, withFrontier bool, readers int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			last := int64(-1)
			for ctx.Err() == nil {
				why, frontier, err := ledgerCheck(ctx, db, sinkDB, withFrontier)
				if err != nil {
					r.failed.Add(1)
					if ctx.Err() == nil && !r.outages && !strings.Contains(err.Error(), "doesn't exist") {
						t.Errorf("reader: %v", err)
					}
					time.Sleep(20 * time.Millisecond)
					continue
				}
				r.snapshots.Add(1)
				if frontier < last {
					r.backwards.Add(1)
				}
				last = frontier
				if why != "" {
					r.torn.Add(1)
					for part, n := range map[string]*atomic.Int64{"joined group": &r.viaTorn, "tiers (keyed": &r.movedTorn, "big (where": &r.filteredTorn} {
						if strings.Contains(why, part) {
							n.Add(1)
						}
					}
					r.mu.Lock()
					if len(r.first) < 3 {
						r.first = append(r.first, why)
					}
					r.mu.Unlock()
				}
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// TestConsistentSinkShowsOnlySourceStates: readers read the ledger's four
// read tables in one REPEATABLE READ transaction while transfers run.
// Under consistency: transaction no snapshot ever holds a state the
// source never had, and the frontier never moves back, while the applier
// is stopped and started again twice and a zombie applier runs beside it;
// under row (the control, with one
// projector per projection) the same readers see torn states. Both end
// equal to the source.
func TestConsistentSinkShowsOnlySourceStates(t *testing.T) {
	bed := testbed.Get(t)
	for _, mode := range []config.Consistency{config.ConsistencyTransaction, config.ConsistencyRow} {
		t.Run(string(mode), func(t *testing.T) {
			cfg, src, sinkDB := ledgerConfig(t, bed, mode, bed.MySQL)
			sink, ps := ledgerTables(t, bed, cfg)
			runTailer(t, bed, cfg)
			var readers ledgerReaders
			stopReaders := readers.run(t.Context(), t, bed.MySQL.DB(), sinkDB, mode.Transactional(), 3)
			start := func() (stop func()) {
				if mode.Transactional() {
					return startApplier(t, cfg, sink, ps)
				}
				return startProjectors(t, ps, sink, cfg.Kafka.Brokers)
			}
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			wrote := make(chan int, 1)
			go func() {
				n, err := ledgerWorkload(ctx, bed.MySQL.DB(), src, seed, 600)
				if err != nil && ctx.Err() == nil {
					t.Errorf("workload: %v", err)
				}
				wrote <- n
			}()
			stop := start()
			if mode.Transactional() {
				// A second applier in a group of its own: a zombie that
				// never learns it lost its membership. Only the frontier
				// lock keeps the two from moving the frontier back.
				defer startApplierIn(t, cfg, sink, ps, "zombie-"+cfg.Kafka.TopicPrefix)()
			}
			for range 2 {
				time.Sleep(2 * time.Second)
				stop()
				stop = start()
			}
			n := <-wrote
			if mode.Transactional() {
				readYourWrites(t, bed, cfg, src, sinkDB)
			}
			waitLedgerEqual(t, bed.MySQL, src, sinkDB, bed.MySQL)
			stop()
			stopReaders()
			t.Logf("%s: %d transfer transactions; %d snapshots read, %d torn (in the labels joined through via %d, in the key that moves %d, in the filtered table %d; first: %q), frontier backwards %d times",
				mode, n, readers.snapshots.Load(), readers.torn.Load(), readers.viaTorn.Load(), readers.movedTorn.Load(), readers.filteredTorn.Load(), readers.first, readers.backwards.Load())
			if readers.snapshots.Load() < 50 {
				t.Errorf("only %d snapshots read: the check saw too little to say anything", readers.snapshots.Load())
			}
			if mode.Transactional() {
				if readers.torn.Load() > 0 || readers.backwards.Load() > 0 {
					t.Errorf("consistency: transaction showed %d torn snapshots (%q) and moved its frontier back %d times", readers.torn.Load(), readers.first, readers.backwards.Load())
				}
			} else if readers.torn.Load() == 0 {
				t.Errorf("the control: row mode showed no torn state in %d snapshots, so the check cannot see one", readers.snapshots.Load())
			}
		})
	}
}

// TestConsistentSinkThroughFaults: the ledger on a sink server of its
// own, under consistency: transaction, while the sink server is killed
// (SIGKILL: InnoDB recovers what was committed) and restarted, and then
// the broker is restarted. No reader ever sees a state the source never
// had, the frontier never moves back, and the read tables end equal to
// the source with no restart of the applier.
func TestConsistentSinkThroughFaults(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	server, err := testbed.StartMariaDB(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	cfg, src, sinkDB := ledgerConfig(t, bed, config.ConsistencyTransaction, server)
	sink, ps := ledgerTables(t, bed, cfg)
	runTailer(t, bed, cfg)
	readers := ledgerReaders{outages: true}
	stopReaders := readers.run(ctx, t, server.DB(), sinkDB, true, 2)
	stop := startApplier(t, cfg, sink, ps)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	wctx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	wrote := make(chan int, 1)
	go func() {
		n, err := ledgerWorkload(wctx, bed.MySQL.DB(), src, seed, 500)
		if err != nil && wctx.Err() == nil {
			t.Errorf("workload: %v", err)
		}
		wrote <- n
	}()
	time.Sleep(3 * time.Second)
	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := server.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	switch err := bed.Kafka.Restart(ctx, 0); {
	case errors.Is(err, testbed.ErrNotControllable):
		t.Log("the broker is not the test bed's to restart: the sink outage only")
	case err != nil:
		t.Fatal(err)
	}
	n := <-wrote
	waitLedgerEqual(t, server, src, sinkDB, bed.MySQL)
	stop()
	stopReaders()
	t.Logf("%d transfer transactions; %d snapshots read (%d failed during the outage), %d torn (first: %q), frontier backwards %d times",
		n, readers.snapshots.Load(), readers.failed.Load(), readers.torn.Load(), readers.first, readers.backwards.Load())
	if readers.torn.Load() > 0 || readers.backwards.Load() > 0 {
		t.Errorf("%d torn snapshots (%q), the frontier moved back %d times", readers.torn.Load(), readers.first, readers.backwards.Load())
	}
	if readers.snapshots.Load() < 50 {
		t.Errorf("only %d snapshots read", readers.snapshots.Load())
	}
}

// readYourWrites: after each of a few transfers, /wait?sink= (the
// collector's WaitSink) returns once the sink shows it, in every read
// table at once: the transfer and both aggregates that count it.
func readYourWrites(t *testing.T, bed *testbed.Bed, cfg config.Config, src, sinkDB string) {
	t.Helper()
	ctx := t.Context()
	col, err := httpapi.NewCollector(httpapi.Options{Brokers: cfg.Kafka.Brokers}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	cs := httpapi.ConsistentSink{Name: "ledger", Shards: []httpapi.SinkDSN{{Name: "ledger", DSN: cfg.Sinks["ledger"].DSN.Reveal()}}}
	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 10 {
		// A transfer like the workload's, so the readers' invariants hold.
		var id int64
		for _, q := range []string{"BEGIN", "UPDATE `" + src + "`.accounts SET balance = balance - ? WHERE id = 1",
			"UPDATE `" + src + "`.accounts SET balance = balance + ? WHERE id = 2",
			"INSERT INTO `" + src + "`.transfers (from_id, to_id, amount) VALUES (1, 2, ?)", "COMMIT"} {
			var args []any
			if strings.Contains(q, "?") {
				args = append(args, 1000+i)
			}
			res, err := conn.ExecContext(ctx, q, args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(q, "INSERT") {
				id, _ = res.LastInsertId()
			}
		}
		gtid, err := bed.MySQL.LastGTID(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		waiting, err := col.WaitSink(wctx, cs, gtid)
		cancel()
		if err != nil {
			t.Fatalf("/wait?sink=ledger&gtid=%s: %v (%s)", gtid, err, waiting)
		}
		var seen int
		q := "SELECT COUNT(*) FROM `" + sinkDB + "`.transfers WHERE id = ? AND amount = ?"
		if err := bed.MySQL.DB().QueryRowContext(ctx, q, id, 1000+i).Scan(&seen); err != nil {
			t.Fatal(err)
		}
		if seen != 1 {
			t.Fatalf("transfer %d (gtid %s) is not in the read table after /wait?sink= answered", id, gtid)
		}
	}
}

// TestConsistentSinkFollowsSchema: a source DDL widens a projected column
// while transfers run, and transfers with longer values follow. The sink
// refuses the first of them; the applier rolls the commit back, widens the
// read column (DDL commits implicitly in MySQL, so never inside a commit)
// and commits the cut again. Readers never see a torn state; the read
// tables end equal to the source, long values included.
func TestConsistentSinkFollowsSchema(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	cfg, src, sinkDB := ledgerConfig(t, bed, config.ConsistencyTransaction, bed.MySQL)
	sink, ps := ledgerTables(t, bed, cfg)
	runTailer(t, bed, cfg)
	var readers ledgerReaders
	stopReaders := readers.run(ctx, t, bed.MySQL.DB(), sinkDB, true, 2)
	stop := startApplier(t, cfg, sink, ps)
	if _, err := ledgerWorkload(ctx, bed.MySQL.DB(), src, rand.Uint64(), 100); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.transfers MODIFY memo VARCHAR(64) NULL"); err != nil {
		t.Fatal(err)
	}
	memo := strings.Repeat("wide memo ", 4)
	for i := range 20 {
		tx, err := bed.MySQL.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"UPDATE `" + src + "`.accounts SET balance = balance - 5 WHERE id = ?", []any{1 + i%ledgerAccounts}},
			{"UPDATE `" + src + "`.accounts SET balance = balance + 5 WHERE id = ?", []any{1 + (i+7)%ledgerAccounts}},
			{"INSERT INTO `" + src + "`.transfers (from_id, to_id, amount, memo) VALUES (?, ?, 5, ?)", []any{1 + i%ledgerAccounts, 1 + (i+7)%ledgerAccounts, memo}},
		} {
			if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	waitLedgerEqual(t, bed.MySQL, src, sinkDB, bed.MySQL)
	stop()
	stopReaders()
	t.Logf("%d snapshots read, %d torn (first: %q), frontier backwards %d times", readers.snapshots.Load(), readers.torn.Load(), readers.first, readers.backwards.Load())
	if readers.torn.Load() > 0 || readers.backwards.Load() > 0 {
		t.Errorf("%d torn snapshots, the frontier moved back %d times", readers.torn.Load(), readers.backwards.Load())
	}
}

// TestConsistentSinkCommitsWithoutRestarts: one applier alone, no fault.
// Each commit starts from the frontier the one before it landed, while
// that one's COMMIT may still be in flight, so none is rolled back: a
// commit that expected an older frontier fails with ErrFrontierMoved and
// the session starts again from the stored one. The read tables converge
// either way; only the count of rolled-back commits shows it.
func TestConsistentSinkCommitsWithoutRestarts(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := ledgerConfig(t, bed, config.ConsistencyTransaction, bed.MySQL)
	sink, ps := ledgerTables(t, bed, cfg)
	runTailer(t, bed, cfg)
	reg := prometheus.NewRegistry()
	stop := startApplierMetered(t, cfg, sink, ps, event.SinkGroup(cfg.Kafka.TopicPrefix, "ledger"), projector.NewConsistentMetrics(reg))
	n, err := ledgerWorkload(t.Context(), bed.MySQL.DB(), src, rand.Uint64(), 300)
	if err != nil {
		t.Fatal(err)
	}
	waitLedgerEqual(t, bed.MySQL, src, sinkDB, bed.MySQL)
	// The applier may meet the whole workload at once when it starts late
	// on a loaded box and land it in one or two commits; transfers each
	// waited for make every one of them a commit that follows another.
	// A transfer of 0 moves no balance.
	for range 5 {
		if _, err := bed.MySQL.DB().ExecContext(t.Context(), "INSERT INTO `"+src+"`.transfers (from_id, to_id, amount, kind_id) VALUES (1, 2, 0, 1)"); err != nil {
			t.Fatal(err)
		}
		n++
		waitLedgerEqual(t, bed.MySQL, src, sinkDB, bed.MySQL)
	}
	stop()
	commits, failures := counterSum(t, reg, "readside_sink_commits_total"), counterSum(t, reg, "readside_sink_commit_failures_total")
	t.Logf("%d source transactions: %.0f commits, %.0f rolled back", n, commits, failures)
	if commits < 5 {
		t.Errorf("only %.0f commits: too few to show that each follows the one before", commits)
	}
	if failures > 0 {
		t.Errorf("%.0f of %.0f commits were rolled back with one applier and no fault (see the log: a commit that expected an older frontier?)", failures, commits+failures)
	}
}

// counterSum is the sum over every label of counter name in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// startApplier runs the sink's applier until stop, which reports its
// error.
func startApplier(t *testing.T, cfg config.Config, sink *sinks.Sharded, ps []*projections.Projection) (stop func()) {
	t.Helper()
	return startApplierIn(t, cfg, sink, ps, event.SinkGroup(cfg.Kafka.TopicPrefix, "ledger"))
}

// startApplierIn is startApplier in consumer group group.
func startApplierIn(t *testing.T, cfg config.Config, sink *sinks.Sharded, ps []*projections.Projection, group string) (stop func()) {
	t.Helper()
	return startApplierMetered(t, cfg, sink, ps, group, nil)
}

// startApplierMetered is startApplierIn exporting its metrics to m.
func startApplierMetered(t *testing.T, cfg config.Config, sink *sinks.Sharded, ps []*projections.Projection, group string, m *projector.ConsistentMetrics) (stop func()) {
	t.Helper()
	a, err := projector.NewApplier("ledger", ps, sink, projector.ApplierOptions{Brokers: cfg.Kafka.Brokers,
		CheckpointTopic: event.CheckpointTopic(cfg.Kafka.TopicPrefix), TailerID: cfg.TransactionalID(),
		Group: group, ChunkRecords: 300, Retryable: sinks.Retryable, Log: logger(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		err := a.Run(ctx)
		if err != nil {
			// Said at once: a test waiting for the read tables would
			// otherwise only time out.
			t.Logf("applier stopped: %v", err)
		}
		done <- err
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("applier: %v", err)
		}
	}
}

// waitLedgerEqual waits until the read tables on sinkServer equal the
// source on source.
func waitLedgerEqual(t *testing.T, sinkServer *testbed.MySQL, src, sinkDB string, source *testbed.MySQL) {
	t.Helper()
	s, r := "`"+src+"`.", "`"+sinkDB+"`."
	pairs := [][2]string{
		{"SELECT id, balance FROM " + s + "accounts ORDER BY id", "SELECT id, balance FROM " + r + "accounts ORDER BY id"},
		{"SELECT id, from_id, to_id, amount, memo FROM " + s + "transfers ORDER BY id", "SELECT id, from_id, to_id, amount, memo FROM " + r + "transfers ORDER BY id"},
		{"SELECT to_id, SUM(amount), COUNT(*) FROM " + s + "transfers GROUP BY to_id ORDER BY 1", "SELECT to_id, amount, n FROM " + r + "received ORDER BY 1"},
		{"SELECT from_id, SUM(amount), COUNT(*) FROM " + s + "transfers GROUP BY from_id ORDER BY 1", "SELECT from_id, amount, n FROM " + r + "sent ORDER BY 1"},
		{"SELECT balance DIV 100, id, balance FROM " + s + "accounts ORDER BY 1, 2", "SELECT tier, id, balance FROM " + r + "tiers ORDER BY 1, 2"},
		{"SELECT id, amount FROM " + s + "transfers WHERE amount >= 25 ORDER BY id", "SELECT id, amount FROM " + r + "big ORDER BY id"},
		{"SELECT t.id, t.kind_id, k.group_id, g.label FROM " + s + "transfers t LEFT JOIN " + s + "kinds k ON k.id = t.kind_id LEFT JOIN " + s + "kgroups g ON g.id = k.group_id ORDER BY t.id",
			"SELECT id, kind_id, group_id, label FROM " + r + "transfers_labeled ORDER BY id"},
	}
	testbed.Eventually(t, 120*time.Second, func() (bool, string) {
		for _, p := range pairs {
			want, got := testbed.RowsText(t, source.DB(), p[0]), testbed.RowsText(t, sinkServer.DB(), p[1])
			if want != got {
				return false, fmt.Sprintf("%s differs:\nsource:\n%.600s\nread:\n%.600s", p[1], want, got)
			}
		}
		return true, ""
	})
}
