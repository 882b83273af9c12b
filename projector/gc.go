package projector

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/projections"
)

// defaultGCInterval is how often a projector collects tombstones unless
// Options.GCInterval says otherwise: a collection reads the first retained
// record of every partition, and tombstones only become collectable as
// retention deletes records, which is slow.
const defaultGCInterval = 10 * time.Minute

// Horizon is the lowest version any replay of p's topics can bring: the
// version of the first record still retained in each partition, the
// lowest of them. Within a partition versions grow with the offset (the
// tailer assigns them in log order from one clock that travels with its
// checkpoint), so nothing retained is older. ok is false when a partition
// is empty or holds no event to read a version from.
func Horizon(ctx context.Context, brokers []string, p *projections.Projection) (uint64, bool, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, p.Topics()...)
	if err != nil {
		return 0, false, err
	}
	ends, err := adm.ListEndOffsets(ctx, p.Topics()...)
	if err != nil {
		return 0, false, err
	}
	want := map[string]map[int32]kgo.Offset{}
	parts := 0
	var bad error
	starts.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			bad = o.Err
			return
		}
		if end, ok := ends.Lookup(o.Topic, o.Partition); !ok || end.Offset <= o.Offset {
			return // empty partition: nothing to replay from it
		}
		if want[o.Topic] == nil {
			want[o.Topic] = map[int32]kgo.Offset{}
		}
		want[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset)
		parts++
	})
	if bad != nil {
		return 0, false, bad
	}
	if parts == 0 {
		return 0, false, nil
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(want), kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if err != nil {
		return 0, false, err
	}
	defer rd.Close()
	first := map[string]map[int32]uint64{}
	seen := 0
	for seen < parts {
		// A partition whose retained records are all Kafka tombstones
		// yields no version: give up this round rather than guess.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fetches := rd.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		if pctx.Err() != nil && fetches.NumRecords() == 0 {
			return 0, false, nil
		}
		var loadErr error
		fetches.EachRecord(func(r *kgo.Record) {
			if first[r.Topic] == nil {
				first[r.Topic] = map[int32]uint64{}
			}
			if _, done := first[r.Topic][r.Partition]; done {
				return
			}
			if loadErr != nil {
				return
			}
			// A record of a schema not fetched is no tombstone: the
			// horizon waits for the registry rather than read past it.
			if loadErr = p.LoadSchemas(ctx, slices.Values([][]byte{r.Value})); loadErr != nil {
				return
			}
			// Aborted records count too: they hold versions the clock
			// handed out, so they are a lower bound as well.
			e, err := p.NewDecoder().Decode(r.Value)
			if r.Value == nil || err != nil {
				return // a tombstone record: read on to the next one
			}
			first[r.Topic][r.Partition] = e.Version
			seen++
		})
		if loadErr != nil {
			return 0, false, loadErr
		}
	}
	var h uint64
	for _, ps := range first {
		for _, v := range ps {
			if h == 0 || v < h {
				h = v
			}
		}
	}
	return h, true, nil
}

// collectTombstones drops tombstones below the topics' horizon (see
// Horizon). Failures are logged and retried next interval: tombstones
// only cost space.
func (pr *Projector) collectTombstones(ctx context.Context) {
	tc, ok := pr.sink.(projections.TombstoneCollector)
	if !ok {
		return
	}
	h, ok, err := Horizon(ctx, pr.o.Brokers, pr.p)
	if err != nil || !ok {
		if err != nil {
			pr.log.Warn("tombstone collection: cannot read the horizon", "err", err)
		}
		return
	}
	n, err := tc.CollectTombstones(ctx, pr.p, h)
	if err != nil {
		pr.log.Warn("tombstone collection failed", "err", err)
		return
	}
	pr.log.Info("tombstones collected", "deleted", n, "horizon_version", h)
}
