package projections_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestAggregateConcurrentHotGroups: a history concentrated on eight hot
// customers (updates that move MIN and MAX away, deletes, group moves),
// applied by one sink transaction per partition at the same time, in
// small batches, onto a sink of two shards (shard_by the group): the
// transactions contend for the same group rows and retract each other's
// extremes. The read tables, unioned, end equal to the GROUP BY query,
// and every shard holds only the groups its key range owns (customer 8
// is on -80, 1–7 on 80-, so orders move between the shards).
func TestAggregateConcurrentHotGroups(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	s := newAggShop(t, bed, func(d *config.Projection) { d.ShardBy = "customer_id" })
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.write(t, seed, 1500, 8)
	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topic)

	sinkCfg, shards := twoShards(t, bed, "aggrace")
	sink, err := sinks.OpenSharded(ctx, "reads", sinkCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(ctx, sinks.DDL(s.p, s.types)); err != nil {
		t.Fatal(err)
	}
	byPart := map[int32][]projections.Record{}
	for _, r := range records {
		byPart[r.Partition] = append(byPart[r.Partition], projections.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
	}
	t.Logf("%d records in %d partitions, applied concurrently", len(records), len(byPart))
	var wg sync.WaitGroup
	errs := make(chan error, len(byPart))
	for part, rs := range byPart {
		rng := rand.New(rand.NewPCG(seed, uint64(part)))
		wg.Go(func() {
			for start := 0; start < len(rs); {
				n := 1 + rng.IntN(20)
				b, bad := s.p.Build(rs[start:min(start+n, len(rs))])
				if len(bad) > 0 {
					errs <- bad[0].Reason
					return
				}
				b.Offsets = nil
				if err := sink.Apply(ctx, s.p, b); err != nil {
					errs <- err
					return
				}
				start += n
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var parts []string
	for _, db := range shards {
		parts = append(parts, "SELECT "+strings.Join(s.columns(), ", ")+" FROM `"+db+"`.`"+s.p.Table+"`")
	}
	got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
	if want := s.expected(t); got != want {
		t.Fatalf("concurrently applied hot groups differ from the GROUP BY: %s", testbed.FirstDifference(got, want))
	}
	for i, sh := range sink.Shards {
		held := 0
		rows, err := bed.MySQL.DB().QueryContext(ctx, "SELECT customer_id FROM `"+shards[i]+"`.`"+s.p.Table+"`")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c int
			rows.Scan(&c)
			if ks := keyspace.ID(projections.ShardValue(projections.ValueOf(c), 0)); !sh.Range.Contains(ks) {
				t.Errorf("shard %s holds group %d, whose keyspace id %x it does not own", sh.Range.Text, c, ks)
			}
			held++
		}
		rows.Close()
		if held == 0 {
			t.Errorf("shard %s holds no group: the history never crosses the shards", sh.Range.Text)
		}
	}
	checkEveryShardStoresEveryGroup(t, s, sink, shards)
	truncateMidway(t, s, sink, shards)
	checkOwnGroups(t, s, sink, shards)
	t.Logf("%d hot groups equal the GROUP BY", strings.Count(got, "\n"))
}

// checkEveryShardStoresEveryGroup checks that every shard stores every
// contribution with its group and values, not only those of its own
// groups (what a reshard copies whole onto a new server), and that the
// contributions tables say so (sinks.EveryGroupMark).
func checkEveryShardStoresEveryGroup(t *testing.T, s *aggShop, sink *sinks.Sharded, shards []string) {
	t.Helper()
	all := func(db string) string {
		return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT * FROM `"+db+"`.`"+s.p.ContributionsTable()+"` ORDER BY `key_text`")
	}
	first := all(shards[0])
	for i, db := range shards[1:] {
		if got := all(db); got != first {
			t.Fatalf("shard %s stores other contributions than shard %s: %s", sink.Shards[i+1].Range.Text, sink.Shards[0].Range.Text, testbed.FirstDifference(got, first))
		}
	}
	if grouped := testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT COUNT(DISTINCT `g_customer_id`) FROM `"+shards[0]+"`.`"+s.p.ContributionsTable()+"`"); grouped == "0|\n" || grouped == "1|\n" {
		t.Fatalf("the contributions name %s groups: the history never crosses the shards", grouped)
	}
	for _, sh := range sink.Shards {
		if ok, err := sh.StoresEveryGroup(t.Context(), s.p); err != nil || !ok {
			t.Fatalf("shard %s: the contributions table does not carry the mark of every group stored (%v)", sh.Range.Text, err)
		}
	}
}

// checkOwnGroups checks that every shard holds only group rows (and
// distinct values) whose keyspace id its range owns.
func checkOwnGroups(t *testing.T, s *aggShop, sink *sinks.Sharded, shards []string) {
	t.Helper()
	tables := []struct{ table, col string }{{s.p.Table, "customer_id"}}
	for _, a := range s.p.Aggregation.Aggregates {
		if a.Distinct() {
			tables = append(tables, struct{ table, col string }{s.p.DistinctTable(a.Column), "g_customer_id"})
		}
	}
	for i, sh := range sink.Shards {
		for _, tb := range tables {
			ids := testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT DISTINCT `"+tb.col+"` FROM `"+shards[i]+"`.`"+tb.table+"`")
			for _, id := range strings.Fields(strings.ReplaceAll(ids, "|", " ")) {
				if ks := keyspace.ID([]byte(id)); !sh.Range.Contains(ks) {
					t.Fatalf("shard %s holds group %s in %s, whose keyspace id %x it does not own", sh.Range.Text, id, tb.table, ks)
				}
			}
		}
	}
}

// truncateMidway applies a truncation of the source at a version between
// the stored contributions' to both shards: each rebuilds its groups from
// the contributions left, which name every shard's groups, and keeps only
// its own; together they are the contributions' GROUP BY.
func truncateMidway(t *testing.T, s *aggShop, sink *sinks.Sharded, shards []string) {
	t.Helper()
	db := s.bed.MySQL.DB()
	c := "`" + shards[0] + "`.`" + s.p.ContributionsTable() + "`"
	var n int
	var at uint64
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+c).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(t.Context(), "SELECT `_rs_version` FROM "+c+" ORDER BY `_rs_version` LIMIT 1 OFFSET ?", n/2).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if err := sink.Apply(t.Context(), s.p, &projections.Batch{Contributions: []projections.Contribution{{Truncate: true, Version: at}}}); err != nil {
		t.Fatal(err)
	}
	want := testbed.RowsText(t, db, "SELECT `g_customer_id`, COUNT(*) FROM "+c+" WHERE `g_customer_id` IS NOT NULL GROUP BY 1 ORDER BY 1")
	var parts []string
	for _, sh := range shards {
		parts = append(parts, "SELECT customer_id, orders FROM `"+sh+"`.`"+s.p.Table+"`")
	}
	got := testbed.RowsText(t, db, "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
	if want != got || strings.Count(want, "\n") < 2 {
		t.Fatalf("after a truncation at version %d the shards' groups are not the contributions' GROUP BY (%d groups): %s", at, strings.Count(want, "\n"), testbed.FirstDifference(got, want))
	}
}
