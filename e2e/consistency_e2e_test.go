package e2e

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/e2e/testbed"
)

// ledgerSchema is a shop whose every source transaction keeps invariants
// at commit: balances that sum to a constant, an order's total and line
// count equal to its lines. %[1]s is the source database.
var ledgerSchema = []string{
	"CREATE TABLE `%[1]s`.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
	"CREATE TABLE `%[1]s`.orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, total BIGINT NOT NULL, n_lines INT NOT NULL)",
	"CREATE TABLE `%[1]s`.order_lines (id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, amount BIGINT NOT NULL, KEY (order_id))",
}

// consistencyProjections put every kind of projection on the one sink:
// copies, a nested children array, an aggregate and a join. Everything
// about an order is sharded by the order's id, so an order, its lines,
// its aggregate row and its joined lines share a shard; the accounts are
// a reference table, whole on every shard.
const consistencyProjections = `  acct:
    from: %[1]s.accounts
    sink: reads
    key: [id]
    replicated: true
    columns: {id: id, balance: balance}
  ord:
    from: %[1]s.orders
    sink: reads
    key: [id]
    shard_by: id
    columns: {id: id, customer_id: customer_id, total: total, n_lines: n_lines}
  line:
    from: %[1]s.order_lines
    sink: reads
    key: [order_id, id]
    shard_by: order_id
    columns: {order_id: order_id, id: id, amount: amount}
  ord_nested:
    from: %[1]s.orders
    sink: reads
    key: [id]
    shard_by: id
    columns: {id: id, total: total, n_lines: n_lines}
    children:
      lines:
        from: %[1]s.order_lines
        on: {order_id: id}
        columns: {amount: amount}
        order_by: [id]
  line_sums:
    from: %[1]s.order_lines
    sink: reads
    group_by: [order_id]
    shard_by: order_id
    aggregates: {amount_sum: "sum(amount)", n: "count(*)"}
  line_cust:
    from: %[1]s.order_lines
    sink: reads
    key: [order_id, id]
    shard_by: order_id
    columns: {order_id: order_id, id: id, amount: amount}
    join:
      - from: %[1]s.orders
        on: {id: order_id}
        columns: {customer_id: customer_id}
`

// ledgerExpectations are the read tables of database sink as SQL on the
// source computes them (one shard: the whole of each).
func ledgerExpectations(src, sink string) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	r := func(t string) string { return "`" + sink + "`." + t }
	return []struct{ name, want, got string }{
		{"acct", "SELECT id, balance FROM " + q("accounts") + " ORDER BY 1", "SELECT id, balance FROM " + r("acct") + " ORDER BY 1"},
		{"ord", "SELECT id, customer_id, total, n_lines FROM " + q("orders") + " ORDER BY 1",
			"SELECT id, customer_id, total, n_lines FROM " + r("ord") + " ORDER BY 1"},
		{"line", "SELECT id, order_id, amount FROM " + q("order_lines") + " ORDER BY 1", "SELECT id, order_id, amount FROM " + r("line") + " ORDER BY 1"},
		{"ord_nested", "SELECT o.id, o.total, o.n_lines," +
			" (SELECT JSON_ARRAYAGG(JSON_OBJECT('amount', l.amount) ORDER BY l.id) FROM " + q("order_lines") + " l WHERE l.order_id = o.id)," +
			" (SELECT COUNT(*) FROM " + q("order_lines") + " l WHERE l.order_id = o.id) FROM " + q("orders") + " o ORDER BY 1",
			"SELECT id, total, n_lines, `lines`, lines_count FROM " + r("ord_nested") + " ORDER BY 1"},
		{"line_sums", "SELECT order_id, SUM(amount), COUNT(*) FROM " + q("order_lines") + " GROUP BY order_id ORDER BY 1",
			"SELECT order_id, amount_sum, n FROM " + r("line_sums") + " ORDER BY 1"},
		{"line_cust", "SELECT l.id, l.order_id, l.amount, o.customer_id FROM " + q("order_lines") + " l LEFT JOIN " + q("orders") + " o ON o.id = l.order_id ORDER BY 1",
			"SELECT id, order_id, amount, customer_id FROM " + r("line_cust") + " ORDER BY 1"},
	}
}

const (
	ledgerAccounts = 40
	ledgerOpening  = 1000 // each account's opening balance
)

// TestConsistencyRowModeTears is the control of issue 42's checker: with
// `consistency: row` (each projection commits its own partitions on its
// own schedule) readers reading all read tables in one REPEATABLE READ
// transaction while the ledger workload runs must see states the source
// never had. A checker that sees none here could not see them anywhere.
func TestConsistencyRowModeTears(t *testing.T) {
	r := runConsistency(t, ledgerShop(), consistencyRun{name: "consrow", consistency: "row", txns: 1500})
	if r.torn == 0 {
		t.Errorf("row mode: no torn state in %d snapshots; the checker cannot see what it is meant to", r.snapshots)
	}
}

// TestConsistencyTransactionKill9 is issue 42's guarantee on the real
// binary: with `consistency: transaction`, readers reading all read tables
// of the sink in one REPEATABLE READ transaction never see a state the
// source never had — not while the ledger workload runs, not while
// `readside run` is SIGKILLed and restarted — and the read tables converge
// to the source with `readside verify` EQUAL.
func TestConsistencyTransactionKill9(t *testing.T) {
	r := runConsistency(t, ledgerShop(), consistencyRun{name: "constx", consistency: "transaction", kills: 3})
	if r.torn != 0 {
		t.Errorf("transaction mode: %d of %d snapshots held a state the source never had:\n%s", r.torn, r.snapshots, r.text)
	}
}

// TestConsistencyShardedKill9 is the guarantee per shard: the ledger shop
// on a sink of two shards (two databases of the test bed's MariaDB), an
// order, its lines, its aggregate row and its joined lines on the order's
// shard and the accounts whole on each. Readers of each shard never see a
// state the source never had, under SIGKILLs; the shards converge.
func TestConsistencyShardedKill9(t *testing.T) {
	r := runConsistency(t, ledgerShop(), consistencyRun{name: "conssh", consistency: "transaction", kills: 3, shards: 2})
	if r.torn != 0 {
		t.Errorf("transaction mode, two shards: %d of %d snapshots held a state the source never had:\n%s", r.torn, r.snapshots, r.text)
	}
}

// TestConsistencyEmbeddedBrokerKill9 is the guarantee with the embedded
// broker, whose commit is not atomic across partitions: `readside run`
// with no kafka.brokers is SIGKILLed — broker and all — while the ledger
// workload runs. A cut is only trusted once every partition below it is
// readable (the checkpoint commits alone, after the events; the tailer
// waits for its orphans), so readers still never see a state the source
// never had, and the read tables converge.
func TestConsistencyEmbeddedBrokerKill9(t *testing.T) {
	r := runConsistency(t, ledgerShop(), consistencyRun{name: "consemb", consistency: "transaction", kills: 3, embedded: true, txns: 1500})
	if r.torn != 0 {
		t.Errorf("transaction mode, embedded broker: %d of %d snapshots held a state the source never had:\n%s", r.torn, r.snapshots, r.text)
	}
}

// TestConsistencyPartitionsAdded is the guarantee when partitions are
// added to the topics while the sink's applier runs (an operator scaling
// projectors out): the tailer and the projector run as processes of
// their own, the table topics grow from 3 to 5 partitions mid-workload
// and the tailer is SIGKILLed and restarted (its producer then writes to
// the new partitions at once, where a running one would within its
// metadata refresh), while the applier keeps the session it started
// before. Its cuts then name partitions it did not read: readers never
// see a state the source never had, and the read tables converge.
func TestConsistencyPartitionsAdded(t *testing.T) {
	r := runConsistency(t, ledgerShop(), consistencyRun{name: "consgrow", consistency: "transaction", kills: 2, txns: 1200, grow: 5})
	if r.torn != 0 {
		t.Errorf("transaction mode, partitions added: %d of %d snapshots held a state the source never had:\n%s", r.torn, r.snapshots, r.text)
	}
}

// TestPartitionsAddedRowMode: the same growth with a row sink, whose
// projections consume their topics in consumer groups. The read tables
// converge within the groups' metadata refresh: with Kafka's default of
// five minutes the added partitions' records sat unread past the three
// minutes runConsistency waits.
func TestPartitionsAddedRowMode(t *testing.T) {
	runConsistency(t, ledgerShop(), consistencyRun{name: "rowgrow", consistency: "row", kills: 2, txns: 1200, grow: 5})
}

// consistencyShop is what runConsistency needs of a shop: a source
// schema, the projections of one sink over it, a workload whose every
// source transaction keeps invariants at commit, and the check of those
// invariants over one snapshot of the sink's read tables.
type consistencyShop struct {
	tables []string // the source tables, unqualified
	// create creates the source's tables in database src, and the rows
	// the initial snapshot loads.
	create func(t *testing.T, bed *testbed.Bed, src string)
	// projections are the sink's, YAML under projections: with %[1]s the
	// source database.
	projections string
	// expectations are the read tables (named as their projections) as
	// SQL on the source computes them for a sink of one server. The first
	// ready of them are awaited before the readers start (the guarantee
	// starts after the initial load); the first replicated are whole on
	// every shard of a sharded sink.
	expectations      func(src, sink string) []struct{ name, want, got string }
	ready, replicated int
	// workload commits about txns source transactions by two seeded
	// writers, paced by pace, and returns how many committed.
	workload func(ctx context.Context, db *sql.DB, src string, seed uint64, txns int, pace *workloadPace) (int, error)
	check    snapshotCheck
	// defaultTxns: the run's transactions when neither the run nor
	// E2E_CONSISTENCY_TXNS names them.
	defaultTxns int
	// surfaces, when set, checks after the workload what an operator sees
	// of a transactional sink (checkFrontierSurfaces).
	surfaces func(t *testing.T, bed *testbed.Bed, cfgPath, httpAddr, src string, shards []string)
}

// ledgerShop is the ledger: accounts, orders and their lines.
func ledgerShop() consistencyShop {
	return consistencyShop{
		tables: []string{"accounts", "orders", "order_lines"}, create: createLedger, projections: consistencyProjections,
		expectations: ledgerExpectations, ready: 1, replicated: 1,
		workload: func(ctx context.Context, db *sql.DB, src string, seed uint64, txns int, pace *workloadPace) (int, error) {
			return ledgerWorkload(ctx, db, src, seed, 2, txns, pace)
		},
		check: checkLedger(ledgerAccounts, ledgerAccounts*ledgerOpening), defaultTxns: 3000, surfaces: checkFrontierSurfaces,
	}
}

// consistencyRun is one run of a shop: its databases' name, the sink's
// consistency, the SIGKILLs of readside at least, the sink's shards (0:
// one server), the source transactions, and whether readside runs its
// embedded broker (killed with it) instead of the test bed's.
type consistencyRun struct {
	name, consistency   string
	kills, shards, txns int // txns 0: E2E_CONSISTENCY_TXNS, default the shop's
	embedded            bool
	// grow, when set, runs the tailer and the projector as two processes,
	// grows the table topics (from 3 partitions) to grow partitions at the
	// first SIGKILL and kills only the tailer.
	grow int
}

type consistencyResult struct {
	snapshots, torn int
	text            string
}

// runConsistency runs shop's workload into one sink under readers,
// SIGKILLing readside at least r.kills times while the workload runs,
// waits for the read tables to equal the source and for verify to say
// EQUAL, and returns what the readers saw.
func runConsistency(t *testing.T, shop consistencyShop, r consistencyRun) consistencyResult {
	began := time.Now()
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sink := sourceAndSinkDBs(t, bed, r.name)
	shop.create(t, bed, src)
	dir := t.TempDir()
	var tables []string
	for _, tb := range shop.tables {
		tables = append(tables, src+"."+tb)
	}
	head := bedConfigHead(bed, tables, r.name, filepath.Join(dir, "data"), sink)
	sinkYAML := fmt.Sprintf("    consistency: %s\n    dsn: %q\n", r.consistency, bed.MySQL.AdminDSN()+sink)
	shards := []string{sink}
	if r.shards == 2 {
		sink2, err := bed.MySQL.CreateDatabase(ctx, r.name+"_r")
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, sink2)
		sinkYAML = fmt.Sprintf("    consistency: %s\n    shards:\n      - {keyrange: \"-80\", dsn: %q}\n      - {keyrange: \"80-\", dsn: %q}\n",
			r.consistency, bed.MySQL.AdminDSN()+sink, bed.MySQL.AdminDSN()+sink2)
	}
	head = strings.Replace(head, fmt.Sprintf("    dsn: %q\n", bed.MySQL.AdminDSN()+sink), sinkYAML, 1)
	brokers := bed.Kafka.Brokers()
	if r.embedded {
		addr := freeAddr(t)
		head = strings.Replace(head, fmt.Sprintf("  brokers: [%s]\n", strings.Join(brokers, ", ")), fmt.Sprintf("  embedded_listen: %s\n", addr), 1)
		brokers = []string{addr}
	}
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(head+fmt.Sprintf(shop.projections, src)), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	httpAddr := freeAddr(t)
	var d, projector *daemon
	if r.grow > 0 {
		if err := os.WriteFile(cfgPath, []byte(strings.Replace(head, "kafka:\n", "kafka:\n  partitions: 3\n", 1)+fmt.Sprintf(shop.projections, src)), 0o600); err != nil {
			t.Fatal(err)
		}
		d = startDaemon(t, filepath.Join(dir, "tailer.log"), "run", "--role", "tailer", "-c", cfgPath, "--http", freeAddr(t))
		projector = startDaemon(t, logPath, "run", "--role", "projector", "-c", cfgPath, "--http", httpAddr)
	} else {
		d = startDaemon(t, logPath, "run", "-c", cfgPath, "--http", httpAddr)
	}
	prefix := topicPrefixOf(t, head)
	testbed.WaitForTailer(t, bed.MySQL, brokers, prefix+"._readside_checkpoints")
	utc := utcDB(t, bed)
	// The source's opening rows arrive by the initial snapshot; the
	// readers start once they are all there (the guarantee starts after
	// the load).
	var names []string
	for _, e := range shop.expectations(src, sink) {
		names = append(names, e.name)
	}
	for _, db := range shards {
		testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
			var n int
			err := utc.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?"+
				" AND TABLE_NAME IN ('"+strings.Join(names, "', '")+"')", db).Scan(&n)
			return err == nil && n == len(names), fmt.Sprintf("%d of the %d read tables in %s (%v); log:\n%s", n, len(names), db, err, tail(logPath))
		})
		waitExpected(t, utc, shop.expectations(src, db)[:shop.ready], logPath)
	}

	t.Logf("read tables ready %s after the start", time.Since(began).Round(time.Millisecond))
	seed := seedFromEnv(t)
	checker := &consistencyChecker{check: shop.check, frontier: r.consistency == "transaction"}
	rctx, stopReaders := context.WithCancel(ctx)
	var readers errgroup.Group
	for range 4 - len(shards) { // 3 readers of one server, 2 of each of two shards
		for _, db := range shards {
			readers.Go(func() error { return checker.read(rctx, utc, db) })
		}
	}
	txns := r.txns
	if txns == 0 {
		txns = envInt("E2E_CONSISTENCY_TXNS", shop.defaultTxns)
	}
	werr, wdone := make(chan error, 1), make(chan int, 1)
	wstart := time.Now()
	pace := &workloadPace{pause: time.Duration(envInt("E2E_CONSISTENCY_PAUSE_MS", 12)) * time.Millisecond}
	go func() {
		n, err := shop.workload(ctx, bed.MySQL.DB(), src, seed, txns, pace)
		wdone <- n
		werr <- err
	}()
	kills, wend := 0, time.Time{}
	krng := rand.New(rand.NewPCG(seed, 43))
	for done := false; !done || kills < r.kills; {
		// SIGKILLs far enough apart for the restarted applier to get the
		// sink back (a killed member holds its group for its session
		// timeout) and commit between them; after the workload, until
		// there were r.kills. A run that grows the topics does so, and
		// kills the tailer, when a third of the workload has committed,
		// with the writers held until the tailer is restarted: the rest
		// of the workload is then published into the grown topics however
		// fast the workload ran (timed by the clock alone, a workload done
		// before the growth left the added partitions empty).
		wait := time.Duration(6000+krng.IntN(6000)) * time.Millisecond
		growing := r.grow > 0 && kills == 0
		if growing && !done {
			wait = 50 * time.Millisecond
		}
		select {
		case err := <-werr:
			if err != nil {
				t.Fatal(err)
			}
			done, werr, wend = true, nil, time.Now()
		case <-time.After(wait):
			if growing {
				if !done && pace.committed.Load() < int64(txns/3) {
					continue
				}
				func() {
					pace.hold.Lock()
					defer pace.hold.Unlock() // also when growTopics fails the test
					growTopics(t, brokers, prefix, src, shop.tables, r.grow)
					d.kill9()
					kills++
					d.start()
				}()
				t.Logf("topics grown and the tailer restarted %s into the workload, after %d source transactions", time.Since(wstart).Round(time.Millisecond), pace.committed.Load())
				continue
			}
			if kills < r.kills {
				d.kill9()
				kills++
				d.start()
			}
		}
	}
	t.Logf("%d source transactions in %s by 2 writers, %d SIGKILLs of readside run", <-wdone, time.Since(wstart).Round(time.Millisecond), kills)

	if len(shards) == 1 {
		waitExpected(t, utc, shop.expectations(src, sink), logPath)
	} else {
		waitExpected(t, utc, shardedExpectations(shop, src, shards), logPath)
	}
	t.Logf("converged %s after the workload's end", time.Since(wend).Round(time.Millisecond))
	stopReaders()
	if err := readers.Wait(); err != nil {
		t.Fatalf("reader: %v", err)
	}
	snapshots, torn, text := checker.report()
	t.Logf("consistency: %s, %d shard(s): %s", r.consistency, len(shards), text)
	if snapshots < 20 {
		t.Errorf("the readers took %d snapshots, too few to say anything", snapshots)
	}
	if r.consistency == "transaction" && shop.surfaces != nil {
		shop.surfaces(t, bed, cfgPath, httpAddr, src, shards)
	}
	var equal []string
	for _, n := range names {
		equal = append(equal, n+": EQUAL")
	}
	expectReadside(t, cfgPath, "after the workload", "verify", 0, equal...)
	if r.grow > 0 {
		grownPartitionsWritten(t, brokers, prefix, src, shop.tables)
		if code := projector.stop(30 * time.Second); code != 0 {
			t.Errorf("projector: exit %d after SIGTERM; log:\n%s", code, tail(logPath))
		}
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
	t.Logf("%s ran %s", t.Name(), time.Since(began).Round(time.Second))
	return consistencyResult{snapshots, torn, text}
}

// growTopics adds partitions to the table topics, up to n each, and
// waits until the broker's metadata shows them: the controller answers
// first, and a tailer restarted before the broker's metadata has them
// fetches the old count, then keeps it for its metadata age (minutes),
// past the workload's end (under CI load no record reached the added
// partitions and the run tested nothing).
func growTopics(t *testing.T, brokers []string, prefix, src string, tables []string, n int) {
	t.Helper()
	adm := adminClient(t, brokers)
	topics := tableTopics(prefix, src, tables)
	resp, err := adm.UpdatePartitions(t.Context(), n, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("adding partitions: %v", err)
	}
	testbed.Eventually(t, 30*time.Second, func() (bool, string) {
		details, err := adm.ListTopics(t.Context(), topics...)
		if err != nil {
			return false, err.Error()
		}
		for _, topic := range topics {
			if got := len(details[topic].Partitions); got != n {
				return false, fmt.Sprintf("%s has %d partitions in the broker's metadata, want %d", topic, got, n)
			}
		}
		return true, ""
	})
	t.Logf("the table topics have %d partitions now", n)
}

// grownPartitionsWritten fails the test when no table topic's added
// partitions (3 and above) hold a record: the run then tested nothing.
func grownPartitionsWritten(t *testing.T, brokers []string, prefix, src string, tables []string) {
	t.Helper()
	ends, err := adminClient(t, brokers).ListEndOffsets(t.Context(), tableTopics(prefix, src, tables)...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Partition >= 3 {
			n += o.Offset
		}
	})
	if n == 0 {
		t.Fatal("no record in the partitions added: the tailer never wrote to them")
	}
	t.Logf("%d records in the partitions added", n)
}

func tableTopics(prefix, src string, tables []string) []string {
	var topics []string
	for _, tb := range tables {
		topics = append(topics, prefix+"."+src+"."+tb)
	}
	return topics
}

// shardedExpectations are shop's expectations over the union of the
// shards' databases, and its replicated read tables whole on each.
func shardedExpectations(shop consistencyShop, src string, shards []string) []struct{ name, want, got string } {
	var out []struct{ name, want, got string }
	n := shop.replicated
	for _, db := range shards {
		for _, e := range shop.expectations(src, db)[:n] {
			e.name += " on " + db
			out = append(out, e)
		}
	}
	for i, c := range shop.expectations(src, shards[0])[n:] {
		var parts []string
		for _, db := range shards {
			parts = append(parts, strings.TrimSuffix(shop.expectations(src, db)[n+i].got, " ORDER BY 1"))
		}
		c.got = "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") AS shards ORDER BY 1"
		out = append(out, c)
	}
	return out
}

// createLedger creates ledgerSchema in src with the accounts opened.
func createLedger(t *testing.T, bed *testbed.Bed, src string) {
	t.Helper()
	var stmts []string
	for _, s := range ledgerSchema {
		stmts = append(stmts, fmt.Sprintf(s, src))
	}
	stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.accounts SELECT seq, %d FROM %s", src, ledgerOpening, testbed.Seq(ledgerAccounts)))
	if err := bed.MySQL.Exec(t.Context(), stmts...); err != nil {
		t.Fatal(err)
	}
}

// ledgerWriter is one writer of the ledger workload. It owns the orders
// and lines whose ids are its own (id % writers), so its model of them is
// exact; the accounts are shared and only moved by deltas.
type ledgerWriter struct {
	db        *sql.DB
	src       string
	rng       *rand.Rand
	me, of    int64 // writer me of of
	nextOrder int64
	nextLine  int64
	orders    map[int64]*modelOrder
}

type modelOrder struct {
	customer int64
	lines    map[int64]int64 // line id → amount
}

func (o *modelOrder) total() (sum int64) {
	for _, a := range o.lines {
		sum += a
	}
	return sum
}

type ledgerStmt struct {
	q    string
	args []any
}

// ledgerWorkload runs txns source transactions over writers concurrent
// writers, each pausing between its transactions, and returns how many
// committed.
func ledgerWorkload(ctx context.Context, db *sql.DB, src string, seed uint64, writers, txns int, pace *workloadPace) (int, error) {
	return runWriters(ctx, writers, txns, pace, func(w int) func(context.Context) error {
		lw := &ledgerWriter{db: db, src: src, rng: rand.New(rand.NewPCG(seed, uint64(100+w))), me: int64(w), of: int64(writers), orders: map[int64]*modelOrder{}}
		return lw.txn
	})
}

// workloadPace is how a consistency workload's writers run: each pauses
// after each of its transactions, and a test may hold every writer
// between two transactions (hold) and read how many committed.
type workloadPace struct {
	pause     time.Duration
	hold      sync.RWMutex
	committed atomic.Int64
}

// runWriters runs writers concurrent writers, writer(w) committing one
// source transaction per call, txns in all, paced by pace; it returns how
// many committed.
func runWriters(ctx context.Context, writers, txns int, pace *workloadPace, writer func(w int) func(context.Context) error) (int, error) {
	g, gctx := errgroup.WithContext(ctx)
	for w := range writers {
		txn := writer(w)
		g.Go(func() error {
			for i := 0; i < txns/writers && gctx.Err() == nil; i++ {
				pace.hold.RLock()
				err := txn(gctx)
				pace.hold.RUnlock()
				if err != nil {
					return err
				}
				pace.committed.Add(1)
				time.Sleep(pace.pause)
			}
			return nil
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		err = nil
	}
	return int(pace.committed.Load()), err
}

// commitRetrying runs commit, a whole source transaction, again after a
// deadlock or a lock wait timeout (the transaction rolled back whole), up
// to 10 times.
func commitRetrying(commit func() error) error {
	for attempt := 0; ; attempt++ {
		err := commit()
		var me *mysql.MySQLError
		if err != nil && errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205) && attempt < 10 {
			continue
		}
		return err
	}
}

func (w *ledgerWriter) orderID() int64 { w.nextOrder++; return w.nextOrder*w.of + w.me }
func (w *ledgerWriter) lineID() int64  { w.nextLine++; return w.nextLine*w.of + w.me }

// pick is a random order of this writer's, with at least minLines lines,
// or 0.
func (w *ledgerWriter) pick(minLines int) int64 {
	ids := make([]int64, 0, len(w.orders))
	for id, o := range w.orders {
		if len(o.lines) >= minLines {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	slices.Sort(ids)
	return ids[w.rng.IntN(len(ids))]
}

func pickLine(rng *rand.Rand, o *modelOrder) int64 {
	ids := make([]int64, 0, len(o.lines))
	for id := range o.lines {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[rng.IntN(len(ids))]
}

// txn commits one source transaction that keeps every invariant: its
// statements and the change to the model (applied after the commit).
// A deadlock between the writers is retried.
func (w *ledgerWriter) txn(ctx context.Context) error {
	o, a, l := "`"+w.src+"`.orders", "`"+w.src+"`.accounts", "`"+w.src+"`.order_lines"
	var stmts []ledgerStmt
	var after []func()
	add := func(q string, args ...any) { stmts = append(stmts, ledgerStmt{q, args}) }
	setOrder := func(id int64, m *modelOrder) {
		add("UPDATE "+o+" SET total = ?, n_lines = ? WHERE id = ?", m.total(), len(m.lines), id)
	}
	transfer := func() {
		ids := map[int64]bool{}
		for n := 2 + w.rng.IntN(3); len(ids) < n; {
			ids[1+int64(w.rng.IntN(ledgerAccounts))] = true
		}
		sorted := sortedKeys(ids) // one lock order: no deadlock between writers
		var sum int64
		for i, id := range sorted {
			d := int64(w.rng.IntN(200) - 100)
			if i == len(sorted)-1 {
				d = -sum
			}
			sum += d
			add("UPDATE "+a+" SET balance = balance + ? WHERE id = ?", d, id)
		}
	}
	// Each case edits a copy of the order it changes, so a retried
	// transaction starts from the committed model.
	clone := func(id int64) *modelOrder {
		m := &modelOrder{customer: w.orders[id].customer, lines: map[int64]int64{}}
		for k, v := range w.orders[id].lines {
			m.lines[k] = v
		}
		after = append(after, func() { w.orders[id] = m })
		return m
	}
	x := w.rng.IntN(100)
	switch {
	case x < 30:
		transfer()
	case x < 45 || len(w.orders) < 10:
		if len(w.orders) > 80 {
			id := w.pick(0)
			add("DELETE FROM "+l+" WHERE order_id = ?", id)
			add("DELETE FROM "+o+" WHERE id = ?", id)
			after = append(after, func() { delete(w.orders, id) })
			break
		}
		id := w.orderID()
		m := &modelOrder{customer: 1 + int64(w.rng.IntN(20)), lines: map[int64]int64{}}
		var lines []ledgerStmt
		for range 1 + w.rng.IntN(4) {
			lid, amt := w.lineID(), 1+int64(w.rng.IntN(500))
			m.lines[lid] = amt
			lines = append(lines, ledgerStmt{"INSERT INTO " + l + " VALUES (?, ?, ?)", []any{lid, id, amt}})
		}
		order := ledgerStmt{"INSERT INTO " + o + " VALUES (?, ?, ?, ?)", []any{id, m.customer, m.total(), len(m.lines)}}
		if w.rng.IntN(2) == 0 { // the lines before their order, or after
			stmts = append(append(stmts, lines...), order)
		} else {
			stmts = append(append(stmts, order), lines...)
		}
		after = append(after, func() { w.orders[id] = m })
	case x < 55:
		id := w.pick(0)
		m := clone(id)
		lid, amt := w.lineID(), 1+int64(w.rng.IntN(500))
		m.lines[lid] = amt
		add("INSERT INTO "+l+" VALUES (?, ?, ?)", lid, id, amt)
		setOrder(id, m)
	case x < 63:
		id := w.pick(1)
		if id == 0 {
			transfer()
			break
		}
		m := clone(id)
		lid := pickLine(w.rng, m)
		delete(m.lines, lid)
		setOrder(id, m)
		add("DELETE FROM "+l+" WHERE id = ?", lid)
	case x < 73, x >= 93:
		id := w.pick(1)
		if id == 0 {
			transfer()
			break
		}
		m := clone(id)
		lid := pickLine(w.rng, m)
		m.lines[lid] = 1 + int64(w.rng.IntN(500))
		add("UPDATE "+l+" SET amount = ? WHERE id = ?", m.lines[lid], lid)
		setOrder(id, m)
		if x >= 93 { // money and orders in one transaction
			transfer()
		}
	case x < 81:
		from, to := w.pick(1), w.pick(0)
		if from == 0 || from == to {
			transfer()
			break
		}
		mf, mt := clone(from), clone(to)
		lid := pickLine(w.rng, mf)
		mt.lines[lid] = mf.lines[lid]
		delete(mf.lines, lid)
		setOrder(from, mf)
		add("UPDATE "+l+" SET order_id = ? WHERE id = ?", to, lid)
		setOrder(to, mt)
	case x < 87:
		id := w.pick(0)
		if w.rng.IntN(2) == 0 {
			add("DELETE FROM "+o+" WHERE id = ?", id)
			add("DELETE FROM "+l+" WHERE order_id = ?", id)
		} else {
			add("DELETE FROM "+l+" WHERE order_id = ?", id)
			add("DELETE FROM "+o+" WHERE id = ?", id)
		}
		after = append(after, func() { delete(w.orders, id) })
	default:
		id := w.pick(0)
		m := clone(id)
		m.customer = 1 + int64(w.rng.IntN(20))
		add("UPDATE "+o+" SET customer_id = ? WHERE id = ?", m.customer, id)
	}
	if err := commitRetrying(func() error { return w.exec(ctx, stmts) }); err != nil {
		return err
	}
	for _, f := range after {
		f()
	}
	return nil
}

func (w *ledgerWriter) exec(ctx context.Context, stmts []ledgerStmt) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("%s: %w", s.q, err)
		}
	}
	return tx.Commit()
}

// TestConsistencyHugeTransaction: one source transaction inserts
// 1,000,000 rows and sets a marker row to that count. On a transactional
// sink a reader, counting the copy and reading the marker's copy in one
// snapshot, sees both before or both after — never part of the rows —
// and readside's peak RSS (VmHWM: the tailer and the applier are one
// process) stays within 300 MiB: the transaction is streamed, not held.
func TestConsistencyHugeTransaction(t *testing.T) {
	began := time.Now()
	bed := testbed.Get(t)
	ctx := t.Context()
	rows := envInt("E2E_HUGE_TXN_ROWS", 1_000_000)
	src, sink := sourceAndSinkDBs(t, bed, "conshuge")
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+src+"`.big (id INT PRIMARY KEY, x INT NOT NULL, pad VARCHAR(100) NOT NULL)",
		"CREATE TABLE `"+src+"`.marker (id INT PRIMARY KEY, n BIGINT NOT NULL)",
		"INSERT INTO `"+src+"`.marker VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	head := bedConfigHead(bed, []string{src + ".big", src + ".marker"}, "conshuge", filepath.Join(dir, "data"), sink)
	head = strings.Replace(head, "\nprojections:\n", "\n    consistency: "+envString("E2E_HUGE_TXN_CONSISTENCY", "transaction")+"\nprojections:\n", 1)
	projs := fmt.Sprintf(`  big_copy:
    from: %[1]s.big
    sink: reads
    key: [id]
    columns: {id: id, x: x, pad: pad}
  marker_copy:
    from: %[1]s.marker
    sink: reads
    key: [id]
    columns: {id: id, n: n}
`, src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(head+projs), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	httpAddr := freeAddr(t)
	d := startDaemon(t, logPath, "run", "-c", cfgPath, "--http", httpAddr)
	waitForCheckpoint(t, bed, topicPrefixOf(t, head))
	db := bed.MySQL.DB()
	copyOf := func(table string) string { return "`" + sink + "`." + table }
	// The sink's frontier stands still while the commit runs: /status
	// says what the applier is committing, and how far it is.
	type committing struct {
		Records, Offsets int64
	}
	var mostSeen atomic.Pointer[committing]
	var sawPartial atomic.Bool // records counted as they are read, not at the end
	sctx, stopStatus := context.WithCancel(ctx)
	defer stopStatus()
	go func() {
		for sctx.Err() == nil {
			var st struct {
				Sinks []struct {
					Committing *committing `json:"committing"`
				} `json:"sinks"`
			}
			if resp, err := http.Get("http://" + httpAddr + "/status"); err == nil {
				_ = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if len(st.Sinks) == 1 && st.Sinks[0].Committing != nil {
					c := st.Sinks[0].Committing
					if seen := mostSeen.Load(); seen == nil || c.Records > seen.Records {
						mostSeen.Store(c)
					}
					if c.Records > 0 && c.Records < int64(rows)/2 {
						sawPartial.Store(true)
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		var n int64
		err := db.QueryRowContext(ctx, "SELECT n FROM "+copyOf("marker_copy")+" WHERE id = 1").Scan(&n)
		return err == nil, fmt.Sprintf("the marker's copy: %v; log:\n%s", err, tail(logPath))
	})

	// The reader: every snapshot's (marker, count) pair.
	type seen struct{ marker, count int64 }
	rctx, stopReader := context.WithCancel(ctx)
	pairs := make(chan map[seen]int, 1)
	rerr := make(chan error, 1)
	var sawAll atomic.Bool // a snapshot after the transaction, whole
	go func() {
		got := map[seen]int{}
		defer func() { pairs <- got }()
		conn, err := db.Conn(rctx)
		if err != nil {
			rerr <- err
			return
		}
		defer conn.Close()
		for rctx.Err() == nil {
			var s seen
			err := func() error {
				if _, err := conn.ExecContext(rctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
					return err
				}
				defer conn.ExecContext(context.WithoutCancel(rctx), "ROLLBACK") //nolint:errcheck // read only
				if err := conn.QueryRowContext(rctx, "SELECT n FROM "+copyOf("marker_copy")+" WHERE id = 1").Scan(&s.marker); err != nil {
					return err
				}
				return conn.QueryRowContext(rctx, "SELECT COUNT(*) FROM "+copyOf("big_copy")).Scan(&s.count)
			}()
			if err != nil {
				if rctx.Err() != nil {
					err = nil // stopped mid-read
				}
				rerr <- err
				return
			}
			got[s]++
			if s.count == int64(rows) && s.marker == int64(rows) {
				sawAll.Store(true)
			}
			time.Sleep(50 * time.Millisecond)
		}
		rerr <- nil
	}()

	start := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO `%s`.big SELECT seq, seq, REPEAT('x', 100) FROM %s", src, testbed.Seq(rows))); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE `"+src+"`.marker SET n = ? WHERE id = 1", rows); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	t.Logf("source: one %d-row transaction committed in %s", rows, time.Since(start).Round(time.Millisecond))
	testbed.Eventually(t, 6*time.Minute, func() (bool, string) {
		var n int64
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+copyOf("big_copy")).Scan(&n)
		return err == nil && n == int64(rows), fmt.Sprintf("%d of %d rows in the copy (%v); log:\n%s", n, rows, err, tail(logPath))
	})
	visible := time.Since(start)
	stopStatus()
	if c := mostSeen.Load(); c == nil || !sawPartial.Load() || c.Records > c.Offsets || c.Offsets < int64(rows) {
		t.Errorf("/status never showed the %d-row commit under way with its progress (most seen: %+v, part-way: %v)", rows, c, sawPartial.Load())
	} else {
		t.Logf("/status showed the commit under way: %d of about %d records at most", c.Records, c.Offsets)
	}
	peak := peakRSS(t, d.cmd.Process.Pid)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	testbed.Poll(wctx, 100*time.Millisecond, sawAll.Load) // the reader's own look at the state after
	cancel()
	stopReader()
	got := <-pairs
	if err := <-rerr; err != nil {
		t.Fatalf("reader: %v", err)
	}
	var torn, whole int
	var samples []string
	for _, s := range slices.SortedFunc(maps.Keys(got), func(a, b seen) int { return cmp.Compare(a.count, b.count) }) {
		if s.count == s.marker && (s.count == 0 || s.count == int64(rows)) {
			whole += got[s]
			continue
		}
		torn += got[s]
		if len(samples) < 5 {
			samples = append(samples, fmt.Sprintf("%d rows with the marker at %d (%d snapshots)", s.count, s.marker, got[s]))
		}
	}
	t.Logf("%d rows visible %s after the commit; readside's peak RSS (VmHWM) %d MiB; %d snapshots saw none or all of the transaction, %d part of it",
		rows, visible.Round(time.Millisecond), peak>>20, whole, torn)
	if torn > 0 {
		t.Errorf("%d snapshots saw part of the %d-row source transaction, e.g. %s", torn, rows, strings.Join(samples, "; "))
	}
	if len(got) < 2 {
		t.Errorf("the reader saw only %v: it never saw the state before or after the transaction", got)
	}
	const bound = 300 << 20
	if rows >= 1_000_000 && peak > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB: the transaction was held, not streamed", peak>>20, bound>>20)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
	t.Logf("%s ran %s", t.Name(), time.Since(began).Round(time.Second))
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
