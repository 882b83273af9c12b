package projections_test

import (
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// lineShop is orders and their lines, nested: orders_with_lines keyed
// (and sharded, over two shards) by customer and order, so an order
// moving to another customer is a read key move, with its lines as a
// JSON array capped at 3 elements ordered by line_no (ties on purpose:
// broken by the line's primary key) and their count. The lines' order_id
// is narrower than the orders' id, as happens.
type lineShop struct {
	bed    *testbed.Bed
	cfg    config.Config
	src    string
	shards []string
	p      *projections.Projection
	sink   *sinks.Sharded
}

const (
	lineOrders = "CREATE TABLE `%s`.orders (id INT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL)"
	lineLines  = "CREATE TABLE `%s`.order_lines (id INT PRIMARY KEY, order_id MEDIUMINT NULL, line_no INT NOT NULL, sku VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		" qty INT NOT NULL, price DECIMAL(10,2) NULL, at DATETIME(3) NULL, KEY (order_id))"
	lineLimit = 3
)

func newLineShop(t *testing.T, bed *testbed.Bed, keyranges ...string) *lineShop {
	t.Helper()
	ctx := t.Context()
	s := &lineShop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "lshop"); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{lineOrders, lineLines} {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf(ddl, s.src)); err != nil {
			t.Fatal(err)
		}
	}
	s.cfg = bed.Config("ch", s.src+".orders", s.src+".order_lines")
	s.cfg.Projections = map[string]config.Projection{"orders_with_lines": {
		From: s.src + ".orders", Sink: "reads", Key: []string{"customer_id", "id"}, ShardBy: "customer_id",
		Columns: map[string]string{"customer_id": "customer_id", "id": "id", "status": "status"},
		Children: map[string]config.Children{"lines": {
			From: s.src + ".order_lines", On: map[string]string{"order_id": "id"},
			Columns: map[string]string{"sku": "sku", "qty": "qty", "price": "price", "at": "at", "line": "line_no"},
			OrderBy: []string{"line_no"}, Limit: lineLimit,
		}},
	}}
	s.openSink(t, keyranges...)
	return s
}

// openSink creates fresh sink databases for keyranges with the
// projection's tables in them.
// newTablesShop is a lineShop over a source database of its own (named
// after name) holding the tables ddl creates (each with %s for the
// database), captured as tables, for a test to declare its projection
// on; the caller sets cfg.Projections and opens the sink.
func newTablesShop(t *testing.T, bed *testbed.Bed, name string, tables []string, ddl ...string) *lineShop {
	t.Helper()
	ctx := t.Context()
	s := &lineShop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	var captured []string
	for _, d := range ddl {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf(d, s.src)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tbl := range tables {
		captured = append(captured, s.src+"."+tbl)
	}
	s.cfg = bed.Config(name, captured...)
	return s
}

func (s *lineShop) openSink(t *testing.T, keyranges ...string) {
	t.Helper()
	ctx := t.Context()
	sink := config.Sink{}
	s.shards = nil
	for _, kr := range keyranges {
		db, err := s.bed.MySQL.CreateDatabase(ctx, "lreads")
		if err != nil {
			t.Fatal(err)
		}
		s.shards = append(s.shards, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(s.bed.MySQL.AdminDSN() + db)})
	}
	s.cfg.Sinks = map[string]config.Sink{"reads": sink}
	if err := s.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.p = ps[0]
	if s.sink, err = sinks.OpenSharded(ctx, "reads", sink); err != nil {
		t.Fatal(err)
	}
	sk := s.sink
	t.Cleanup(func() { sk.Close() })
	types, err := s.p.SourceColumns(ctx, s.bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.sink.Exec(ctx, sinks.DDL(s.p, types)); err != nil {
		t.Fatal(err)
	}
	if err := s.sink.CheckReadTable(ctx, s.p); err != nil {
		t.Fatal(err)
	}
	noDrift(t, s.sink, s.p, types)
}

// noDrift fails unless the read, state and link tables the DDL made on
// the server are what the plan wants (no false drift for the drift check
// to report).
func noDrift(t *testing.T, sink *sinks.Sharded, p *projections.Projection, types projections.Types) {
	t.Helper()
	drifts, err := sink.Drifts(t.Context(), p, types)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drifts {
		t.Errorf("the tables DDL just made drift from the plan: %s.%s: %s (sink %s, planned %s)", d.Table, d.Column, d.Why, d.Existing, d.Planned)
	}
}

func (s *lineShop) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	q = strings.ReplaceAll(q, "$.", "`"+s.src+"`.")
	if _, err := s.bed.MySQL.DB().ExecContext(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// expected is what the read table must hold, computed on the source by
// the SQL the array is defined by.
func (s *lineShop) expected(t *testing.T) string {
	l := "`" + s.src + "`.order_lines l WHERE l.order_id = o.id"
	return testbed.RowsText(t, s.bed.MySQL.DB(), fmt.Sprintf("SELECT o.customer_id, o.id, o.status,"+
		" (SELECT JSON_ARRAYAGG(JSON_OBJECT('at', l.at, 'line', l.line_no, 'price', l.price, 'qty', l.qty, 'sku', l.sku) ORDER BY l.line_no, l.id LIMIT %d) FROM %s),"+
		" (SELECT COUNT(*) FROM %s) FROM `%s`.orders o ORDER BY 1, 2", lineLimit, l, l, s.src))
}

func (s *lineShop) actual(t *testing.T) string {
	var parts []string
	for _, db := range s.shards {
		parts = append(parts, "SELECT customer_id, id, status, `lines`, lines_count FROM `"+db+"`.orders_with_lines")
	}
	return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1, 2")
}

// converge waits until the read table equals the SQL on the source, whose
// text must contain every string of want (so a step shows what it is
// about).
func (s *lineShop) converge(t *testing.T, step string, want ...string) {
	t.Helper()
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		exp, got := s.expected(t), s.actual(t)
		return exp == got, fmt.Sprintf("%s: the read table differs from JSON_ARRAYAGG on the source:\nwant:\n%.3000s\ngot:\n%.3000s", step, exp, got)
	})
	exp := s.expected(t)
	for _, w := range want {
		if !strings.Contains(exp, w) {
			t.Fatalf("%s: the source query has no %q, the step tests nothing:\n%s", step, w, exp)
		}
	}
}

// TestChildrenSteps: each thing a nested array must follow, one at a
// time, live (tailer, projector, two shards): lines before and after their
// order, a line updated (quotes and non-ASCII text), deleted, moved to
// another order and unlinked (NULL order_id), the order moving to another
// customer (its read key), deleted and inserted again (its lines come
// back), the limit capping the array while the count counts every line,
// ties in line_no, and the truncation of the lines table.
func TestChildrenSteps(t *testing.T) {
	bed := testbed.Get(t)
	s := newLineShop(t, bed, "-80", "80-")
	runTailer(t, bed, s.cfg)
	defer startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)()

	s.exec(t, "INSERT INTO $.order_lines VALUES (1, 1, 1, 'A-1', 2, 9.50, '2024-01-02 03:04:05.678'), (2, 1, 2, 'B-2', 1, NULL, NULL)")
	s.exec(t, "INSERT INTO $.orders VALUES (1, 10, 'new')")
	s.converge(t, "lines before their order", `10|1|new|[{"at": "2024-01-02 03:04:05.678", "line": 1, "price": 9.50, "qty": 2, "sku": "A-1"}`, "|2|")
	s.exec(t, "INSERT INTO $.orders VALUES (2, 20, 'new'), (2147483647, 20, 'beyond')")
	s.converge(t, "an order whose id the lines' order_id cannot hold", "20|2147483647|beyond|<nil>|0|")
	s.exec(t, "INSERT INTO $.order_lines VALUES (3, 2, 1, 'C-3', 5, 1.00, NULL)")
	s.converge(t, "a line after its order", `20|2|new|[{"at": null, "line": 1, "price": 1.00, "qty": 5, "sku": "C-3"}]|1|`)
	s.exec(t, `UPDATE $.order_lines SET sku = 'it''s "ünï" \\ ✓', qty = 7 WHERE id = 2`)
	s.converge(t, "a line updated", `it's \"ünï\" \\ ✓`)
	s.exec(t, "DELETE FROM $.order_lines WHERE id = 1")
	s.converge(t, "a line deleted", `10|1|new|[{"at": null, "line": 2,`, "|1|")
	s.exec(t, "UPDATE $.order_lines SET order_id = 2 WHERE id = 2")
	s.converge(t, "a line moved to another order", "10|1|new|<nil>|0|", "|2|")
	s.exec(t, "UPDATE $.order_lines SET order_id = NULL WHERE id = 3")
	s.converge(t, "a line unlinked", `20|2|new|[{"at": null, "line": 2,`)
	s.exec(t, "UPDATE $.orders SET customer_id = 99, status = 'moved' WHERE id = 2")
	s.converge(t, "the order moved to another customer (read key)", `99|2|moved|[{"at": null, "line": 2,`)
	s.exec(t, "DELETE FROM $.orders WHERE id = 2")
	s.converge(t, "the order deleted")
	s.exec(t, "INSERT INTO $.orders VALUES (2, 30, 'back')")
	s.converge(t, "the order inserted again", `30|2|back|[{"at": null, "line": 2,`)
	s.exec(t, "INSERT INTO $.order_lines VALUES (10, 2, 5, 'E', 1, NULL, NULL), (11, 2, 0, 'F', 1, NULL, NULL), (12, 2, 0, 'G', 1, NULL, NULL), (13, 2, 5, 'H', 1, NULL, NULL)")
	s.converge(t, "the limit caps the array, the count counts every line", `"sku": "F"},{"at": null, "line": 0, "price": null, "qty": 1, "sku": "G"},{"at": null, "line": 2,`, "|5|")
	s.exec(t, "UPDATE $.order_lines SET line_no = 0 WHERE id IN (10, 13)")
	s.converge(t, "ties in line_no broken by the line's primary key", `"sku": "E"},{"at": null, "line": 0, "price": null, "qty": 1, "sku": "F"},{"at": null, "line": 0, "price": null, "qty": 1, "sku": "G"}]|5|`)
	s.exec(t, "TRUNCATE TABLE $.order_lines")
	s.converge(t, "the lines truncated", "30|2|back|<nil>|0|")
	s.exec(t, "INSERT INTO $.order_lines VALUES (20, 2, 1, 'Z', 1, NULL, NULL)")
	s.converge(t, "a line after the truncation", `30|2|back|[{"at": null, "line": 1, "price": null, "qty": 1, "sku": "Z"}]|1|`)
}

// write is a seeded workload: orders created, moved between customers
// (read key moves), renamed and deleted; lines created (also before their
// order), changed, moved between orders, unlinked and deleted.
func (s *lineShop) write(t *testing.T, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 17))
	order := func() any {
		if rng.IntN(10) == 0 {
			return nil
		}
		return 1 + rng.IntN(60)
	}
	for i := range ops {
		oid, cid, lid := 1+rng.IntN(60), 1+rng.IntN(12), 1+rng.IntN(400)
		switch r := rng.IntN(100); {
		case r < 12:
			s.exec(t, "INSERT INTO $.orders VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE status = VALUES(status)", oid, cid, fmt.Sprint("s", i))
		case r < 20:
			s.exec(t, "UPDATE $.orders SET customer_id = ? WHERE id = ?", cid, oid)
		case r < 23:
			s.exec(t, "DELETE FROM $.orders WHERE id = ?", oid)
		case r < 55:
			s.exec(t, "INSERT INTO $.order_lines VALUES (?, ?, ?, ?, ?, ?, NOW(3)) ON DUPLICATE KEY UPDATE qty = qty + 1", lid, order(), rng.IntN(4), fmt.Sprintf("sku '%d' ✓", rng.IntN(50)), rng.IntN(9), fmt.Sprintf("%d.%02d", rng.IntN(100), rng.IntN(100)))
		case r < 70:
			s.exec(t, "UPDATE $.order_lines SET order_id = ? WHERE id = ?", order(), lid)
		case r < 82:
			s.exec(t, "UPDATE $.order_lines SET line_no = ?, price = NULL WHERE id = ?", rng.IntN(4), lid)
		case r < 88:
			s.exec(t, "UPDATE $.order_lines SET qty = qty + 1 WHERE order_id = ?", oid) // multi-row
		default:
			s.exec(t, "DELETE FROM $.order_lines WHERE id = ?", lid)
		}
	}
}

// TestChildrenLive: tailer and two concurrent projector workers (one
// stopped and started again midway) keep the arrays over two shards
// while the workload runs; they end equal to JSON_ARRAYAGG on the source.
// Then the whole history, applied to a fresh sink shuffled across batches
// with a fifth duplicated, converges to the same.
func TestChildrenLive(t *testing.T) {
	bed := testbed.Get(t)
	s := newLineShop(t, bed, "-80", "80-")
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	a := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	b := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.write(t, seed, 1200)
	b()
	s.write(t, seed+1, 800)
	b = startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.converge(t, "live workload")
	a()
	b()
	exp := s.expected(t)
	t.Logf("converged: %d orders, %d with lines", strings.Count(exp, "\n"), strings.Count(exp, "[{"))

	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topics()...)
	s.openSink(t, "-80", "80-")
	applyShuffled(t, s.sink, []*projections.Projection{s.p}, records, rand.New(rand.NewPCG(seed, 5)))
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatalf("shuffled history differs from JSON_ARRAYAGG on the source:\nwant:\n%.4000s\ngot:\n%.4000s", want, got)
	}
	t.Logf("shuffled history with duplicates equals JSON_ARRAYAGG on the source")
}

// childWrite is the state of line id under order oid, as Build makes it.
func (s *lineShop) childWrite(id, oid int, version uint64) projections.ChildWrite {
	c := s.p.Children[0]
	vals := map[string]any{"order_id": oid, "line_no": 1, "id": id, "at": nil, "price": "1.00", "qty": 1, "sku": "x"}
	w := projections.ChildWrite{SourceKey: fmt.Sprintf(`{"id":%d}`, id), Version: version,
		Link: projections.ValuesOf(oid), LinkKey: fmt.Sprint(oid)}
	for _, col := range c.StateColumns() {
		w.Values = append(w.Values, projections.ValueOf(vals[col]))
	}
	return w
}

// TestChildrenRace: an order and its first line, applied at the same
// moment by two sink transactions, round after round. The line's
// transaction refreshes the arrays of the order and of another order F,
// whose read row the test holds locked: it has passed the order (no row
// yet) and waits at F. The order's transaction then upserts the order and
// reads the lines as last committed, without the line. Without the link
// lock, which makes the order's transaction wait for the line's, both
// miss each other and the order keeps an empty array for good.
func TestChildrenRace(t *testing.T) {
	bed := testbed.Get(t)
	s := newLineShop(t, bed, "-")
	ctx := t.Context()
	db := s.sink.Shards[0].DB()
	v := uint64(time.Now().Unix()) << 20
	next := func() uint64 { v++; return v }
	apply := func(b *projections.Batch) error { return s.sink.Apply(ctx, s.p, b) }
	order := func(cid, id int) projections.Write {
		return projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(cid, "\x00", id), Version: next(), Values: projections.ValuesOf(cid, id, "new")}
	}
	// F sorts after every order of the test, by id and by read key.
	const fCustomer, fID = 1000000, 5000000
	if err := apply(&projections.Batch{Writes: []projections.Write{order(fCustomer, fID)}}); err != nil {
		t.Fatal(err)
	}
	const rounds = 10
	for r := 1; r <= rounds; r++ {
		oid, lid := 100000+r, 1000000+r
		line := &projections.Batch{ChildWrites: []projections.ChildWrite{s.childWrite(lid, oid, next()), s.childWrite(2000000, fID, next())}}
		s.raceBehindF(t, fCustomer, fID, line, &projections.Batch{Writes: []projections.Write{order(r, oid)}})
		var n int
		var lines *string
		if err := db.QueryRowContext(ctx, "SELECT lines_count, `lines` FROM orders_with_lines WHERE customer_id = ? AND id = ?", r, oid).Scan(&n, &lines); err != nil {
			t.Fatal(err)
		}
		if n != 1 || lines == nil {
			t.Fatalf("round %d: the order applied beside its first line shows %d lines (array %v), want 1", r, n, lines)
		}
	}
	t.Logf("%d rounds: every order applied beside its first line shows it", rounds)
}

// TestChildrenRaceOldParent: a line moved away from an order whose read
// row does not exist yet (its lines came first), and that order's first
// upsert, applied at the same moment by two sink transactions, round
// after round. The line's transaction refreshes the old order (no row:
// nothing to lock), the new one and order F, whose read row the test
// holds locked. The order's transaction then upserts the old order and
// reads its lines as last committed, the moved line still among them.
// Without the lock of the old parent's link, which makes the order's
// transaction wait for the line's, the old order keeps the line for
// good.
func TestChildrenRaceOldParent(t *testing.T) {
	bed := testbed.Get(t)
	s := newLineShop(t, bed, "-")
	ctx := t.Context()
	db := s.sink.Shards[0].DB()
	v := uint64(time.Now().Unix()) << 20
	next := func() uint64 { v++; return v }
	apply := func(b *projections.Batch) {
		t.Helper()
		if err := s.sink.Apply(ctx, s.p, b); err != nil {
			t.Fatal(err)
		}
	}
	const fCustomer, fID = 1000000, 5000000
	apply(&projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: fmt.Sprint(fCustomer, "\x00", fID), Version: next(), Values: projections.ValuesOf(fCustomer, fID, "new")}}})
	const rounds = 10
	for r := 1; r <= rounds; r++ {
		from, to, lid := 100000+2*r, 100001+2*r, 1000000+r
		apply(&projections.Batch{ChildWrites: []projections.ChildWrite{s.childWrite(lid, from, next())}})
		move := &projections.Batch{ChildWrites: []projections.ChildWrite{s.childWrite(lid, to, next()), s.childWrite(2000000+r, fID, next())}}
		upsert := &projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: fmt.Sprint(r, "\x00", from), Version: next(), Values: projections.ValuesOf(r, from, "new")}}}
		s.raceBehindF(t, fCustomer, fID, move, upsert)
		if got := testbed.RowsText(t, db, "SELECT lines_count, `lines` FROM orders_with_lines WHERE customer_id = ? AND id = ?", r, from); got != "0|<nil>|\n" {
			t.Fatalf("round %d: the order its line left, upserted beside the move, shows %q, want no lines", r, got)
		}
	}
	t.Logf("%d rounds: every order upserted beside a move of its line away shows none", rounds)
}

// raceBehindF applies first and then second in two sink transactions at
// the same moment, with order F's read row held locked: first waits at F
// (its array is refreshed last), and second either commits or waits for
// first; then F is released and both must succeed.
func (s *lineShop) raceBehindF(t *testing.T, fCustomer, fID int, first, second *projections.Batch) {
	t.Helper()
	s.raceBehind(t, "SELECT id FROM orders_with_lines WHERE customer_id = ? AND id = ? FOR UPDATE", []any{fCustomer, fID}, first, second)
}

// raceBehind is raceBehindF with the held row read by hold(args).
func (s *lineShop) raceBehind(t *testing.T, holdQuery string, args []any, first, second *projections.Batch) {
	t.Helper()
	ctx := t.Context()
	db := s.sink.Shards[0].DB()
	waits := func() int {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	hold, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(ctx, holdQuery, args...); err != nil {
		t.Fatal(err)
	}
	firstDone, secondDone := make(chan error, 1), make(chan error, 1)
	go func() { firstDone <- s.sink.Apply(ctx, s.p, first) }()
	testbed.Eventually(t, 60*time.Second, func() (bool, string) {
		return waits() >= 1, "the first transaction never waited for order F's row"
	})
	go func() { secondDone <- s.sink.Apply(ctx, s.p, second) }()
	var secondErr error
	settled := false
	testbed.Eventually(t, 60*time.Second, func() (bool, string) {
		select {
		case secondErr = <-secondDone:
			settled = true
			return true, ""
		default:
		}
		return waits() >= 2, "the second transaction neither committed nor waited"
	})
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if !settled {
		secondErr = <-secondDone
	}
	if secondErr != nil {
		t.Fatal(secondErr)
	}
}

// childBinary are the type matrix's binary columns (BINARY, VARBINARY,
// BLOB, BIT), which an element cannot hold: MariaDB's JSON_OBJECT writes
// their bytes as they are, which is no JSON (checkChildren refuses them).
var childBinary = map[string]bool{"bn": true, "vb": true, "bl": true, "b1": true, "b64": true}

// TestChildrenElementTypes: every value type an event carries that an
// element can hold (the type matrix: integers at their edges, decimals,
// floats, dates and times with fractions, zero dates, strings with quotes,
// control characters and non-ASCII text in several charsets, JSON, ENUM,
// SET and NULLs), nested as elements, is rendered exactly as the server's own
// JSON_OBJECT renders the source row: each parent's array equals
// JSON_ARRAYAGG(JSON_OBJECT(…) ORDER BY id) on the source, byte for byte.
func TestChildrenElementTypes(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "ctypes")
	if err != nil {
		t.Fatal(err)
	}
	var defs, srcMembers []string
	cols := map[string]string{}
	for _, c := range typeMatrix {
		defs = append(defs, fmt.Sprintf("`%s` %s NULL", c.name, c.def))
		if !childBinary[c.name] {
			cols[c.name] = c.name
		}
	}
	sorted := make([]string, 0, len(cols))
	for name := range cols {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	for _, name := range sorted {
		srcMembers = append(srcMembers, fmt.Sprintf("'%s', i.`%s`", name, name))
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.parents (id INT PRIMARY KEY)",
		"CREATE TABLE `"+src+"`.items (id INT PRIMARY KEY, parent_id INT NULL, "+strings.Join(defs, ", ")+")"); err != nil {
		t.Fatal(err)
	}
	// TIMESTAMPs are written and rendered in UTC, as the sink's sessions do.
	utc, err := sql.Open("mysql", bed.MySQL.AdminDSN()+src+"?time_zone=%27%2B00%3A00%27")
	if err != nil {
		t.Fatal(err)
	}
	defer utc.Close()
	cfg := bed.Config("ct", src+".parents", src+".items")
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "ctreads")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"parents_with_items": {
		From: src + ".parents", Sink: "reads", Key: []string{"id"}, Columns: map[string]string{"id": "id"},
		Children: map[string]config.Children{"items": {From: src + ".items", On: map[string]string{"parent_id": "id"}, Columns: cols}},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	sink, err := sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"])
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
		t.Fatal(err)
	}
	noDrift(t, sink, p, types)
	runTailer(t, bed, cfg)
	defer startProjector(t, p, sink, cfg.Kafka.Brokers)()
	names := make([]string, 0, len(typeMatrix))
	for _, c := range typeMatrix {
		names = append(names, "`"+c.name+"`")
	}
	// Parent 1 holds every row; parent k+2 holds row k alone.
	var parents []string
	for k, row := range typeMatrixRows {
		for _, id := range []int{k + 1, k + 101} {
			parent := 1
			if id > 100 {
				parent = k + 2
			}
			if _, err := utc.ExecContext(ctx, fmt.Sprintf("INSERT INTO `%s`.items (id, parent_id, %s) VALUES (%d, %d, %s)", src, strings.Join(names, ", "), id, parent, row)); err != nil {
				t.Fatal(err)
			}
		}
		parents = append(parents, fmt.Sprint("(", k+2, ")"))
	}
	if err := bed.MySQL.Exec(ctx, "INSERT INTO `"+src+"`.parents VALUES (1), "+strings.Join(parents, ", ")); err != nil {
		t.Fatal(err)
	}
	expected := func() string {
		return testbed.RowsText(t, utc, "SELECT p.id, (SELECT JSON_ARRAYAGG(JSON_OBJECT("+strings.Join(srcMembers, ", ")+") ORDER BY i.id) FROM `"+src+"`.items i WHERE i.parent_id = p.id),"+
			" (SELECT COUNT(*) FROM `"+src+"`.items i WHERE i.parent_id = p.id) FROM `"+src+"`.parents p ORDER BY p.id")
	}
	actual := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT id, items, items_count FROM `"+sinkDB+"`.parents_with_items ORDER BY id")
	}
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		exp, got := expected(), actual()
		return exp == got, fmt.Sprintf("the element JSON differs from the source's JSON_OBJECT:\n%s", testbed.FirstDifference(got, exp))
	})
	t.Logf("%d types in %d rows: every element equals the source's JSON_OBJECT", len(typeMatrix), len(typeMatrixRows))

	// An array of ~3 MB, over the 1 MB group_concat_max_len a server
	// starts with (it bounds JSON_ARRAYAGG): whole, not cut short.
	if _, err := utc.ExecContext(ctx, "INSERT INTO `"+src+"`.items (id, parent_id, tx) SELECT 1000 + seq, 50, REPEAT('ü', 1000) FROM seq_1_to_1500"); err != nil {
		t.Fatal(err)
	}
	if _, err := utc.ExecContext(ctx, "INSERT INTO `"+src+"`.parents VALUES (50)"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT items_count, JSON_LENGTH(items), JSON_VALID(items), LENGTH(items) > 3000000 FROM `"+sinkDB+"`.parents_with_items WHERE id = 50")
		return got == "1500|1500|1|1|\n", "an array of 1,500 elements of 2,000 bytes: count, elements, valid, longer than 3 MB: " + got
	})
	// verify computes that array on the source whole too (its source
	// session raises group_concat_max_len as the sink's does).
	vsrc, err := verify.OpenSource(cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer vsrc.Close()
	rep, err := verify.New(p, vsrc, sink, verify.Options{Settle: 5 * time.Second, Ends: projector.Ends(cfg.Kafka.Brokers), Log: slog.New(slog.DiscardHandler)}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.Unsettled != 0 {
		var text strings.Builder
		rep.WriteText(&text)
		t.Fatalf("verify of the 3 MB array: drift %d, unsettled %d:\n%.3000s", rep.Drift(), rep.Unsettled, text.String())
	}
}

// TestChildrenSchemaErrors: what only the live source schema tells —
// on not covering the parent's primary key, columns missing from the
// child table, a binary element member, a child table that does not
// exist — is refused by SourceColumns, all at once, each naming its key
// and the fix.
func TestChildrenSchemaErrors(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "cerr")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.orders (tenant INT NOT NULL, id INT NOT NULL, PRIMARY KEY (tenant, id))",
		"CREATE TABLE `"+src+"`.order_lines (id INT PRIMARY KEY, order_id INT NULL, sku VARCHAR(10) NULL, raw VARBINARY(10) NULL)",
		"CREATE TABLE `"+src+"`.notes (order_id INT NULL, body VARCHAR(10) NULL)",
		"CREATE TABLE `"+src+"`.skus (sku VARCHAR(10) PRIMARY KEY, title VARCHAR(20) NULL)",
		"CREATE TABLE `"+src+"`.keyed_notes (seq INT NOT NULL, order_id INT NULL, body VARCHAR(10) NULL, UNIQUE KEY (seq))"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("ce", src+".orders", src+".order_lines", src+".gone", src+".notes", src+".skus", src+".keyed_notes")
	cfg.Source.Keys = config.TableKeys{src + ".keyed_notes": {"seq"}}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"orders": {
		From: src + ".orders", Sink: "reads", Key: []string{"tenant", "id"}, Columns: map[string]string{"tenant": "tenant", "id": "id"},
		Children: map[string]config.Children{
			"lines": {From: src + ".order_lines", On: map[string]string{"order_id": "id", "ghost": "tenant"},
				Columns: map[string]string{"sku": "sku", "raw": "raw", "what": "nothing"}, OrderBy: []string{"nope"}},
			"halves": {From: src + ".order_lines", On: map[string]string{"order_id": "id"}, Columns: map[string]string{"sku": "sku"},
				Join:    []config.Join{{From: src + ".skus", On: map[string]string{"sku": "sku"}, Columns: map[string]string{"title": "title"}}},
				OrderBy: []string{"titel"}},
			"others": {From: src + ".gone", On: map[string]string{"order_id": "id"}, Columns: map[string]string{"sku": "sku"}},
			"notes":  {From: src + ".notes", On: map[string]string{"order_id": "id", "body": "tenant"}, Columns: map[string]string{"body": "body"}},
			// No primary key, keyed by source.keys: a child table like any.
			"keyed": {From: src + ".keyed_notes", On: map[string]string{"order_id": "id", "seq": "tenant"}, Columns: map[string]string{"body": "body"}},
		},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ps[0].SourceColumns(ctx, bed.MySQL.DB())
	for _, want := range []string{
		`projections.orders.children.halves.on names parent column(s) [id], but ` + src + `.orders's primary key is [tenant id]: map a child column to each of [tenant]`,
		`projections.orders.children.lines.on.ghost: column "ghost" does not exist in ` + src + `.order_lines (its columns: id, order_id, sku, raw): name one of its columns`,
		`projections.orders.children.lines.order_by[0]: column "nope" does not exist in ` + src + `.order_lines (its columns: id, order_id, sku, raw): name one of its columns`,
		`projections.orders.children.halves.order_by[0]: column "titel" does not exist in ` + src + `.order_lines (its columns: id, order_id, sku, raw): name one of its columns, or a member of its join: title`,
		`projections.orders.children.lines.columns.what: column "nothing" does not exist`,
		`projections.orders.children.lines.columns.raw: ` + src + `.order_lines.raw is varbinary(10), binary: MariaDB's JSON_OBJECT writes its bytes unescaped, which is no JSON`,
		`projections.orders.children.others.from: ` + src + `.gone does not exist on the source`,
		`projections.orders.children.notes.from: ` + src + `.notes has no primary key: readside cannot tell its rows apart; add a primary key to the child table, or name its unique NOT NULL columns in source.keys`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q among the errors, got:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "children.keyed") {
		t.Errorf("a child table keyed by source.keys is refused:\n%v", err)
	}
}
