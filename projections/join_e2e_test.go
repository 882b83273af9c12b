package projections_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// shop is a source with customers and orders, and orders_by_customer: the
// orders re-keyed and sharded by customer, filtered (no drafts), with the
// customer's name and tier copied in.
type shop struct {
	bed    *testbed.Bed
	cfg    config.Config
	src    string
	shards []string                // sink databases, one per shard
	p      *projections.Projection // orders_by_customer
	// byID is the orders keyed by id alone, with the same join: there an
	// order moving to another customer changes the join column in place
	// (not a key move), which must swap the copied customer.
	byID *projections.Projection
	sink *sinks.Sharded
}

func newShop(t *testing.T, bed *testbed.Bed, keyranges ...string) *shop {
	t.Helper()
	ctx := t.Context()
	s := &shop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	tables, err := testbed.CreateShop(ctx, bed.MySQL, s.src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("j", tables...)
	sink := config.Sink{}
	for _, kr := range keyranges {
		db, err := bed.MySQL.CreateDatabase(ctx, "reads")
		if err != nil {
			t.Fatal(err)
		}
		s.shards = append(s.shards, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(bed.MySQL.AdminDSN() + db)})
	}
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"orders_by_customer": testbed.OrdersByCustomer(s.src, "reads"), "orders_by_id": testbed.OrdersByID(s.src, "reads")}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.p, s.byID = ps[1], ps[0] // compiled in name order
	if s.sink, err = sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.sink.Close() })
	for _, p := range ps {
		types, err := p.SourceColumns(ctx, bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// write runs a seeded workload: customers created, renamed, re-tiered,
// deleted and re-created under the same id; orders created (also for
// customers that do not exist yet), moved between customers (a key move,
// often to another shard), put in and out of draft (leaving and entering
// the filter), deleted and re-created.
func (s *shop) write(t *testing.T, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	db := s.bed.MySQL.DB()
	exec := func(q string, args ...any) {
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c, o := "`"+s.src+"`.customers", "`"+s.src+"`.orders"
	statuses := []string{"draft", "new", "paid", "shipped"}
	tiers := []any{"free", "pro", "vip", nil}
	for i := range ops {
		cid := 1 + rng.IntN(40)
		oid := 1 + rng.IntN(300)
		switch r := rng.IntN(100); {
		case r < 12:
			exec("INSERT INTO "+c+" VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), tier = VALUES(tier)",
				cid, fmt.Sprintf("cust %d ✓ %d", cid, i), tiers[rng.IntN(len(tiers))])
		case r < 22:
			exec("UPDATE "+c+" SET name = ?, tier = ? WHERE id = ?", fmt.Sprintf("renamed %d", i), tiers[rng.IntN(len(tiers))], cid)
		case r < 26:
			exec("DELETE FROM "+c+" WHERE id = ?", cid)
		case r < 50:
			exec("INSERT INTO "+o+" VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE total_cents = total_cents + 1",
				oid, cid, statuses[rng.IntN(len(statuses))], rng.IntN(100000), fmt.Sprintf("2026-02-%02d 10:00:00.%06d", 1+rng.IntN(28), rng.IntN(1e6)))
		case r < 65:
			exec("UPDATE "+o+" SET status = ? WHERE id = ?", statuses[rng.IntN(len(statuses))], oid)
		case r < 80:
			exec("UPDATE "+o+" SET customer_id = ? WHERE id = ?", cid, oid) // key move
		case r < 90:
			exec("UPDATE "+o+" SET total_cents = total_cents + 7 WHERE customer_id = ?", cid) // multi-row
		default:
			exec("DELETE FROM "+o+" WHERE id = ?", oid)
		}
	}
}

const orderCols = "customer_id, id, status, total_cents, created_at, customer_name, customer_tier"

// expected is what the declarations compute from the source, in SQL.
func (s *shop) expected(t *testing.T) string {
	join := "SELECT o.customer_id, o.id, o.status, o.total_cents, o.created_at, c.name, c.tier FROM `" +
		s.src + "`.orders o LEFT JOIN `" + s.src + "`.customers c ON c.id = o.customer_id"
	return testbed.RowsText(t, s.bed.MySQL.DB(), join+" WHERE o.status <> 'draft' ORDER BY 1, 2") + "--\n" +
		testbed.RowsText(t, s.bed.MySQL.DB(), join+" ORDER BY 2")
}

// actual is the read tables over every shard; it also checks each row sits
// on the shard its shard key's range names.
func (s *shop) actual(t *testing.T) string {
	return s.table(t, "orders_by_customer", "customer_id", "1, 2") + "--\n" + s.table(t, "orders_by_id", "id", "2")
}

func (s *shop) table(t *testing.T, table, shardBy, order string) string {
	var parts []string
	for i, db := range s.shards {
		parts = append(parts, "SELECT "+orderCols+", "+strconv.Itoa(i)+" AS shard FROM `"+db+"`."+table)
	}
	rows, err := s.bed.MySQL.DB().QueryContext(t.Context(), "SELECT "+shardBy+", shard FROM ("+strings.Join(parts, " UNION ALL ")+") u")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, shard int
		if err := rows.Scan(&key, &shard); err != nil {
			t.Fatal(err)
		}
		if r := s.sink.Shards[shard].Range; !r.Contains(keyspace.ID([]byte(strconv.Itoa(key)))) {
			t.Errorf("%s row with %s %d is on shard %s, outside its key range", table, shardBy, key, r.Text)
		}
	}
	rows.Close()
	return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT "+orderCols+" FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY "+order)
}

func (s *shop) waitConverged(t *testing.T) {
	t.Helper()
	var rows int
	testbed.Eventually(t, 120*time.Second, func() (bool, string) {
		want, got := s.expected(t), s.actual(t)
		rows = strings.Count(want, "\n") - 1
		return want == got, fmt.Sprintf("orders_by_customer differs from the SQL join:\nwant:\n%.3000s\ngot:\n%.3000s", want, got)
	})
	t.Logf("orders_by_customer and orders_by_id equal the SQL join over %d shard(s): %d rows", len(s.shards), rows)
}

// versionWatch polls every shard during the run and fails the test if a
// read row is ever seen at an older version than before.
func (s *shop) versionWatch(t *testing.T, ctx context.Context) (stop func()) {
	seen := map[string]uint64{}
	return watchShards(t, ctx, s.shards, "SELECT customer_id, id, _rs_version FROM %s.orders_by_customer", func(scan func(...any) error) {
		var cid, id int
		var v uint64
		if scan(&cid, &id, &v) != nil {
			return
		}
		k := fmt.Sprint(cid, "/", id)
		if v < seen[k] {
			t.Errorf("row %s went back from version %d to %d", k, seen[k], v)
		}
		seen[k] = max(seen[k], v)
	})
}

// watchShards runs query (a format whose %s is the database) on every
// shard database, every 50 ms, and hands each row to check, until stop;
// stop logs how many polls and rows it saw.
func watchShards(t *testing.T, ctx context.Context, shards []string, query string, check func(scan func(...any) error)) (stop func()) {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	db := testbed.Get(t).MySQL.DB()
	polls, rows := 0, 0
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, shard := range shards {
				rs, err := db.QueryContext(ctx, fmt.Sprintf(query, "`"+shard+"`"))
				if err != nil {
					continue
				}
				for rs.Next() {
					rows++
					check(rs.Scan)
				}
				rs.Close()
			}
			polls++
			time.Sleep(50 * time.Millisecond)
		}
	})
	return func() {
		cancel()
		wg.Wait()
		t.Logf("version validator: %d polls over %d rows seen, none went back", polls, rows)
	}
}

// TestOrdersByCustomerJoin: tailer and two concurrent projector workers
// (one consumer group) keep a two-shard, filtered, joined read table while
// the workload runs; one worker is stopped and restarted midway. The read
// table ends equal to the SQL LEFT JOIN, each row on its shard, and no row
// is ever seen going back in version.
func TestOrdersByCustomerJoin(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed, "-80", "80-")
	ctx := t.Context()
	runTailer(t, bed, s.cfg)
	worker := func() (stop func()) {
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 2)
		for _, p := range []*projections.Projection{s.p, s.byID} {
			pr, err := projector.New(p, s.sink, projector.Options{Brokers: s.cfg.Kafka.Brokers, Log: logger()})
			if err != nil {
				t.Fatal(err)
			}
			go func() { done <- pr.Run(pctx) }()
		}
		return func() {
			cancel()
			for range 2 {
				if err := <-done; err != nil {
					t.Errorf("projector: %v", err)
				}
			}
		}
	}
	watch := s.versionWatch(t, ctx)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	a, b := worker(), worker()
	s.write(t, seed, 2500)
	b()
	s.write(t, seed+1, 1500)
	b = worker()
	defer a()
	defer b()
	s.waitConverged(t)
	watch()
	// Watermarks: every shard knows the applied source position of each
	// partition of both topics, at or past the newest row it holds.
	for _, db := range s.shards {
		var parts, topics int
		var mark, newest uint64
		var gtid string
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT topic), MAX(version), MAX(gtid) FROM `"+db+"`._readside_watermarks WHERE projection = 'orders_by_customer'").Scan(&parts, &topics, &mark, &gtid); err != nil {
			t.Fatal(err)
		}
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COALESCE(MAX(_rs_version), 0) FROM `"+db+"`.orders_by_customer").Scan(&newest); err != nil {
			t.Fatal(err)
		}
		if topics != 2 || parts < 2 || mark < newest || gtid == "" {
			t.Errorf("shard %s watermarks: %d partitions over %d topics, newest version %d (rows up to %d), gtid %q", db, parts, topics, mark, newest, gtid)
		}
	}
}

// TestJoinShuffledHistory: the whole history of both topics, applied to a
// fresh sink shuffled across batches with a fifth duplicated (within-key
// order broken on purpose), converges to the same SQL LEFT JOIN.
func TestJoinShuffledHistory(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed, "-")
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.write(t, seed, 3000)
	waitPublished(t, bed, tl) // the workload's last transaction is published

	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topics()...)
	applyShuffled(t, s.sink, []*projections.Projection{s.p, s.byID}, records, rand.New(rand.NewPCG(seed, 3)))
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatalf("shuffled history differs from the SQL join:\nwant:\n%.3000s\ngot:\n%.3000s", want, got)
	}
	t.Logf("shuffled history equals the SQL join: %d rows", strings.Count(s.expected(t), "\n"))
}

// applyShuffled applies records to sink for each of ps, shuffled by rng
// across batches of 1 to 150 with a fifth of them duplicated: within-key
// order broken on purpose, so only the version rules can converge.
func applyShuffled(t *testing.T, sink projections.Sink, ps []*projections.Projection, records []*kgo.Record, rng *rand.Rand) {
	t.Helper()
	shuffled := append([]*kgo.Record{}, records...)
	for _, r := range records {
		if rng.IntN(5) == 0 {
			shuffled = append(shuffled, r)
		}
	}
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	t.Logf("history: %d records, applying %d shuffled with duplicates", len(records), len(shuffled))
	for start := 0; start < len(shuffled); {
		n := 1 + rng.IntN(150)
		for _, p := range ps {
			b, bad := p.Build(projector.Records(shuffled[start:min(start+n, len(shuffled))]))
			if len(bad) > 0 {
				t.Fatalf("record refused: %v", bad[0].Reason)
			}
			b.Offsets = nil
			if err := sink.Apply(t.Context(), p, b); err != nil {
				t.Fatal(err)
			}
		}
		start += n
	}
}
