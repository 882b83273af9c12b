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
	t.Logf("%d hot groups equal the GROUP BY", strings.Count(got, "\n"))
}
