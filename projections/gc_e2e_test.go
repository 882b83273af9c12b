package projections_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
)

// TestTombstoneCollection: after the topics' older half is deleted
// (retention), tombstones below the horizon are collected, and then every
// retained upsert applied again — late, shuffled, without the deletes
// that followed it — still cannot bring a deleted row back. Collecting
// above the horizon would let it (the test fails so).
func TestTombstoneCollection(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	p, sink := prepare(t, bed, cfg, sinkDB)
	ctx := t.Context()
	runTailer(t, bed, cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	writeMessages(t, bed, src, seed, 3000)
	pr, err := projector.New(p, sink, projector.Options{Brokers: cfg.Kafka.Brokers, Log: logger()})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pr.Run(pctx) }()
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkDB+"`.messages_by_sender")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Retention: delete the older half of every partition.
	dropOlderHalf(t, cfg.Kafka.Brokers, p.Topic)
	h, ok, err := projector.Horizon(ctx, cfg.Kafka.Brokers, p)
	if err != nil || !ok {
		t.Fatalf("horizon: %v %v", ok, err)
	}
	var before int
	_ = sink.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM _readside_tombstones").Scan(&before)
	n, err := sink.CollectTombstones(ctx, p, h)
	if err != nil {
		t.Fatal(err)
	}
	var below int
	_ = sink.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM _readside_tombstones WHERE version < ?", h).Scan(&below)
	if n == 0 || below != 0 {
		t.Fatalf("collected %d of %d tombstones, %d left below the horizon %d", n, before, below, h)
	}
	t.Logf("horizon %d (≈ %s): %d of %d tombstones collected", h, time.Unix(int64(h>>20), 0).UTC().Format(time.RFC3339), n, before)

	// Every retained upsert again, late and shuffled, deletes left out.
	var ups []projections.Write
	for _, w := range writesOf(t, p, testbed.TopicRecords(t, cfg.Kafka.Brokers, p.Topic)) {
		if w.Kind == projections.Upsert {
			ups = append(ups, w)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	rng.Shuffle(len(ups), func(i, j int) { ups[i], ups[j] = ups[j], ups[i] })
	for start := 0; start < len(ups); start += 100 {
		if err := sink.Apply(ctx, p, &projections.Batch{Writes: projections.Coalesce(ups[start:min(start+100, len(ups))])}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d retained upserts re-applied late", len(ups))
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkDB+"`.messages_by_sender")
}
