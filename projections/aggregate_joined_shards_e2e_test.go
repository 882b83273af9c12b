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

// TestAggregateJoinedGroupsShards: revenue per customer and store (the
// store joined from the staff member) on two sink shards, sharded by the
// customer: every shard keeps every join's state and regroups only the
// groups it holds, while staff move store, payments move customer (and
// so shard) and staff. The union of the shards equals the source's
// GROUP BY over the join.
func TestAggregateJoinedGroupsShards(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "jgsrc")
	if err != nil {
		t.Fatal(err)
	}
	staff, pay := "`"+src+"`.staff", "`"+src+"`.payment"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+staff+" (staff_id INT PRIMARY KEY, store_id INT NULL)",
		"CREATE TABLE "+pay+" (payment_id INT PRIMARY KEY, customer_id INT NOT NULL, staff_id INT NULL, amount DECIMAL(7,2) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("jgs", src+".payment", src+".staff")
	var sink config.Sink
	var shards []string
	for _, kr := range []string{"-80", "80-"} {
		db, err := bed.MySQL.CreateDatabase(ctx, "jgreads")
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(bed.MySQL.AdminDSN() + db)})
	}
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"revenue": {From: src + ".payment", Sink: "reads", ShardBy: "customer_id",
		Join:       []config.Join{{From: src + ".staff", On: map[string]string{"staff_id": "staff_id"}, Columns: map[string]string{"store_id": "store_id"}}},
		GroupBy:    []string{"customer_id", "store_id"},
		Aggregates: map[string]string{"revenue": "sum(amount)", "payments": "count(*)"}}}
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
		t.Fatal(err)
	}
	sh, err := sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	if err := sh.Exec(ctx, sinks.DDL(p, types)); err != nil {
		t.Fatal(err)
	}
	runTailer(t, bed, cfg)
	stop := startProjector(t, p, sh, cfg.Kafka.Brokers)
	defer stop()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 61))
	var stmts []string
	for range 400 {
		switch k := rng.IntN(10); {
		case k < 6:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, %d, %d.%02d) ON DUPLICATE KEY UPDATE customer_id = VALUES(customer_id), staff_id = VALUES(staff_id), amount = VALUES(amount)",
				pay, 1+rng.IntN(80), 1+rng.IntN(12), 1+rng.IntN(5), rng.IntN(50), rng.IntN(100)))
		case k < 7:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM %s WHERE payment_id = %d", pay, 1+rng.IntN(80)))
		default:
			store := fmt.Sprint(1 + rng.IntN(3))
			if rng.IntN(6) == 0 {
				store = "NULL"
			}
			stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %s) ON DUPLICATE KEY UPDATE store_id = VALUES(store_id)", staff, 1+rng.IntN(5), store))
		}
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	expected := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT p.customer_id, s.store_id, SUM(p.amount), COUNT(*) FROM "+pay+" p JOIN "+staff+
			" s ON s.staff_id = p.staff_id WHERE s.store_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2")
	}
	actual := func() string {
		var parts []string
		for _, db := range shards {
			parts = append(parts, "SELECT customer_id, store_id, revenue, payments FROM `"+db+"`.revenue")
		}
		return testbed.RowsText(t, bed.MySQL.DB(), strings.Join(parts, " UNION ALL ")+" ORDER BY 1, 2")
	}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		w, g := expected(), actual()
		return w == g, "the shards' union differs from the GROUP BY over the join: " + testbed.FirstDifference(g, w)
	})
	t.Logf("the shards' union equals the GROUP BY over the join: %d groups", strings.Count(expected(), "\n"))
}
