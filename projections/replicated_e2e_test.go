package projections_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/verify"
)

// TestReplicatedOnTwoServers: SPEC.md's customer_tiers reference
// projection (replicated: true) on a sink of two shards, each on its own
// MariaDB server. Snapshotted rows, inserts, updates, primary key changes
// and deletes of the reference table reach both shards, each ends equal to
// the source table, and verify finds both copies equal.
func TestReplicatedOnTwoServers(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	second, err := testbed.StartMariaDBWith(ctx, filepath.Join(bed.Dir(), "second-sink"), testbed.MariaDBOptions{ServerID: 21})
	t.Cleanup(func() {
		if second != nil {
			if err := second.Close(); err != nil {
				t.Errorf("closing the second sink server: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := bed.MySQL.CreateDatabase(ctx, "ref")
	if err != nil {
		t.Fatal(err)
	}
	table := "`" + src + "`.customer_tiers"
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+table+" (tier VARCHAR(20) PRIMARY KEY, label VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL, discount DECIMAL(5,2) NULL)",
		"INSERT INTO "+table+" VALUES ('free', 'Free', NULL), ('pro', 'Pro ✓', 5.00), ('vip', 'VIP', 12.50)"); err != nil {
		t.Fatal(err)
	}
	// Shard -80 on the test bed's server, 80- on the second one.
	servers := []*testbed.MySQL{bed.MySQL, second}
	var shardDBs []string
	sink := config.Sink{}
	for i, kr := range []string{"-80", "80-"} {
		db, err := servers[i].CreateDatabase(ctx, "refreads")
		if err != nil {
			t.Fatal(err)
		}
		shardDBs = append(shardDBs, db)
		sink.Shards = append(sink.Shards, config.Shard{KeyRange: kr, DSN: config.Secret(servers[i].AdminDSN() + db)})
	}
	cfg := bed.Config("ref", src+".customer_tiers")
	cfg.Source.Snapshot.Mode = "initial"
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"customer_tiers": {
		From: src + ".customer_tiers", Sink: "reads", Key: []string{"tier"}, Replicated: true,
		Columns: map[string]string{"tier": "tier", "label": "label", "discount": "discount"},
	}}
	p, ddl := compileOne(ctx, t, bed, cfg)
	sk := openSink(ctx, t, sink, ddl)
	runTailer(t, bed, cfg)
	stop := startProjector(t, p, sk, cfg.Kafka.Brokers)
	defer stop()

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	exec := func(q string, args ...any) {
		if _, err := bed.MySQL.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("INSERT INTO " + table + " VALUES ('gold', 'Gold', 7.25), ('staff', 'Staff', 100.00)")
	exec("UPDATE " + table + " SET label = 'Professional', discount = 6.00 WHERE tier = 'pro'")
	exec("UPDATE " + table + " SET tier = 'platinum' WHERE tier = 'vip'") // a key change: delete + insert on every shard
	exec("DELETE FROM " + table + " WHERE tier = 'staff'")
	exec("UPDATE " + table + " SET discount = discount + 1 WHERE discount IS NOT NULL") // multi-row
	for i := range 300 {
		tier := fmt.Sprintf("t%02d", rng.IntN(60))
		switch rng.IntN(4) {
		case 0, 1:
			exec("INSERT INTO "+table+" VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE label = VALUES(label)", tier, fmt.Sprintf("tier %d '%d'", i, rng.IntN(9)), fmt.Sprintf("%d.%02d", rng.IntN(100), rng.IntN(100)))
		case 2:
			exec("UPDATE "+table+" SET discount = NULL, label = ? WHERE tier = ?", fmt.Sprintf("nulled %d", i), tier)
		default:
			exec("DELETE FROM "+table+" WHERE tier = ?", tier)
		}
	}

	const cols = "tier, label, discount"
	want := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT "+cols+" FROM "+table+" ORDER BY tier")
	}
	deadline := time.Now().Add(120 * time.Second)
	for i, srv := range servers {
		for {
			w := want()
			g := testbed.RowsText(t, srv.DB(), "SELECT "+cols+" FROM `"+shardDBs[i]+"`.customer_tiers ORDER BY tier")
			if w == g {
				t.Logf("shard %s on %s holds the whole table: %d rows", sink.Shards[i].KeyRange, srv.Addr(), strings.Count(w, "\n"))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("shard %s on %s differs from the source after 120s:\nwant:\n%.2000s\ngot:\n%.2000s", sink.Shards[i].KeyRange, srv.Addr(), w, g)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	srcDB, err := verify.OpenSource(cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer srcDB.Close()
	rep, err := verify.New(p, srcDB, sk, verify.Options{ChunkRows: 20, Settle: 5 * time.Second, Ends: projector.Ends(cfg.Kafka.Brokers), Log: logger()}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows := int64(strings.Count(want(), "\n"))
	if rep.Drift() != 0 || rep.Unsettled != 0 || rep.SourceRows != 2*rows || rep.SinkRows != 2*rows {
		t.Fatalf("verify: drift %d, unsettled %d, %d source and %d sink rows; want EQUAL with %d rows on each of 2 shards (samples %+v)",
			rep.Drift(), rep.Unsettled, rep.SourceRows, rep.SinkRows, rows, rep.Samples)
	}
}
