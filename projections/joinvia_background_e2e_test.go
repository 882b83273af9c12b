package projections_test

// A join through a parent's parent with its fan-out in the background
// (fan_out: background): the same steps, live run, verify and repair as
// in_batch, and a shuffled history applied while the background copies
// run beside the batches.

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

func TestJoinViaBackgroundSteps(t *testing.T) { joinViaSteps(t, "background") }

func TestJoinViaBackgroundLive(t *testing.T) { joinViaLive(t, "background") }

// TestJoinViaBackgroundShuffledHistory: the whole history of the four
// topics applied shuffled with a fifth duplicated, as in
// TestJoinViaShuffledHistory, while each shard's background fan-out runs
// beside the batches (its copies meet the batches at the state-row locks);
// once the batches are in and the pending parents copied, both read
// tables equal the SQL join, and no parent is left pending.
func TestJoinViaBackgroundShuffledHistory(t *testing.T) {
	bed := testbed.Get(t)
	s := newRegionShopFanOut(t, bed, "background", "-80", "80-")
	for _, p := range s.ps {
		if p.FanOut != projections.FanOutBackground {
			t.Fatalf("%s compiled with fan_out %s", p.Name, p.FanOut)
		}
	}
	tl := runTailer(t, bed, s.cfg)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	s.write(t, seed, 2500)
	waitPublished(t, bed, tl)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, p := range s.ps {
		wg.Go(func() {
			if err := s.sink.RunFanOuts(ctx, p, nil); err != nil {
				t.Errorf("background fan-out of %s: %v", p.Name, err)
			}
		})
	}
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.ps[0].Topics()...)
	applyShuffled(t, s.sink, s.ps, records, rand.New(rand.NewPCG(seed, 5)))
	cancel()
	wg.Wait()
	for _, p := range s.ps {
		if err := s.sink.DrainFanOuts(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatalf("shuffled history with a background fan-out differs from the SQL join:\nwant:\n%.4000s\ngot:\n%.4000s", want, got)
	}
	for _, db := range s.shards {
		for _, p := range s.ps {
			for _, j := range p.Joins {
				var n int
				if err := bed.MySQL.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM `"+db+"`.`"+j.PendingTable(p)+"`").Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 0 {
					t.Errorf("%s.%s holds %d parents after the drain", db, j.PendingTable(p), n)
				}
			}
		}
	}
	t.Logf("shuffled history with a background fan-out equals the SQL join: %d rows per read table", strings.Count(s.expected(t), "\n")/2)
}
