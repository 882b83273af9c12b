package e2e

// The consistency checker of issue 42: a reader reads every read table of
// a shop's sink (the ledger shop's consistencyProjections, the rental
// shop's formsProjections) in one REPEATABLE READ transaction and checks
// the invariants every source transaction keeps at commit. A state that
// breaks one is a state the source never had.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

type ledgerOrder struct {
	customer, total, nLines int64
}

type ledgerLine struct {
	order, amount int64
}

type ledgerNested struct {
	total, nLines, count int64
	amounts              []int64 // nil: the array column is NULL
}

type ledgerSum struct {
	sum, n int64
}

type ledgerJoined struct {
	order, amount int64
	customer      sql.NullInt64
}

// ledgerSnapshot is what one reader transaction saw on one shard.
type ledgerSnapshot struct {
	accounts map[int64]int64 // id → balance
	orders   map[int64]ledgerOrder
	lines    map[int64]ledgerLine
	nested   map[int64]ledgerNested
	sums     map[int64]ledgerSum // order_id → sum(amount), count(*)
	joined   map[int64]ledgerJoined
}

// violations lists each invariant the snapshot breaks, at most a few
// samples per kind, each prefixed by its kind ("kind: sample"). accounts
// and balance are the number of accounts and the sum of their balances,
// constant at every source commit.
func (s ledgerSnapshot) violations(accounts int, balance int64) []string {
	var v violationList
	bad := v.add
	var sum int64
	for _, b := range s.accounts {
		sum += b
	}
	if len(s.accounts) != accounts || sum != balance {
		bad("balances", "%d accounts summing to %d, want %d summing to %d", len(s.accounts), sum, accounts, balance)
	}

	lineSum, lineCount := map[int64]int64{}, map[int64]int64{}
	for _, id := range sortedKeys(s.lines) {
		l := s.lines[id]
		lineSum[l.order] += l.amount
		lineCount[l.order]++
		if _, ok := s.orders[l.order]; !ok {
			bad("orphan line", "line %d of order %d, which the orders copy lacks", id, l.order)
		}
		j, ok := s.joined[id]
		switch {
		case !ok:
			bad("join", "line %d missing from the joined copy", id)
		case j.order != l.order || j.amount != l.amount:
			bad("join", "line %d is (order %d, amount %d) in the joined copy, (%d, %d) in the lines copy", id, j.order, j.amount, l.order, l.amount)
		}
	}
	for _, id := range sortedKeys(s.joined) {
		j := s.joined[id]
		if _, ok := s.lines[id]; !ok {
			bad("join", "line %d in the joined copy only", id)
			continue
		}
		if o, ok := s.orders[j.order]; ok && (!j.customer.Valid || j.customer.Int64 != o.customer) {
			bad("join", "line %d carries customer %v, its order %d has %d", id, nullText(j.customer), j.order, o.customer)
		}
	}

	for _, id := range sortedKeys(s.orders) {
		o := s.orders[id]
		if lineSum[id] != o.total || lineCount[id] != o.nLines {
			bad("order vs lines", "order %d: total %d over %d lines, the lines copy holds %d over %d", id, o.total, o.nLines, lineSum[id], lineCount[id])
		}
		n, ok := s.nested[id]
		if !ok {
			bad("children", "order %d missing from the nested copy", id)
		} else {
			var sum int64
			for _, a := range n.amounts {
				sum += a
			}
			if n.total != o.total || n.nLines != o.nLines || sum != o.total || n.count != o.nLines || int64(len(n.amounts)) != n.count {
				bad("children", "order %d: total %d and %d lines in the orders copy; the nested row says total %d, n_lines %d, lines_count %d, array of %d summing to %d",
					id, o.total, o.nLines, n.total, n.nLines, n.count, len(n.amounts), sum)
			}
		}
		a, ok := s.sums[id]
		switch {
		case o.nLines == 0 && ok:
			bad("aggregate", "order %d has no lines, its aggregate row says sum %d over %d", id, a.sum, a.n)
		case o.nLines > 0 && !ok:
			bad("aggregate", "order %d: total %d over %d lines, no aggregate row", id, o.total, o.nLines)
		case ok && (a.sum != o.total || a.n != o.nLines):
			bad("aggregate", "order %d: total %d over %d lines, the aggregate says %d over %d", id, o.total, o.nLines, a.sum, a.n)
		}
	}
	for _, id := range sortedKeys(s.nested) {
		if _, ok := s.orders[id]; !ok {
			bad("children", "order %d in the nested copy only", id)
		}
	}
	for _, id := range sortedKeys(s.sums) {
		if _, ok := s.orders[id]; !ok {
			bad("aggregate", "aggregate row of order %d, which the orders copy lacks (sum %d over %d)", id, s.sums[id].sum, s.sums[id].n)
		}
	}
	return v.list()
}

// violationList collects a snapshot's violations, at most a few samples
// per kind, each prefixed by its kind ("kind: sample").
type violationList struct {
	out  []string
	seen map[string]int
}

func (v *violationList) add(kind, format string, args ...any) {
	if v.seen == nil {
		v.seen = map[string]int{}
	}
	if v.seen[kind]++; v.seen[kind] <= 3 {
		v.out = append(v.out, kind+": "+fmt.Sprintf(format, args...))
	}
}

// list is the samples and, per kind with more, how many more.
func (v *violationList) list() []string {
	out := v.out
	for _, kind := range slices.Sorted(maps.Keys(v.seen)) {
		if n := v.seen[kind]; n > 3 {
			out = append(out, fmt.Sprintf("%s: %d more", kind, n-3))
		}
	}
	return out
}

func nullText(v sql.NullInt64) string {
	if !v.Valid {
		return "NULL"
	}
	return fmt.Sprint(v.Int64)
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// scanSnapshot scans every row of read table db.table (its columns cols) on
// conn, in the reader's open snapshot.
func scanSnapshot(ctx context.Context, conn *sql.Conn, db, table, cols string, scan func(*sql.Rows) error) error {
	rows, err := conn.QueryContext(ctx, "SELECT "+cols+" FROM `"+db+"`.`"+table+"`")
	if err != nil {
		return fmt.Errorf("reading %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("reading %s.%s: %w", db, table, err)
		}
	}
	return rows.Err()
}

// readLedger reads every read table of the ledger shop in database db,
// in the snapshot open on conn.
func readLedger(ctx context.Context, conn *sql.Conn, db string) (ledgerSnapshot, error) {
	s := ledgerSnapshot{accounts: map[int64]int64{}, orders: map[int64]ledgerOrder{}, lines: map[int64]ledgerLine{},
		nested: map[int64]ledgerNested{}, sums: map[int64]ledgerSum{}, joined: map[int64]ledgerJoined{}}
	q := func(table, cols string, scan func(*sql.Rows) error) error {
		return scanSnapshot(ctx, conn, db, table, cols, scan)
	}
	err := q("acct", "id, balance", func(r *sql.Rows) error {
		var id, b int64
		err := r.Scan(&id, &b)
		s.accounts[id] = b
		return err
	})
	if err == nil {
		err = q("ord", "id, customer_id, total, n_lines", func(r *sql.Rows) error {
			var id int64
			var o ledgerOrder
			err := r.Scan(&id, &o.customer, &o.total, &o.nLines)
			s.orders[id] = o
			return err
		})
	}
	if err == nil {
		err = q("line", "id, order_id, amount", func(r *sql.Rows) error {
			var id int64
			var l ledgerLine
			err := r.Scan(&id, &l.order, &l.amount)
			s.lines[id] = l
			return err
		})
	}
	if err == nil {
		err = q("ord_nested", "id, total, n_lines, `lines`, lines_count", func(r *sql.Rows) error {
			var id int64
			var n ledgerNested
			var arr sql.NullString
			if err := r.Scan(&id, &n.total, &n.nLines, &arr, &n.count); err != nil {
				return err
			}
			if arr.Valid {
				var elems []struct{ Amount int64 }
				if err := json.Unmarshal([]byte(arr.String), &elems); err != nil {
					return fmt.Errorf("order %d's lines %q: %w", id, arr.String, err)
				}
				n.amounts = []int64{}
				for _, e := range elems {
					n.amounts = append(n.amounts, e.Amount)
				}
			}
			s.nested[id] = n
			return nil
		})
	}
	if err == nil {
		err = q("line_sums", "order_id, amount_sum, n", func(r *sql.Rows) error {
			var id int64
			var a ledgerSum
			err := r.Scan(&id, &a.sum, &a.n)
			s.sums[id] = a
			return err
		})
	}
	if err == nil {
		err = q("line_cust", "id, order_id, amount, customer_id", func(r *sql.Rows) error {
			var id int64
			var j ledgerJoined
			err := r.Scan(&id, &j.order, &j.amount, &j.customer)
			s.joined[id] = j
			return err
		})
	}
	return s, err
}

// checkLedger is the ledger shop's snapshot check: accounts and balance
// are the number of accounts and the sum of their balances.
func checkLedger(accounts int, balance int64) func(context.Context, *sql.Conn, string) ([]string, error) {
	return func(ctx context.Context, conn *sql.Conn, db string) ([]string, error) {
		s, err := readLedger(ctx, conn, db)
		if err != nil {
			return nil, err
		}
		return s.violations(accounts, balance), nil
	}
}

// snapshotCheck reads every read table of a shop in database db in the
// snapshot open on conn and returns the invariants the snapshot breaks,
// each "kind: sample".
type snapshotCheck func(ctx context.Context, conn *sql.Conn, db string) ([]string, error)

// consistencyChecker counts the snapshots its readers took and those
// that broke an invariant, and keeps the first few violations.
type consistencyChecker struct {
	check    snapshotCheck
	frontier bool // a transactional sink: its frontier only moves forward

	mu        sync.Mutex
	frontiers map[[2]int64]bool // distinct frontiers the readers saw
	snapshots int
	torn      int
	byKind    map[string]int
	samples   []string
}

// read loops until ctx ends, each time reading database db of the sink
// in one transaction and checking it; it returns the first read error.
func (c *consistencyChecker) read(ctx context.Context, sink *sql.DB, db string) error {
	conn, err := sink.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return err
	}
	var last [2]int64
	for ctx.Err() == nil {
		vs, frontier, err := c.snapshot(ctx, conn, db)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if frontier[0] < last[0] || frontier[1] < last[1] {
			vs = append(vs, fmt.Sprintf("frontier: moved back from offset %d, %d transactions to %d, %d", last[0], last[1], frontier[0], frontier[1]))
		}
		last = frontier
		c.record(db, frontier, vs)
		// A breath between snapshots: the readers share two cores with
		// the daemon, the source and the broker.
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// snapshot checks database db in one transaction with a consistent
// snapshot; on a transactional sink it also reads, in it, the applied
// cut's checkpoint offset and source transactions from
// _readside_frontier.
func (c *consistencyChecker) snapshot(ctx context.Context, conn *sql.Conn, db string) (vs []string, frontier [2]int64, err error) {
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return nil, frontier, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck // a read-only transaction
	if vs, err = c.check(ctx, conn, db); err != nil {
		return nil, frontier, err
	}
	if c.frontier {
		err = conn.QueryRowContext(ctx, "SELECT checkpoint_offset, transactions FROM `"+db+"`.`_readside_frontier` WHERE sink = 'reads'").Scan(&frontier[0], &frontier[1])
		if err != nil {
			err = fmt.Errorf("reading %s._readside_frontier: %w", db, err)
		}
	}
	return vs, frontier, err
}

func (c *consistencyChecker) record(db string, frontier [2]int64, vs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKind == nil {
		c.byKind = map[string]int{}
		c.frontiers = map[[2]int64]bool{}
	}
	if c.frontier {
		c.frontiers[frontier] = true
	}
	c.snapshots++
	if len(vs) == 0 {
		return
	}
	c.torn++
	kinds := map[string]bool{}
	for _, v := range vs {
		kind, _, _ := strings.Cut(v, ":")
		kinds[kind] = true
	}
	fresh := false // a kind no sample shows yet
	for k := range kinds {
		if c.byKind[k]++; c.byKind[k] == 1 {
			fresh = true
		}
	}
	if fresh && len(c.samples) < 8 {
		c.samples = append(c.samples, fmt.Sprintf("%s snapshot %d at %s: %s", db, c.snapshots, time.Now().UTC().Format("15:04:05.000"), strings.Join(vs, "; ")))
	}
}

// report is the checker's counts, by kind, and its samples.
func (c *consistencyChecker) report() (snapshots, torn int, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d snapshots, %d with a state the source never had", c.snapshots, c.torn)
	if c.frontier {
		var most int64
		for f := range c.frontiers {
			most = max(most, f[1])
		}
		fmt.Fprintf(&b, "; %d distinct frontiers seen, the last at %d source transactions", len(c.frontiers), most)
	}
	kinds := make([]string, 0, len(c.byKind))
	for k := range c.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "; %s in %d", k, c.byKind[k])
	}
	for _, s := range c.samples {
		b.WriteString("\n  " + s)
	}
	return c.snapshots, c.torn, b.String()
}

// TestLedgerViolations: the checker decides issue 42's tests, so each
// torn state it exists to see must be reported under its kind, and a
// state the source could have had must not be.
func TestLedgerViolations(t *testing.T) {
	whole := func() ledgerSnapshot {
		return ledgerSnapshot{
			accounts: map[int64]int64{1: 50, 2: 150},
			orders:   map[int64]ledgerOrder{10: {customer: 7, total: 30, nLines: 2}, 11: {customer: 8, total: 0, nLines: 0}},
			lines:    map[int64]ledgerLine{100: {order: 10, amount: 10}, 101: {order: 10, amount: 20}},
			nested:   map[int64]ledgerNested{10: {total: 30, nLines: 2, count: 2, amounts: []int64{10, 20}}, 11: {}},
			sums:     map[int64]ledgerSum{10: {sum: 30, n: 2}},
			joined: map[int64]ledgerJoined{100: {order: 10, amount: 10, customer: sql.NullInt64{Int64: 7, Valid: true}},
				101: {order: 10, amount: 20, customer: sql.NullInt64{Int64: 7, Valid: true}}},
		}
	}
	cases := []struct {
		why  string
		edit func(*ledgerSnapshot)
		kind string // "" when the state is one the source had
	}{
		{"a state every transaction kept whole passes", func(*ledgerSnapshot) {}, ""},
		{"a transfer with one side applied breaks the sum", func(s *ledgerSnapshot) { s.accounts[1] += 5 }, "balances"},
		{"a missing account breaks the count", func(s *ledgerSnapshot) { delete(s.accounts, 2); s.accounts[1] = 200 }, "balances"},
		{"a line ahead of its order's total", func(s *ledgerSnapshot) { s.lines[101] = ledgerLine{order: 10, amount: 25} }, "order vs lines"},
		{"a line whose order is not there yet", func(s *ledgerSnapshot) { s.lines[102] = ledgerLine{order: 12, amount: 1} }, "orphan line"},
		{"a children array behind its order", func(s *ledgerSnapshot) {
			s.nested[10] = ledgerNested{total: 30, nLines: 2, count: 1, amounts: []int64{10}}
		}, "children"},
		{"a nested row behind the orders copy", func(s *ledgerSnapshot) {
			s.nested[10] = ledgerNested{total: 10, nLines: 1, count: 1, amounts: []int64{10}}
		}, "children"},
		{"an order the nested copy lacks", func(s *ledgerSnapshot) { delete(s.nested, 11) }, "children"},
		{"an aggregate ahead of its details", func(s *ledgerSnapshot) { s.sums[10] = ledgerSum{sum: 45, n: 3} }, "aggregate"},
		{"an aggregate row of an empty order", func(s *ledgerSnapshot) { s.sums[11] = ledgerSum{sum: 0, n: 0} }, "aggregate"},
		{"an aggregate missing for an order with lines", func(s *ledgerSnapshot) { delete(s.sums, 10) }, "aggregate"},
		{"a joined line whose order is missing in the join", func(s *ledgerSnapshot) { s.joined[100] = ledgerJoined{order: 10, amount: 10} }, "join"},
		{"a joined line carrying the order's old customer", func(s *ledgerSnapshot) {
			s.joined[101] = ledgerJoined{order: 10, amount: 20, customer: sql.NullInt64{Int64: 9, Valid: true}}
		}, "join"},
		{"a line the joined copy lacks", func(s *ledgerSnapshot) { delete(s.joined, 100) }, "join"},
	}
	for _, c := range cases {
		s := whole()
		c.edit(&s)
		got := s.violations(2, 200)
		switch {
		case c.kind == "" && len(got) > 0:
			t.Errorf("%s: reported %q", c.why, got)
		case c.kind != "" && !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, c.kind+": ") }):
			t.Errorf("%s: want a %q violation, got %q", c.why, c.kind, got)
		}
	}
}
