package projections_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// aggDistinct are the count(distinct) aggregates the tests below run:
// over a utf8mb4_general_ci string ('apple', 'APPLE' and 'apple ' are one
// value), a nullable decimal, an expression, and one that only NULLs
// and no values may reach; and sum(distinct) of an integer and of a
// nullable decimal; beside count(*) and sum.
var aggDistinct = map[string]string{
	"orders":   "count(*)",
	"total":    "sum(amount)",
	"notes":    "count(distinct note)",
	"amounts":  "count(distinct amount)",
	"days":     "count(distinct DATE(created_at))",
	"statuses": "count(distinct status)",
	"big_qty":  "count(distinct CASE WHEN qty > 35 THEN qty END)",
	"qtys":     "sum(distinct qty)",
	"prices":   "sum(distinct amount)",
}

// spellings writes rows whose notes are one value under the column's
// collation in several spellings (case, trailing spaces), to groups 1
// and 2, and moves and deletes some of them.
func (s *aggShop) spellings(t *testing.T) {
	t.Helper()
	o := "`" + s.src + "`.orders"
	if err := s.bed.MySQL.Exec(t.Context(),
		"INSERT INTO "+o+" VALUES (900001, 1, 'paid', 1.00, 1, '2024-01-01', 'apple'), (900002, 1, 'paid', 1.00, 1, '2024-01-01', 'APPLE'),"+
			" (900003, 1, 'open', 1.0, 1, '2024-01-02', 'apple '), (900004, 2, 'paid', NULL, 1, '2024-01-02', 'Apple'), (900005, 2, 'open', NULL, 1, '2024-01-03', NULL)",
		"UPDATE "+o+" SET customer_id = 2 WHERE id = 900001",
		"UPDATE "+o+" SET note = 'ApPlE' WHERE id = 900002",
		"DELETE FROM "+o+" WHERE id = 900004",
	); err != nil {
		t.Fatal(err)
	}
}

// TestAggregateDistinct: count(distinct) per customer over a string
// under a case-insensitive collation, a decimal with NULLs, a date
// expression and a status that rows leave the filter by, while a seeded
// workload inserts, changes values, moves rows between groups and in and
// out of the filter, deletes, re-inserts and re-keys them, with a
// truncate midway and the projector restarted. The read table ends equal
// to the source's COUNT(DISTINCT …) GROUP BY, and no reference count
// row is left for a value no row holds. Then the whole history, shuffled
// across batches with a fifth duplicated, applied to a fresh sink, gives
// the same table.
func TestAggregateDistinct(t *testing.T) {
	bed := testbed.Get(t)
	s := newAggShop(t, bed, func(d *config.Projection) { d.Aggregates = aggDistinct })
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.write(t, seed, 500, 6)
	s.spellings(t)
	s.waitEqual(t, "after the first load")
	s.checkRefs(t, s.sinkDB)
	if err := bed.MySQL.Exec(t.Context(), "TRUNCATE TABLE `"+s.src+"`.orders"); err != nil {
		t.Fatal(err)
	}
	s.write(t, seed+1, 250, 6)
	stop()
	s.write(t, seed+2, 250, 6)
	stop = startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	s.waitEqual(t, "after a truncate, more load and a restart")
	s.checkRefs(t, s.sinkDB)
	stop()

	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topic)
	s.openSink(t)
	applyShuffled(t, s.sink, []*projections.Projection{s.p}, records, rand.New(rand.NewPCG(seed, 21)))
	if want, got := s.expected(t), s.actual(t, s.sinkDB); want != got {
		t.Fatalf("shuffled history with duplicates differs from the COUNT(DISTINCT) GROUP BY: %s", testbed.FirstDifference(got, want))
	}
	s.checkRefs(t, s.sinkDB)
	t.Logf("shuffled history (%d records) equals the COUNT(DISTINCT) GROUP BY", len(records))
}

// checkRefs checks every reference count table of db against the
// contributions: one row per (group, value) that some stored
// contribution to one of db's groups holds, with the number of them, and
// none other (every shard stores every contribution's group; a shard
// counts only its own groups' values).
func (s *aggShop) checkRefs(t *testing.T, db string) {
	t.Helper()
	for _, a := range s.p.Aggregation.Aggregates {
		if !a.Distinct() {
			continue
		}
		v := "`" + projections.ContributionColumn(a.Column) + "`"
		want := testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT `g_customer_id`, COUNT(DISTINCT "+v+"), COUNT("+v+") FROM `"+db+"`.`"+s.p.ContributionsTable()+
			"` WHERE `g_customer_id` IN (SELECT `customer_id` FROM `"+db+"`.`"+s.p.Table+"`) GROUP BY 1 HAVING COUNT("+v+") > 0 ORDER BY 1")
		got := testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT `g_customer_id`, COUNT(*), SUM(`_rs_refs`) FROM `"+db+"`.`"+s.p.DistinctTable(a.Column)+"` GROUP BY 1 ORDER BY 1")
		if want != got {
			t.Fatalf("reference counts of %s differ from the contributions (group|values|rows): %s", a.Column, testbed.FirstDifference(got, want))
		}
		if zero := testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT COUNT(*) FROM `"+db+"`.`"+s.p.DistinctTable(a.Column)+"` WHERE `_rs_refs` <= 0"); zero != "0|\n" {
			t.Fatalf("reference counts of %s: %s rows of no source row left", a.Column, zero)
		}
	}
}

// TestAggregateDistinctConcurrentHotGroups: a history concentrated on
// six hot customers, applied by one sink transaction per partition at
// the same time in small batches, onto a sink of two shards (shard_by
// the group): transactions that add and withdraw the same values of the
// same groups contend. The read tables, unioned, end equal to the
// source's COUNT(DISTINCT …) GROUP BY.
func TestAggregateDistinctConcurrentHotGroups(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	s := newAggShop(t, bed, func(d *config.Projection) { d.Aggregates = aggDistinct; d.ShardBy = "customer_id" })
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.write(t, seed, 1200, 6)
	s.spellings(t)
	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topic)

	sinkCfg, shards := twoShards(t, bed, "aggdrace")
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
		t.Fatalf("concurrently applied hot groups differ from the COUNT(DISTINCT) GROUP BY: %s", testbed.FirstDifference(got, want))
	}
	for _, db := range shards {
		s.checkRefs(t, db)
	}
	checkOwnGroups(t, s, sink, shards)
	checkEveryShardStoresEveryGroup(t, s, sink, shards)
	truncateMidway(t, s, sink, shards)
	checkOwnGroups(t, s, sink, shards)
	for _, db := range shards {
		s.checkRefs(t, db)
	}
	t.Logf("%d hot groups equal the COUNT(DISTINCT) GROUP BY", strings.Count(got, "\n"))
}
