package projector

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/internal/kafkalog"
)

// newConsumer is a group member for one membership of the projector. The
// partitions it holds are tracked in owned; where it resumes on each
// assignment is the sink's offsets (resumeAt).
func (pr *Projector) newConsumer(owned *owned) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(pr.o.Brokers...),
		// A worker killed without leaving is noticed within this, not the
		// default 45s: its partitions are not consumed until then.
		kgo.SessionTimeout(10 * time.Second),
		kgo.ConsumerGroup(pr.p.Group),
		kgo.ConsumeTopics(pr.p.Topics()...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Commit markers come with the records so the consumer lag can
		// count them as read (pollQueue.through); pollQueue drops them.
		kgo.KeepControlRecords(),
		// 256 KiB of each partition per fetch (Kafka's default is 1 MiB):
		// a narrow-row fetch of 6 partitions is then ~12,000 records
		// instead of ~50,000, all of them decompressed and held at once.
		// Drain peak RSS 173–186 → 104–113 MiB on narrow inserts, rate
		// within the noise (bench/results/history/tuning-log.md, entry 17).
		kgo.FetchMaxPartitionBytes(256 << 10),
		kgo.DisableAutoCommit(), // offsets are committed in the sink, with the rows
		kgo.RetryBackoffFn(retryBackoff),
		noReset,
		// Partitions added to a topic are consumed once the group sees
		// them in its metadata; the tailer's producer may write to them
		// as soon as it sees them (at once after its restart). Until
		// then their records sit unread while the lag, which counts the
		// partitions owned, says zero: Kafka's default of five minutes
		// would be that long.
		kgo.MetadataMaxAge(10 * time.Second),
		kgo.BlockRebalanceOnPoll(),
		kgo.AdjustFetchOffsetsFn(pr.resumeAt),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { owned.add(m) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { owned.remove(m) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { owned.remove(m) }),
		kgo.WithLogger(kafkalog.New(pr.log)),
	}
	if pr.o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(pr.o.InstanceID+"-"+pr.p.Name))
	}
	return kgo.NewClient(opts...)
}

// resumeAt sets where assigned partitions are consumed from: the replay
// requests for them are taken first, then each resumes at the next offset
// the sink has committed, or at the start when it has none.
func (pr *Projector) resumeAt(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	if err := pr.takeReplays(ctx, assigned); err != nil {
		return nil, err
	}
	stored, err := pr.sink.Offsets(ctx, pr.p)
	if err != nil {
		return nil, err
	}
	fresh := map[string][]int32{}
	for topic, parts := range assigned {
		for part := range parts {
			if next, ok := stored[topic][part]; ok {
				parts[part] = kgo.NewOffset().At(next)
			} else {
				parts[part] = kgo.NewOffset().AtStart()
				fresh[topic] = append(fresh[topic], part)
			}
		}
	}
	warnTrimmedHistory(ctx, pr.o.Brokers, pr.log, pr.p.TopicTables(), fresh)
	return assigned, nil
}
