package projections_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
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

// TestNullableForeignKey: orders_by_customer keyed and sharded by a
// nullable customer_id, with where "customer_id IS NOT NULL". Rows with a
// NULL customer (snapshotted and live) never reach the read table; updates
// into NULL remove the read row, updates out of NULL add it; the read
// column is NOT NULL in the DDL; the two shards end equal to the SQL
// expectation and verify finds them equal.
func TestNullableForeignKey(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "nk")
	if err != nil {
		t.Fatal(err)
	}
	table := "`" + src + "`.orders"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY, customer_id INT NULL, status VARCHAR(20) NOT NULL, KEY (customer_id))"); err != nil {
		t.Fatal(err)
	}
	// Rows before the tailer starts reach the topic as snapshot reads: a
	// third of them with a NULL customer.
	var vals []string
	for id := 1; id <= 300; id++ {
		cust := strconv.Itoa(1 + id%40)
		if id%3 == 0 {
			cust = "NULL"
		}
		vals = append(vals, fmt.Sprintf("(%d, %s, 'new')", id, cust))
	}
	if err := bed.MySQL.Exec(ctx, "INSERT INTO "+table+" VALUES "+strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}

	cfg := bed.Config("nk", src+".orders")
	cfg.Source.Snapshot.Mode = "initial"
	sink, shards := twoShards(t, bed, "nkreads")
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"orders_by_customer": {
		From: src + ".orders", Sink: "reads", Key: []string{"customer_id", "id"}, ShardBy: "customer_id",
		Columns: map[string]string{"id": "id", "customer_id": "customer_id", "status": "status"},
		Where:   "customer_id IS NOT NULL",
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatalf("a nullable key column excluded by the filter was refused: %v", err)
	}
	ddl := sinks.DDL(p, types)
	// int(11) on MariaDB, int on MySQL 8.
	if create := ddl[len(ddl)-1]; !regexp.MustCompile("`customer_id` int(\\(11\\))? NOT NULL,").MatchString(create) {
		t.Fatalf("the read key column must be NOT NULL in the DDL:\n%s", create)
	}
	sk := openSink(ctx, t, sink, ddl)

	runTailer(t, bed, cfg)
	stop := startProjector(t, p, sk, cfg.Kafka.Brokers)
	defer stop()

	// Live: inserts with and without a customer, updates into NULL, out
	// of NULL, NULL to NULL, key moves between customers, deletes of both.
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	cust := func() any {
		if rng.IntN(3) == 0 {
			return nil
		}
		return 1 + rng.IntN(40)
	}
	exec := func(q string, args ...any) {
		if _, err := bed.MySQL.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i := range 800 {
		id := 1 + rng.IntN(400)
		switch r := rng.IntN(10); {
		case r < 3:
			exec("INSERT INTO "+table+" VALUES (?, ?, 'new') ON DUPLICATE KEY UPDATE customer_id = VALUES(customer_id)", id, cust())
		case r < 5:
			exec("UPDATE "+table+" SET customer_id = NULL WHERE id = ?", id)
		case r < 7:
			exec("UPDATE "+table+" SET customer_id = ? WHERE id = ?", 1+rng.IntN(40), id)
		case r < 9:
			exec("UPDATE "+table+" SET status = ? WHERE id = ?", fmt.Sprintf("s%d", i), id)
		default:
			exec("DELETE FROM "+table+" WHERE id = ?", id)
		}
	}
	// The named transitions happen at least once whatever the seed.
	exec("INSERT INTO " + table + " VALUES (1001, NULL, 'n'), (1002, 7, 'n'), (1003, NULL, 'n')")
	exec("UPDATE " + table + " SET customer_id = NULL WHERE id = 1002")
	exec("UPDATE " + table + " SET customer_id = 9 WHERE id = 1001")
	exec("UPDATE " + table + " SET status = 'still null' WHERE id = 1003")

	want := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT customer_id, id, status FROM "+table+" WHERE customer_id IS NOT NULL ORDER BY 1, 2")
	}
	got := func() string {
		var parts []string
		for _, db := range shards {
			parts = append(parts, "SELECT customer_id, id, status FROM `"+db+"`.orders_by_customer")
		}
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1, 2")
	}
	deadline := time.Now().Add(120 * time.Second)
	for w, g := want(), got(); w != g; w, g = want(), got() {
		if time.Now().After(deadline) {
			t.Fatalf("read table differs from the source's non-NULL rows after 120s:\nwant:\n%.3000s\ngot:\n%.3000s", w, g)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var nulls int
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE customer_id IS NULL").Scan(&nulls); err != nil {
		t.Fatal(err)
	}
	if nulls == 0 {
		t.Fatal("no NULL customer left in the source: the test proves nothing about them")
	}
	t.Logf("read table equals the source's %d non-NULL rows (%d NULL rows left out)", strings.Count(want(), "\n"), nulls)

	srcDB, err := verify.OpenSource(cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer srcDB.Close()
	rep, err := verify.New(p, srcDB, sk, verify.Options{ChunkRows: 100, Settle: 5 * time.Second, Ends: projector.Ends(cfg.Kafka.Brokers), Log: logger()}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.Unsettled != 0 || rep.SourceRows != int64(strings.Count(want(), "\n")) || rep.SinkRows != rep.SourceRows {
		t.Fatalf("verify: drift %d, unsettled %d, %d source and %d sink rows; want EQUAL over %d rows (samples %+v)",
			rep.Drift(), rep.Unsettled, rep.SourceRows, rep.SinkRows, strings.Count(want(), "\n"), rep.Samples)
	}
}
