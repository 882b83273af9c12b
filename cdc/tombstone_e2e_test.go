package cdc

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestTombstoneFollowsEveryDelete reads the raw topic (tombstones
// included, unlike consumer.next) and checks that every d event is
// followed, in its partition, by a tombstone as the next record of its
// key (same key bytes, null value), and that no tombstone comes without a
// d before it — for plain deletes, a multi-row delete, primary key changes
// (single and multi-row), a key deleted, re-inserted and deleted again,
// an insert and delete in one transaction, and deletes after a TRUNCATE.
// A TRUNCATE itself is one t event per partition with no key, so it has
// no tombstone (docs/events.md).
func TestTombstoneFollowsEveryDelete(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "tomb")
	if err != nil {
		t.Fatal(err)
	}
	tbl := fmt.Sprintf("`%s`.t", db)
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v VARCHAR(20))"); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".t")
	topic := event.TopicFor(cfg.Kafka.TopicPrefix, db, "t")
	startTailer(t, cfg)
	waitForTailer(t, bed, cfg)
	var values string
	for i := 1; i <= 40; i++ {
		values += fmt.Sprintf("%s(%d, 'v%d')", map[bool]string{true: "", false: ", "}[i == 1], i, i)
	}
	if err := bed.MySQL.Exec(ctx,
		"INSERT INTO "+tbl+" VALUES "+values,
		"DELETE FROM "+tbl+" WHERE id = 1",                            // plain: 1 d
		"DELETE FROM "+tbl+" WHERE id BETWEEN 2 AND 11",               // multi-row: 10 d
		"UPDATE "+tbl+" SET id = id + 100 WHERE id BETWEEN 12 AND 16", // key changes: 5 d + 5 c
		"UPDATE "+tbl+" SET id = 200 WHERE id = 17",                   // key change: 1 d + 1 c
		"INSERT INTO "+tbl+" VALUES (1, 'again')",                     // a deleted key comes back…
		"DELETE FROM "+tbl+" WHERE id = 1",                            // …and goes again: 1 d
	); err != nil {
		t.Fatal(err)
	}
	// An insert and its delete in one transaction: 1 d.
	tx, err := bed.MySQL.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO " + tbl + " VALUES (50, 'brief')", "DELETE FROM " + tbl + " WHERE id = 50"} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		"TRUNCATE TABLE "+tbl, // t events, no deletes
		"INSERT INTO "+tbl+" VALUES (300, 'after'), (301, 'after')",
		"DELETE FROM "+tbl+" WHERE id IN (300, 301)", // 2 d
	); err != nil {
		t.Fatal(err)
	}
	const wantDeletes = 1 + 10 + 5 + 1 + 1 + 1 + 2

	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	count := func(pred func(*kgo.Record) bool) int {
		n := 0
		for _, r := range recs {
			if pred(r) {
				n++
			}
		}
		return n
	}
	isOp := func(op string) func(*kgo.Record) bool {
		return func(r *kgo.Record) bool {
			var e struct{ Op string }
			return r.Value != nil && json.Unmarshal(r.Value, &e) == nil && e.Op == op
		}
	}
	isTombstone := func(r *kgo.Record) bool { return r.Value == nil }
	// Read until the deletes and the truncate are in, then until the
	// topic stays quiet, so a stray or late record would be seen too.
	deadline := time.Now().Add(90 * time.Second)
	quiet := time.Now()
	for count(isOp("d")) < wantDeletes || count(isOp("t")) < int(cfg.Kafka.Partitions) || time.Since(quiet) < 3*time.Second {
		if time.Now().After(deadline) {
			t.Fatalf("after 90s: %d d events (want %d), %d t events (want %d), %d tombstones",
				count(isOp("d")), wantDeletes, count(isOp("t")), cfg.Kafka.Partitions, count(isTombstone))
		}
		pctx, cancel := contextWithTimeout(t, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			quiet = time.Now()
			recs = append(recs, r)
		})
	}
	if n := count(isOp("d")); n != wantDeletes {
		t.Fatalf("%d d events, want %d", n, wantDeletes)
	}

	// Per partition in offset order: after a d, the next record of its key
	// must be the tombstone.
	byPart := map[int32][]*kgo.Record{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	tombstones := 0
	for part, rs := range byPart {
		slices.SortFunc(rs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
		pending := map[string]int64{} // key → offset of a d still owed its tombstone
		for _, r := range rs {
			k := string(r.Key)
			if at, ok := pending[k]; ok {
				if r.Value != nil {
					t.Errorf("partition %d: the d of key %s at offset %d is followed by a non-tombstone for that key at offset %d: %s", part, k, at, r.Offset, r.Value)
				}
				delete(pending, k)
				if r.Value == nil {
					tombstones++
					continue
				}
			} else if r.Value == nil {
				t.Errorf("partition %d: tombstone for key %s at offset %d without a d before it", part, k, r.Offset)
				continue
			}
			if isOp("d")(r) {
				pending[k] = r.Offset
			}
		}
		for k, at := range pending {
			t.Errorf("partition %d: the d of key %s at offset %d has no tombstone after it", part, k, at)
		}
	}
	if tombstones != wantDeletes {
		t.Errorf("%d tombstones follow their d, want %d", tombstones, wantDeletes)
	}
	t.Logf("%d records on %d partitions: %d d events, each followed by its tombstone", len(recs), len(byPart), wantDeletes)
}
