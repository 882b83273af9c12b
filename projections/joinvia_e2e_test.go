package projections_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// regionShop is orders → customers → regions, plus warehouses: a join
// through a parent's parent beside a second direct join, in two
// projections over two shards — orders_with_region keyed and sharded by
// customer (an order moving to another customer is a key move; a region's
// change scatters to every shard), orders_region_by_id keyed and sharded
// by order id (such a move changes the join column in place).
type regionShop struct {
	bed    *testbed.Bed
	cfg    config.Config
	src    string
	shards []string
	ps     []*projections.Projection // orders_region_by_id, orders_with_region
	sink   *sinks.Sharded
}

const (
	regionRegions    = "CREATE TABLE `%s`.regions (id INT PRIMARY KEY, name VARCHAR(50) CHARACTER SET utf8mb4 NOT NULL, code CHAR(2) NULL)"
	regionCustomers  = "CREATE TABLE `%s`.customers (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL, region_id INT NULL, KEY (region_id))"
	regionWarehouses = "CREATE TABLE `%s`.warehouses (id INT PRIMARY KEY, city VARCHAR(50) NOT NULL)"
	regionOrders     = "CREATE TABLE `%s`.orders (id INT PRIMARY KEY, customer_id INT NOT NULL, warehouse_id INT NULL, total_cents BIGINT NOT NULL, KEY (customer_id))"
)

// regionProjection is the declaration under test: the SPEC's
// orders_with_region with a warehouse join beside it.
func regionProjection(src, key, shardBy string) config.Projection {
	keys := []string{"customer_id", "id"}
	if key == "id" {
		keys = []string{"id"}
	}
	return config.Projection{
		From: src + ".orders", Sink: "reads", Key: keys, ShardBy: shardBy,
		Columns: map[string]string{"customer_id": "customer_id", "id": "id", "total_cents": "total_cents", "warehouse_id": "warehouse_id"},
		Join: []config.Join{
			{From: src + ".customers", As: "c", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_name": "name"}},
			{From: src + ".regions", Via: "c", On: map[string]string{"id": "region_id"}, Columns: map[string]string{"region_name": "name", "region_code": "code"}},
			{From: src + ".warehouses", On: map[string]string{"id": "warehouse_id"}, Columns: map[string]string{"warehouse_city": "city"}},
		},
	}
}

func newRegionShop(t *testing.T, bed *testbed.Bed, keyranges ...string) *regionShop {
	t.Helper()
	return newRegionShopFanOut(t, bed, "", keyranges...)
}

// newRegionShopFanOut is newRegionShop with both projections' fan_out.
func newRegionShopFanOut(t *testing.T, bed *testbed.Bed, fanOut string, keyranges ...string) *regionShop {
	t.Helper()
	ctx := t.Context()
	s := &regionShop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "rshop"); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{regionRegions, regionCustomers, regionWarehouses, regionOrders} {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf(ddl, s.src)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := bed.Config("jv", s.src+".regions", s.src+".customers", s.src+".warehouses", s.src+".orders")
	cfg.Projections = map[string]config.Projection{
		"orders_with_region":  regionProjection(s.src, "customer_id", "customer_id"),
		"orders_region_by_id": regionProjection(s.src, "id", "id"),
	}
	for name, p := range cfg.Projections {
		p.FanOut = fanOut
		cfg.Projections[name] = p
	}
	s.cfg = cfg
	s.openSink(t, keyranges...)
	return s
}

// openSink creates sink databases for keyranges and the projections'
// tables in them.
func (s *regionShop) openSink(t *testing.T, keyranges ...string) {
	t.Helper()
	ctx := t.Context()
	sink := config.Sink{}
	s.shards = nil
	for _, kr := range keyranges {
		db, err := s.bed.MySQL.CreateDatabase(ctx, "rreads")
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
	s.ps = ps
	if s.sink, err = sinks.OpenSharded(ctx, "reads", sink); err != nil {
		t.Fatal(err)
	}
	sk := s.sink
	t.Cleanup(func() { sk.Close() })
	for _, p := range ps {
		types, err := p.SourceColumns(ctx, s.bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *regionShop) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	q = strings.ReplaceAll(q, "$.", "`"+s.src+"`.")
	if _, err := s.bed.MySQL.DB().ExecContext(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

const regionCols = "customer_id, id, total_cents, warehouse_id, customer_name, region_name, region_code, warehouse_city"

// expected is the SQL join on the source, ordered as each read table is
// compared.
func (s *regionShop) expected(t *testing.T) string {
	join := "SELECT o.customer_id, o.id, o.total_cents, o.warehouse_id, c.name, r.name, r.code, w.city FROM `" + s.src + "`.orders o" +
		" LEFT JOIN `" + s.src + "`.customers c ON c.id = o.customer_id LEFT JOIN `" + s.src + "`.regions r ON r.id = c.region_id" +
		" LEFT JOIN `" + s.src + "`.warehouses w ON w.id = o.warehouse_id"
	db := s.bed.MySQL.DB()
	return testbed.RowsText(t, db, join+" ORDER BY 1, 2") + "--\n" + testbed.RowsText(t, db, join+" ORDER BY 2")
}

func (s *regionShop) actual(t *testing.T) string {
	union := func(table string) string {
		var parts []string
		for _, db := range s.shards {
			parts = append(parts, "SELECT "+regionCols+" FROM `"+db+"`."+table)
		}
		return strings.Join(parts, " UNION ALL ")
	}
	db := s.bed.MySQL.DB()
	return testbed.RowsText(t, db, "SELECT * FROM ("+union("orders_with_region")+") u ORDER BY 1, 2") + "--\n" +
		testbed.RowsText(t, db, "SELECT * FROM ("+union("orders_region_by_id")+") u ORDER BY 2")
}

// converge waits until both read tables equal the SQL join, whose text
// must contain every string of want (so a step shows what it is about).
func (s *regionShop) converge(t *testing.T, step string, want ...string) {
	t.Helper()
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		exp, got := s.expected(t), s.actual(t)
		return exp == got, fmt.Sprintf("%s: the read tables differ from the SQL join:\nwant:\n%.3000s\ngot:\n%.3000s", step, exp, got)
	})
	exp := s.expected(t)
	for _, w := range want {
		if !strings.Contains(exp, w) {
			t.Fatalf("%s: the SQL join has no %q, the step tests nothing:\n%s", step, w, exp)
		}
	}
}

// projectors runs a worker for each projection until the returned stop.
func (s *regionShop) projectors(t *testing.T) (stop func()) {
	t.Helper()
	return startProjectors(t, s.ps, s.sink, s.cfg.Kafka.Brokers)
}

// TestJoinViaSteps: each thing a join through a parent's parent must do,
// one at a time, live (tailer, projectors, two shards): an order before
// its parents, parents arriving, a region rename reaching every order of
// every customer in it, a customer moving to another region, an order
// moving to another customer, deletes at either level, and truncation of
// either parent table.
func TestJoinViaSteps(t *testing.T) { joinViaSteps(t, "") }

// joinViaSteps is TestJoinViaSteps with the projections' fan_out.
func joinViaSteps(t *testing.T, fanOut string) {
	bed := testbed.Get(t)
	s := newRegionShopFanOut(t, bed, fanOut, "-80", "80-")
	runTailer(t, bed, s.cfg)
	defer s.projectors(t)()

	s.exec(t, "INSERT INTO $.orders VALUES (1, 1, NULL, 100), (2, 2, 1, 200), (3, 3, 1, 300), (4, 2, NULL, 400)")
	s.converge(t, "orders before their parents", "1|1|100|<nil>|<nil>|<nil>|<nil>|<nil>|")
	s.exec(t, "INSERT INTO $.regions VALUES (10, 'North ✓', 'NO')")
	s.exec(t, "INSERT INTO $.regions VALUES (20, 'South', NULL)")
	s.exec(t, "INSERT INTO $.customers VALUES (1, 'Ann', 10), (2, 'Bob', 10), (3, 'Cy', NULL)")
	s.exec(t, "INSERT INTO $.warehouses VALUES (1, 'Oslo')")
	s.converge(t, "parents after their orders", "2|2|200|1|Bob|North ✓|NO|Oslo|")
	s.exec(t, "UPDATE $.regions SET name = 'Nord' WHERE id = 10")
	s.converge(t, "region rename", "1|1|100|<nil>|Ann|Nord|NO|<nil>|", "2|4|400|<nil>|Bob|Nord|NO|<nil>|")
	// Region 20's version is older than region 10's rename: the orders'
	// region columns start again from it, not from the version they had.
	s.exec(t, "UPDATE $.customers SET region_id = 20, name = 'Ann B' WHERE id = 1")
	s.converge(t, "customer moves region", "1|1|100|<nil>|Ann B|South|<nil>|<nil>|", "2|2|200|1|Bob|Nord|")
	s.exec(t, "UPDATE $.orders SET customer_id = 1 WHERE id = 2")
	s.converge(t, "order moves customer", "1|2|200|1|Ann B|South|<nil>|Oslo|")
	s.exec(t, "UPDATE $.customers SET region_id = 10 WHERE id = 3")
	s.exec(t, "UPDATE $.customers SET region_id = NULL WHERE id = 2")
	s.converge(t, "customers gain and lose a region", "3|3|300|1|Cy|Nord|NO|Oslo|", "2|4|400|<nil>|Bob|<nil>|<nil>|<nil>|")
	s.exec(t, "DELETE FROM $.regions WHERE id = 20")
	s.converge(t, "region deleted", "1|1|100|<nil>|Ann B|<nil>|<nil>|<nil>|")
	s.exec(t, "INSERT INTO $.regions VALUES (20, 'South again', 'SA')")
	s.exec(t, "DELETE FROM $.customers WHERE id = 1")
	s.converge(t, "customer deleted", "1|1|100|<nil>|<nil>|<nil>|<nil>|<nil>|")
	s.exec(t, "INSERT INTO $.customers VALUES (1, 'Ann C', 20)")
	s.converge(t, "customer back", "1|1|100|<nil>|Ann C|South again|SA|<nil>|")
	s.exec(t, "TRUNCATE TABLE $.regions")
	s.converge(t, "regions truncated", "1|1|100|<nil>|Ann C|<nil>|<nil>|<nil>|", "3|3|300|1|Cy|<nil>|<nil>|Oslo|")
	s.exec(t, "INSERT INTO $.regions VALUES (10, 'North new', 'NN')")
	s.converge(t, "a region after the truncation", "3|3|300|1|Cy|North new|NN|Oslo|")
	s.exec(t, "TRUNCATE TABLE $.customers")
	s.converge(t, "customers truncated", "3|3|300|1|<nil>|<nil>|<nil>|Oslo|")
	s.exec(t, "INSERT INTO $.customers VALUES (3, 'Cy D', 10), (1, 'Ann D', 10)")
	s.converge(t, "customers after the truncation", "3|3|300|1|Cy D|North new|NN|Oslo|", "1|2|200|1|Ann D|North new|NN|Oslo|")
}

// write is a seeded workload over all four tables: regions renamed,
// deleted and re-created; customers created, renamed, moved between
// regions (and to none) and deleted; warehouses changed; orders created
// (also before their customers), moved between customers, re-warehoused
// and deleted.
func (s *regionShop) write(t *testing.T, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	region := func() any {
		if rng.IntN(8) == 0 {
			return nil
		}
		return 1 + rng.IntN(6)
	}
	codes := []any{"AA", "BB", nil}
	for i := range ops {
		rid, cid, oid, wid := 1+rng.IntN(6), 1+rng.IntN(30), 1+rng.IntN(200), 1+rng.IntN(4)
		switch r := rng.IntN(100); {
		case r < 6:
			s.exec(t, "INSERT INTO $.regions VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), code = VALUES(code)", rid, fmt.Sprintf("region %d · %d", rid, i), codes[rng.IntN(3)])
		case r < 14:
			s.exec(t, "UPDATE $.regions SET name = ? WHERE id = ?", fmt.Sprintf("renamed %d", i), rid)
		case r < 16:
			s.exec(t, "DELETE FROM $.regions WHERE id = ?", rid)
		case r < 24:
			s.exec(t, "INSERT INTO $.customers VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), region_id = VALUES(region_id)", cid, fmt.Sprintf("cust %d ✓ %d", cid, i), region())
		case r < 36:
			s.exec(t, "UPDATE $.customers SET region_id = ? WHERE id = ?", region(), cid) // region move
		case r < 40:
			s.exec(t, "UPDATE $.customers SET name = ? WHERE id = ?", fmt.Sprintf("renamed %d", i), cid)
		case r < 42:
			s.exec(t, "DELETE FROM $.customers WHERE id = ?", cid)
		case r < 45:
			s.exec(t, "INSERT INTO $.warehouses VALUES (?, ?) ON DUPLICATE KEY UPDATE city = VALUES(city)", wid, fmt.Sprintf("city %d", i))
		case r < 70:
			s.exec(t, "INSERT INTO $.orders VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE total_cents = total_cents + 1", oid, cid, wid, rng.IntN(100000))
		case r < 82:
			s.exec(t, "UPDATE $.orders SET customer_id = ? WHERE id = ?", cid, oid) // key move / in-place move
		case r < 88:
			s.exec(t, "UPDATE $.orders SET warehouse_id = ? WHERE id = ?", wid, oid)
		case r < 95:
			s.exec(t, "UPDATE $.orders SET total_cents = total_cents + 7 WHERE customer_id = ?", cid) // multi-row
		default:
			s.exec(t, "DELETE FROM $.orders WHERE id = ?", oid)
		}
	}
}

// viaWatch polls every shard during the run and fails the test if a read
// row is seen going back in version, or, for the same carried region key,
// showing an older version of that region than before.
func (s *regionShop) viaWatch(t *testing.T, ctx context.Context) (stop func()) {
	seen := map[string]uint64{}
	regionSeen := map[string]uint64{}
	return watchShards(t, ctx, s.shards, "SELECT customer_id, id, _rs_version, COALESCE(_rs_j1_region_id, -1), _rs_v_join2 FROM %s.orders_with_region", func(scan func(...any) error) {
		var cid, id, rid int
		var v, rv uint64
		if scan(&cid, &id, &v, &rid, &rv) != nil {
			return
		}
		k := fmt.Sprint(cid, "/", id)
		if v < seen[k] {
			t.Errorf("row %s went back from version %d to %d", k, seen[k], v)
		}
		seen[k] = max(seen[k], v)
		rk := fmt.Sprint(k, "@", rid)
		if rv < regionSeen[rk] {
			t.Errorf("row %s showed region %d at version %d, now at %d", k, rid, regionSeen[rk], rv)
		}
		regionSeen[rk] = max(regionSeen[rk], rv)
	})
}

// TestJoinViaLive: tailer and two concurrent projector workers per
// projection keep both read tables over two shards while the workload
// runs (one worker stopped and restarted midway); they end equal to the
// SQL join, no row goes back in version, `readside verify` says EQUAL for
// both, and a wrong region name put into the sink by hand is found and
// repaired (the region row re-published, its state fanned out again).
func TestJoinViaLive(t *testing.T) { joinViaLive(t, "") }

// joinViaLive is TestJoinViaLive with the projections' fan_out.
func joinViaLive(t *testing.T, fanOut string) {
	bed := testbed.Get(t)
	s := newRegionShopFanOut(t, bed, fanOut, "-80", "80-")
	ctx := t.Context()
	runTailer(t, bed, s.cfg)
	watch := s.viaWatch(t, ctx)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	a, b := s.projectors(t), s.projectors(t)
	s.write(t, seed, 1500)
	b()
	s.write(t, seed+1, 1000)
	b = s.projectors(t)
	defer a()
	defer b()
	s.converge(t, "live workload")
	watch()
	t.Logf("converged: %d rows per read table", strings.Count(s.expected(t), "\n")/2)

	src, err := verify.OpenSource(s.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var withRegion *verify.Verifier
	for _, p := range s.ps {
		v := verify.New(p, src, s.sink, verify.Options{Ends: projector.Ends(s.cfg.Kafka.Brokers), Log: logger(), ChunkRows: 100, Settle: 5 * time.Second, StateFile: t.TempDir() + "/state.json"})
		rep, err := v.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Drift() != 0 || rep.Unsettled != 0 || rep.SourceRows == 0 || rep.SinkRows != rep.SourceRows {
			t.Fatalf("verify %s on a converged two-level join: %+v", p.Name, rep)
		}
		t.Logf("verify %s: EQUAL over %d rows", p.Name, rep.SourceRows)
		if p.Name == "orders_with_region" {
			withRegion = v
		}
	}

	// A region name the sink got wrong: found as a differing joined
	// column, repaired by re-publishing that region.
	var cid, id int
	var shard int
	for i, db := range s.shards {
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT customer_id, id FROM `"+db+"`.orders_with_region WHERE region_name IS NOT NULL ORDER BY customer_id, id LIMIT 1").Scan(&cid, &id); err == nil {
			shard = i
			break
		}
	}
	if cid == 0 {
		t.Fatal("no row with a region to damage")
	}
	if _, err := s.sink.Shards[shard].DB().ExecContext(ctx, "UPDATE orders_with_region SET region_name = 'wrong' WHERE customer_id = ? AND id = ?", cid, id); err != nil {
		t.Fatal(err)
	}
	rep, err := withRegion.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Different != 1 || rep.Drift() != 1 {
		t.Fatalf("verify after damaging region_name of %d/%d: %+v", cid, id, rep)
	}
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, s.cfg.Source.DSN.Reveal(), s.cfg.Source.TLS, s.cfg.Source.Snapshot.SignalDB, s.cfg.Source.ServerID, table, where)
	}
	res, err := withRegion.Repair(ctx, rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Remaining != 0 || res.ParentKeys != 1 {
		t.Fatalf("repair of a region name: %+v (want nothing remaining, one parent row re-published)", *res)
	}
	s.converge(t, "after repair")
}

// TestJoinViaShuffledHistory: the whole history of the four topics,
// applied to a fresh two-shard sink shuffled across batches with a fifth
// duplicated (within-key order broken on purpose), converges to the same
// SQL join: per join level, the newest version of each source row wins
// whatever the order.
func TestJoinViaShuffledHistory(t *testing.T) {
	bed := testbed.Get(t)
	s := newRegionShop(t, bed, "-80", "80-")
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.write(t, seed, 2500)
	waitPublished(t, bed, tl)

	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.ps[0].Topics()...)
	applyShuffled(t, s.sink, s.ps, records, rand.New(rand.NewPCG(seed, 5)))
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatalf("shuffled history differs from the SQL join:\nwant:\n%.4000s\ngot:\n%.4000s", want, got)
	}
	t.Logf("shuffled history equals the SQL join: %d rows per read table", strings.Count(s.expected(t), "\n")/2)
}

// TestJoinViaRace: an order of a customer and a rename of the customer's
// region, applied at the same moment by two sink transactions, round
// after round. The order's transaction finds the region through the
// customer's state, so it must wait for the region's state-row lock
// before it copies the region: without that lock, the rename's fan-out
// can run before the order's row carries the region key (it finds no
// order) while the order copies the region as last committed (the old
// name), and the order keeps the old name for good. The rename's batch
// also renames a warehouse of 3,000 orders, which holds its transaction
// open after its region fan-out and widens that window.
func TestJoinViaRace(t *testing.T) {
	bed := testbed.Get(t)
	s := newRegionShop(t, bed, "-")
	ctx := t.Context()
	p := s.ps[1] // orders_with_region
	if p.Name != "orders_with_region" {
		t.Fatalf("compiled %s second", p.Name)
	}
	v := uint64(time.Now().Unix()) << 20
	next := func() uint64 { v++; return v }
	apply := func(b *projections.Batch) error { return s.sink.Apply(ctx, p, b) }
	text := func(n int) string { return fmt.Sprint(n) }
	order := func(cid, id, wid int) projections.Write {
		w := projections.Write{Kind: projections.Upsert, Key: text(cid) + "\x00" + text(id), Version: next(),
			Values:  projections.ValuesOf(cid, id, 1, wid),
			Parents: []projections.ParentRef{{Key: text(cid), Values: projections.ValuesOf(cid)}, {}, {Key: text(wid), Values: projections.ValuesOf(wid)}}}
		return w
	}
	var filler []projections.Write
	for id := 1; id <= 3000; id++ {
		filler = append(filler, order(1000000, id, 1))
	}
	if err := apply(&projections.Batch{Writes: filler}); err != nil {
		t.Fatal(err)
	}
	const rounds = 40
	for r := 1; r <= rounds; r++ {
		cid, rid, oid := r, r, 100000+r
		setup := &projections.Batch{Parents: []projections.ParentWrite{
			{Join: 0, Key: text(cid), KeyValues: projections.ValuesOf(cid), Values: projections.ValuesOf("cust", rid), Version: next()},
			{Join: 1, Key: text(rid), KeyValues: projections.ValuesOf(rid), Values: projections.ValuesOf("AA", "old"), Version: next()},
		}}
		if err := apply(setup); err != nil {
			t.Fatal(err)
		}
		child := &projections.Batch{Writes: []projections.Write{order(cid, oid, 2)}}
		rename := &projections.Batch{Parents: []projections.ParentWrite{
			{Join: 1, Key: text(rid), KeyValues: projections.ValuesOf(rid), Values: projections.ValuesOf("AA", "new"), Version: next()},
			{Join: 2, Key: text(1), KeyValues: projections.ValuesOf(1), Values: projections.ValuesOf(fmt.Sprint("city ", r)), Version: next()},
		}}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 2)
		for _, b := range []*projections.Batch{rename, child} {
			wg.Go(func() {
				<-start
				errs <- apply(b)
			})
		}
		close(start)
		wg.Wait()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		var name string
		if err := s.sink.Shards[0].DB().QueryRowContext(ctx, "SELECT COALESCE(region_name, 'NULL') FROM orders_with_region WHERE customer_id = ? AND id = ?", cid, oid).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name != "new" {
			t.Fatalf("round %d: the order applied beside its region's rename shows region %q, want \"new\"", r, name)
		}
	}
	t.Logf("%d rounds: every order applied beside its region's rename shows the new name", rounds)
}
