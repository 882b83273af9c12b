package projections_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projector"
)

// TestProjectorCollectsTombstonesEvery: a running projector collects the
// tombstones below the horizon on its own, as often as Options.GCInterval
// says (the default, 10 minutes, would not within the test's deadline).
func TestProjectorCollectsTombstonesEvery(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	p, sink := prepare(t, bed, cfg, sinkDB)
	ctx := t.Context()
	runTailer(t, bed, cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	writeMessages(t, bed, src, seed, 1500)
	stop := startProjector(t, p, sink, cfg.Kafka.Brokers)
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkDB+"`.messages_by_sender")
	stop()

	// Tombstones fall below the horizon as retention deletes records.
	dropOlderHalf(t, cfg.Kafka.Brokers, p.Topic)
	h, ok, err := projector.Horizon(ctx, cfg.Kafka.Brokers, p)
	if err != nil || !ok {
		t.Fatalf("horizon: %v %v", ok, err)
	}
	below := func() int {
		var n int
		if err := sink.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM _readside_tombstones WHERE version < ?", h).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := below()
	if n == 0 {
		t.Fatalf("no tombstone below the horizon %d: the workload deleted too little to test collection", h)
	}

	stop = startProjectorWith(t, p, sink, projector.Options{Brokers: cfg.Kafka.Brokers, GCInterval: 200 * time.Millisecond})
	defer stop()
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		left := below()
		return left == 0, fmt.Sprintf("the projector left %d of %d tombstones below the horizon %d with a GC interval of 200ms", left, n, h)
	})
	t.Logf("the projector collected the %d tombstones below the horizon %d", n, h)
}

// dropOlderHalf deletes the older half of every partition of topic, as
// retention would.
func dropOlderHalf(t *testing.T, brokers []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	trim := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) { trim.AddOffset(o.Topic, o.Partition, o.Offset/2, -1) })
	if _, err := adm.DeleteRecords(t.Context(), trim); err != nil {
		t.Fatal(err)
	}
}
