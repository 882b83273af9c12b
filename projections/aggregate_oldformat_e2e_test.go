package projections_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAggregateOldFormatShards: contributions tables made before every
// shard stored every contribution's group hold another shard's group as
// NULL. Half a history is applied on two shards, then each shard's
// contributions of other shards' groups are set to NULL and the mark is
// removed from the tables' comments (the old format); the live projector
// applies the rest onto them: the shards' union ends equal to the
// COUNT(DISTINCT …) GROUP BY, each shard holding only its own groups, and
// StoresEveryGroup tells those tables from the new ones.
func TestAggregateOldFormatShards(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	s := newAggShop(t, bed, func(d *config.Projection) { d.Aggregates = aggDistinct; d.ShardBy = "customer_id" })
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.write(t, seed, 800, 6)
	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topic)

	sinkCfg, shards := twoShards(t, bed, "aggold")
	sink, err := sinks.OpenSharded(ctx, "reads", sinkCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(ctx, sinks.DDL(s.p, s.types)); err != nil {
		t.Fatal(err)
	}
	apply := func(rs []*kgo.Record) {
		t.Helper()
		for start := 0; start < len(rs); start += 25 {
			var part []projections.Record
			for _, r := range rs[start:min(start+25, len(rs))] {
				part = append(part, projections.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
			}
			b, bad := s.p.Build(part)
			if len(bad) > 0 {
				t.Fatal(bad[0].Reason)
			}
			b.Offsets = nil
			if err := sink.Apply(ctx, s.p, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(records[:len(records)/2])
	db := bed.MySQL.DB()
	nulled := 0
	for i, sh := range sink.Shards {
		c := "`" + shards[i] + "`.`" + s.p.ContributionsTable() + "`"
		ids := testbed.RowsText(t, db, "SELECT DISTINCT `g_customer_id` FROM "+c+" WHERE `g_customer_id` IS NOT NULL")
		for _, id := range strings.Fields(strings.ReplaceAll(ids, "|", " ")) {
			if sh.Range.Contains(keyspace.ID([]byte(id))) {
				continue
			}
			res, err := db.ExecContext(ctx, "UPDATE "+c+" SET `g_customer_id` = NULL WHERE `g_customer_id` = ?", id)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := res.RowsAffected()
			nulled += int(n)
		}
		if err := bed.MySQL.Exec(ctx, "ALTER TABLE "+c+" COMMENT = 'readside contributions (old format)'"); err != nil {
			t.Fatal(err)
		}
		if ok, err := sh.StoresEveryGroup(ctx, s.p); err != nil || ok {
			t.Fatalf("shard %s: a table without the mark is taken for one storing every group (%v)", sh.Range.Text, err)
		}
	}
	if nulled == 0 {
		t.Fatal("no contribution of another shard's group to set NULL: the history never crosses the shards")
	}
	apply(records[len(records)/2:])
	var parts []string
	for _, db := range shards {
		parts = append(parts, "SELECT "+strings.Join(s.columns(), ", ")+" FROM `"+db+"`.`"+s.p.Table+"`")
	}
	got := testbed.RowsText(t, db, "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
	if want := s.expected(t); got != want {
		t.Fatalf("old-format contributions, applied on: the shards differ from the COUNT(DISTINCT) GROUP BY: %s", testbed.FirstDifference(got, want))
	}
	for _, db := range shards {
		s.checkRefs(t, db)
	}
	checkOwnGroups(t, s, sink, shards)
	t.Logf("%d records over old-format contributions (%d set NULL): %d groups equal the COUNT(DISTINCT) GROUP BY", len(records), nulled, strings.Count(got, "\n"))
}
