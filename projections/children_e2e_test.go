package projections_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// lineShop is orders and their lines, nested: orders_with_lines keyed
// (and sharded, over two shards) by customer and order, so an order
// moving to another customer is a read key move, with its lines as a
// JSON array capped at 3 elements ordered by line_no (ties on purpose:
// broken by the line's primary key) and their count.
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
	lineLines  = "CREATE TABLE `%s`.order_lines (id INT PRIMARY KEY, order_id INT NULL, line_no INT NOT NULL, sku VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
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
	s.exec(t, "INSERT INTO $.orders VALUES (2, 20, 'new')")
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
	waits := func() int {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const rounds = 10
	for r := 1; r <= rounds; r++ {
		oid, lid := 100000+r, 1000000+r
		hold, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.ExecContext(ctx, "SELECT id FROM orders_with_lines WHERE customer_id = ? AND id = ? FOR UPDATE", fCustomer, fID); err != nil {
			t.Fatal(err)
		}
		line := &projections.Batch{ChildWrites: []projections.ChildWrite{s.childWrite(lid, oid, next()), s.childWrite(2000000, fID, next())}}
		lineDone, orderDone := make(chan error, 1), make(chan error, 1)
		go func() { lineDone <- apply(line) }()
		testbed.Eventually(t, 60*time.Second, func() (bool, string) {
			return waits() >= 1, fmt.Sprintf("round %d: the line's transaction never waited for order F's row", r)
		})
		go func() { orderDone <- apply(&projections.Batch{Writes: []projections.Write{order(r, oid)}}) }()
		// The order's transaction either commits (nothing makes it wait
		// for the line's) or waits for the line's link lock.
		var orderErr error
		settled := false
		testbed.Eventually(t, 60*time.Second, func() (bool, string) {
			select {
			case orderErr = <-orderDone:
				settled = true
				return true, ""
			default:
			}
			return waits() >= 2, fmt.Sprintf("round %d: the order's transaction neither committed nor waited", r)
		})
		if err := hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := <-lineDone; err != nil {
			t.Fatal(err)
		}
		if !settled {
			orderErr = <-orderDone
		}
		if orderErr != nil {
			t.Fatal(orderErr)
		}
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
