package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

// source is one workload's tables, readside config and backlog writer.
type source struct {
	cfgPath string
	cfg     config.Config
	proj    *projections.Projection
	// write writes the backlog and returns its row events per topic
	// (nil: unknown, the binlog range's row count from B0 is used).
	write func(ctx context.Context) (map[string]int, error)
	// live, when set, writes the workload's own mix live for its latency
	// step (workloadlatency.go); stamp says when a read row shows a
	// source change.
	live  txnWriter
	stamp stampRule
	// b2, when set, replaces B2's -config and -projection (the B2 of an
	// aggregate or of nested children: rawupsert -aggregate, or a plain
	// copy of the child table in a config of its own).
	b2 []string
	// b2Check, when set, compares what B2 left with the projector's read
	// table (the aggregate's is aggregateCheck, from -aggregate).
	b2Check func(ctx context.Context, proj *projections.Projection, b2 limitResult) (string, error)
}

// errSkip marks a workload that cannot run on this machine; the run goes
// on without it and the reason is reported.
var errSkip = errors.New("skipped")

// newSource creates a workload's tables (and preload) and its config.
func (e *env) newSource(ctx context.Context, w workload, prefix string) (*source, error) {
	s := &source{}
	var err error
	switch w.Kind {
	case "", "txn_mix":
		tbl := tableName(w)
		if err := e.bed.MySQL.Exec(ctx, w.tableDDL(e.srcDB, tbl)); err != nil {
			return nil, err
		}
		if s.cfgPath, err = e.config("p_"+tbl, tbl, prefix, true); err != nil {
			return nil, err
		}
		gen := newGenerator(w, e.bed.MySQL.DB(), e.srcDB, tbl)
		if err := gen.preload(ctx); err != nil {
			return nil, err
		}
		s.write = func(ctx context.Context) (map[string]int, error) {
			if w.Kind == "txn_mix" {
				n, err := gen.txnMix(ctx)
				return map[string]int{s.proj.Topic: n}, err
			}
			return map[string]int{s.proj.Topic: w.Events}, gen.backlog(ctx)
		}
	case "orders_by_customer":
		err = e.ordersSource(ctx, w, prefix, s)
	case "messages_by_sender":
		err = e.messagesSource(ctx, w, prefix, s)
	case "messages_by_sender_month":
		err = e.messagesMonthSource(ctx, w, prefix, s)
	case "orders_with_region":
		err = e.ordersRegionSource(ctx, w, prefix, s)
	case "customer_order_stats", "customer_distinct_stats":
		err = e.customerStatsSource(ctx, w, prefix, s)
	case "orders_with_lines":
		err = e.orderLinesSource(ctx, w, prefix, s)
	case "store_revenue":
		err = e.storeRevenueSource(ctx, w, prefix, s)
	case "film_cast":
		err = e.filmCastSource(ctx, w, prefix, s)
	case "sysbench":
		err = e.sysbenchSource(ctx, w, prefix, s)
	default:
		err = fmt.Errorf("unknown workload kind %q", w.Kind)
	}
	if err != nil {
		return nil, err
	}
	cfg, ps, err := compile(s.cfgPath)
	if err != nil {
		return nil, err
	}
	s.cfg, s.proj = cfg, ps[0]
	return s, nil
}

// customConfig writes a readside config with one projection given as YAML
// (indented under projections:), like config() does for the row workloads.
func (e *env) customConfig(prefix string, tables []string, projection string) (string, error) {
	return e.writeConfig(prefix+".yaml", prefix, tables, projection)
}

// writeConfig writes customConfig's config under name in the bench's
// directory.
func (e *env) writeConfig(name, prefix string, tables []string, projection string) (string, error) {
	e.serverID++
	var b strings.Builder
	qualified := make([]string, len(tables))
	for i := range tables {
		qualified[i] = e.srcDB + "." + tables[i]
	}
	fmt.Fprintf(&b, "source:\n  dsn: %q\n  server_id: %d\n  tables: [%s]\n  snapshot:\n    mode: never\n", e.bed.MySQL.ReplDSN(), e.serverID, strings.Join(qualified, ", "))
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  topic_prefix: %s\n  partitions: 6\n", strings.Join(e.bed.Kafka.Brokers(), ", "), prefix)
	fmt.Fprintf(&b, "sinks:\n  reads:\n    dsn: %q\n%s", e.bed.MySQL.AdminDSN()+e.sinkDB, e.consistencyLine())
	b.WriteString("projections:\n" + strings.ReplaceAll(projection, "$src", e.srcDB))
	b.WriteString("log:\n  level: warn\n")
	path := filepath.Join(e.dir, name)
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// txnMix writes multi-statement transactions of 1–10 statements, each an
// INSERT of 1–20 new rows, an UPDATE of an id range of 1–20 rows or a
// DELETE of an id range of 1–5 rows (50/35/15%), until at least w.Events
// row changes are written; it returns the exact count (the statements'
// affected rows, which is what the binlog logs: an update always changes
// commit_us, a range may hit deleted ids).
func (g *generator) txnMix(ctx context.Context) (int, error) {
	done := 0
	for done < g.w.Events {
		tx, err := g.db.BeginTx(ctx, nil)
		if err != nil {
			return done, err
		}
		for range 1 + g.rnd.IntN(10) {
			var stmt string
			switch p := g.rnd.Float64(); {
			case p < 0.5:
				b := g.stmtHead()
				for i := range 1 + g.rnd.IntN(20) {
					if i > 0 {
						b = append(b, ',')
					}
					g.maxID++
					b = g.appendRow(b, g.maxID, time.Now().UnixMicro())
				}
				stmt = string(b)
			case p < 0.85:
				lo := g.rnd.Int64N(g.maxID) + 1
				stmt = fmt.Sprintf("UPDATE %s SET a = %d, c = c + 1, commit_us = %d WHERE id BETWEEN %d AND %d", g.table, g.rnd.IntN(1_000_000), time.Now().UnixMicro(), lo, lo+g.rnd.Int64N(20))
			default:
				lo := g.rnd.Int64N(g.maxID) + 1
				stmt = fmt.Sprintf("DELETE FROM %s WHERE id BETWEEN %d AND %d", g.table, lo, lo+g.rnd.Int64N(5))
			}
			res, err := tx.ExecContext(ctx, stmt)
			if err != nil {
				_ = tx.Rollback()
				return done, fmt.Errorf("txn_mix: %w", err)
			}
			n, _ := res.RowsAffected()
			done += int(n)
		}
		if err := tx.Commit(); err != nil {
			return done, err
		}
	}
	return done, nil
}

// ordersSource is the shop of the demo (e2e/cmd/demo): customers (the
// parent) and their orders (the child), projected into orders_by_customer
// keyed by customer with the customer's name and tier copied into every
// order row. The backlog: 60% new orders, 35% order updates (status and
// total), 5% customer updates, which fan out to every order of that
// customer in the read table.
func (e *env) ordersSource(ctx context.Context, w workload, prefix string, s *source) error {
	const customers = 10_000
	if err := e.bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+e.srcDB+"`.obc_customers (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, tier ENUM('free','pro','vip') NOT NULL, commit_us BIGINT NOT NULL)",
		"CREATE TABLE `"+e.srcDB+"`.obc_orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL, created_at DATETIME(6) NOT NULL, commit_us BIGINT NOT NULL, KEY (customer_id))"); err != nil {
		return err
	}
	var err error
	s.cfgPath, err = e.customConfig(prefix, []string{"obc_customers", "obc_orders"}, `  orders_by_customer:
    from: $src.obc_orders
    sink: reads
    table: r_orders_by_customer
    key: [customer_id, id]
    shard_by: customer_id
    columns: {customer_id: customer_id, id: id, status: status, total_cents: total_cents, created_at: created_at, commit_us: commit_us}
    join:
      - from: $src.obc_customers
        on: {id: customer_id}
        columns: {customer_name: name, customer_tier: tier}
`)
	if err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	tiers := []string{"free", "pro", "vip"}
	statuses := []string{"draft", "paid", "shipped", "cancelled"}
	// Orders first: a transaction writes its orders, then its customers.
	tables := []upsertTable{
		{head: "INSERT INTO `" + e.srcDB + "`.obc_orders (id, customer_id, status, total_cents, created_at, commit_us) VALUES ", tail: " ON DUPLICATE KEY UPDATE status=VALUES(status), total_cents=VALUES(total_cents), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,'%s',%d,'2026-01-01' + INTERVAL %d SECOND,%d)", id, 1+rnd.IntN(customers), statuses[rnd.IntN(4)], 100+rnd.IntN(1_000_000), id, us)
			}},
		{head: "INSERT INTO `" + e.srcDB + "`.obc_customers (id, name, tier, commit_us) VALUES ", tail: " ON DUPLICATE KEY UPDATE name=VALUES(name), tier=VALUES(tier), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,'customer-%d-%s','%s',%d)", id, id, strconv.FormatUint(rnd.Uint64(), 36), tiers[rnd.IntN(3)], us)
			}},
	}
	db := e.bed.MySQL.DB()
	// Preload (not part of the backlog): every customer and 30k orders.
	for _, t := range []struct {
		i int
		n int64
	}{{1, customers}, {0, 30_000}} {
		if err := tables[t.i].preload(ctx, db, t.n); err != nil {
			return err
		}
	}
	orders := int64(30_000)
	s.write = func(ctx context.Context) (map[string]int, error) {
		counts, err := upsertBacklog(ctx, db, w, tables, func(batch *upsertBatch, us int64) {
			switch p := rnd.Float64(); {
			case p < 0.05:
				batch.add(1, 1+rnd.Int64N(customers), us)
			default:
				id := 1 + rnd.Int64N(orders)
				if p < 0.65 {
					orders++
					id = orders
				}
				batch.add(0, id, us)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("writing the backlog of %s: %w", w.Name, err)
		}
		return map[string]int{s.proj.Topic: counts[0], s.proj.Joins[0].Topic: counts[1]}, nil
	}
	return nil
}

// messagesSource is the demo's chat: messages projected into
// messages_by_sender keyed by (sender, time, id); 90% new messages of
// 50–300 characters from 2,000 senders, 10% edits of an existing one.
func (e *env) messagesSource(ctx context.Context, w workload, prefix string, s *source) error {
	return e.chatSource(ctx, w, prefix, s, chatShape{table: "messages", projection: `  messages_by_sender:
    from: $src.$table
    sink: reads
    table: r_messages_by_sender
    key: [sender_id, created_at, id]
    shard_by: sender_id
    columns: {sender_id: sender_id, created_at: created_at, id: id, room: room, body: body, commit_us: commit_us}
`, step: "MICROSECOND", stepPerID: 1000})
}

// chatShape is what a chat workload projects, and how far apart its
// messages' created_at are (created_at = 2026-01-01 + id*stepPerID step).
// moveDays > 0: an edit also moves created_at by up to that many days
// either way, which moves the read key of a projection keyed on it.
type chatShape struct {
	table      string // the source table, in the projection as $table
	projection string
	step       string
	stepPerID  int64
	moveDays   int
}

// chatSource creates the messages table, preloads it and writes its
// backlog for a chat projection (messagesSource, messagesMonthSource).
func (e *env) chatSource(ctx context.Context, w workload, prefix string, s *source, shape chatShape) error {
	if err := e.bed.MySQL.Exec(ctx, "CREATE TABLE `"+e.srcDB+"`."+shape.table+" (id BIGINT PRIMARY KEY, sender_id INT NOT NULL, room VARCHAR(30) NOT NULL, body TEXT NOT NULL, created_at DATETIME(6) NOT NULL, commit_us BIGINT NOT NULL)"); err != nil {
		return err
	}
	var err error
	s.cfgPath, err = e.customConfig(prefix, []string{shape.table}, strings.ReplaceAll(shape.projection, "$table", shape.table))
	if err != nil {
		return err
	}
	db := e.bed.MySQL.DB()
	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while readside keeps every read table fresh and small")
	head := "INSERT INTO `" + e.srcDB + "`." + shape.table + " (id, sender_id, room, body, created_at, commit_us) VALUES "
	tail := " ON DUPLICATE KEY UPDATE body=VALUES(body), commit_us=VALUES(commit_us)"
	if shape.moveDays > 0 {
		tail += ", created_at=VALUES(created_at)"
	}
	message := func(b []byte, id, us int64, edit bool) []byte {
		var body []byte
		for n := 50 + rnd.IntN(250); len(body) < n; {
			body = append(body, words[rnd.IntN(len(words))]...)
			body = append(body, ' ')
		}
		created := fmt.Sprintf("'2026-01-01' + INTERVAL %d %s", id*shape.stepPerID, shape.step)
		if edit && shape.moveDays > 0 {
			created += fmt.Sprintf(" + INTERVAL %d DAY", rnd.IntN(2*shape.moveDays+1)-shape.moveDays)
		}
		return fmt.Appendf(b, "(%d,%d,'room-%d','%s %x',%s,%d)", id, 1+rnd.IntN(2000), rnd.IntN(50), body, rnd.Uint64(), created, us)
	}
	var maxID int64
	// txn writes one statement of n messages stamped us.
	txn := func(ctx context.Context, n int, updates float64, us int64) error {
		b := []byte(head)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			id, edit := maxID+1, maxID > 0 && rnd.Float64() < updates
			if edit {
				id = 1 + rnd.Int64N(maxID)
			} else {
				maxID++
			}
			b = message(b, id, us, edit)
		}
		if _, err := db.ExecContext(ctx, string(append(b, tail...))); err != nil {
			return fmt.Errorf("writing %s: %w", w.Name, err)
		}
		return nil
	}
	write := func(ctx context.Context, n int, updates float64) error {
		for done := 0; done < n; done += min(w.TxnRows, n-done) {
			if err := txn(ctx, min(w.TxnRows, n-done), updates, time.Now().UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(ctx, w.Preload, 0); err != nil {
		return err
	}
	s.write = func(ctx context.Context) (map[string]int, error) {
		return map[string]int{s.proj.Topic: w.Events}, write(ctx, w.Events, w.Updates)
	}
	// Live, a message's read row shows an edit when its commit_us moves
	// forward (an edit that moves the month inserts a new read row).
	s.live = func(ctx context.Context, n int, us int64) (int, error) { return n, txn(ctx, n, w.Updates, us) }
	s.stamp = stampRule{column: "commit_us"}
	return nil
}

// sysbenchSource is sysbench's oltp_write_only (Debian package sysbench,
// installed like the test bed's servers when missing and running as root)
// against the source: one table of 10,000 rows prepared before the backlog,
// then a fixed number of transactions (w.Events/4: each is an index
// update, a non-index update, a delete and an insert) on 2 threads with a
// fixed seed. The projection sbtest_by_k keys sbtest1 by (k, id): the
// index update moves the read key.
func (e *env) sysbenchSource(ctx context.Context, w workload, prefix string, s *source) error {
	bin, err := testbed.EnsureCommand(ctx, []string{"sysbench"}, "sysbench")
	if err != nil {
		return fmt.Errorf("%w: %v", errSkip, err)
	}
	dsn, err := driver.ParseDSN(e.bed.MySQL.AdminDSN())
	if err != nil {
		return err
	}
	host, port, _ := strings.Cut(dsn.Addr, ":")
	args := []string{"oltp_write_only", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port, "--mysql-user=" + dsn.User,
		"--mysql-password=" + dsn.Passwd, "--mysql-db=" + e.srcDB, "--tables=1", "--table-size=10000", "--rand-seed=" + strconv.Itoa(seed)}
	sysbench := func(ctx context.Context, extra ...string) error {
		cmd := exec.CommandContext(ctx, bin, append(append([]string{}, args...), extra...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("sysbench %s: %w\n%s", extra[len(extra)-1], err, out)
		}
		return nil
	}
	if err := sysbench(ctx, "prepare"); err != nil {
		return err
	}
	if s.cfgPath, err = e.customConfig(prefix, []string{"sbtest1"}, `  sbtest_by_k:
    from: $src.sbtest1
    sink: reads
    table: r_sbtest_by_k
    key: [k, id]
    shard_by: k
    columns: {k: k, id: id, c: c, pad: pad}
`); err != nil {
		return err
	}
	s.write = func(ctx context.Context) (map[string]int, error) {
		return nil, sysbench(ctx, "--threads=2", "--time=0", "--events="+strconv.Itoa(w.Events/4), "run")
	}
	return nil
}

// topicEnds are the end offsets of every topic a projection consumes (its
// own and its joins' parents'), and their sum.
func (e *env) topicEnds(ctx context.Context, p *projections.Projection) (map[string]map[int32]int64, int64) {
	out := map[string]map[int32]int64{}
	var total int64
	for _, t := range p.Topics() {
		m, sum := e.endOffsets(ctx, t)
		out[t], total = m, total+sum
	}
	return out, total
}

// appliedAll is appliedOffsetsOf over every topic of the projection.
func (e *env) appliedAll(ctx context.Context, p *projections.Projection) (map[string]map[int32]int64, int64, error) {
	out := map[string]map[int32]int64{}
	var total int64
	for _, t := range p.Topics() {
		m, sum, err := e.appliedOffsetsOf(ctx, p, t)
		if err != nil {
			return nil, 0, err
		}
		out[t], total = m, total+sum
	}
	return out, total, nil
}

// fanOutPending is, for a projection whose fan-out runs in the
// background, how many parents wait for their copy into the read rows and
// the age of the oldest note in µs (0, 0 for an in_batch projection).
func (e *env) fanOutPending(ctx context.Context, p *projections.Projection) (n, oldestUs int64, err error) {
	if p.FanOut != projections.FanOutBackground {
		return 0, 0, nil
	}
	n, oldest, err := e.sink.PendingFanOuts(ctx, p)
	return n, oldest.Microseconds(), err
}

// fanOutsDone reports whether a background fan-out has copied every
// parent noted (always true in_batch).
func (e *env) fanOutsDone(ctx context.Context, p *projections.Projection) (bool, error) {
	n, _, err := e.fanOutPending(ctx, p)
	return n == 0, err
}

func caughtUpAll(applied, ends map[string]map[int32]int64) bool {
	for t, end := range ends {
		if !caughtUp(applied[t], end) {
			return false
		}
	}
	return true
}
