package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// Sink applies batches to one projection's read table. Apply is
// synchronous: when it returns nil, the writes and the offsets are
// committed together; an error means neither is.
type Sink interface {
	Offsets(ctx context.Context, p *Projection) (map[int32]int64, error)
	Apply(ctx context.Context, p *Projection, writes []Write, offsets map[int32]int64) error
}

// Projector keeps one projection's read table up to date from its topic.
// Projectors of one projection in several processes share the partitions
// through a consumer group; the offsets live in the sink, committed with
// the rows, and are where consumption resumes on every assignment.
type Projector struct {
	p          *Projection
	sink       Sink
	brokers    []string
	instanceID string
	log        *slog.Logger
}

// NewProjector validates and does no I/O. instanceID, when set, makes the
// worker a static group member (see config kafka.group_instance_id).
func NewProjector(p *Projection, sink Sink, brokers []string, instanceID string, log *slog.Logger) (*Projector, error) {
	if len(brokers) == 0 {
		return nil, errors.New("projector: no Kafka brokers")
	}
	return &Projector{p: p, sink: sink, brokers: brokers, instanceID: instanceID, log: log.With("component", "projector", "projection", p.Name)}, nil
}

// Group is the consumer group of a projection's workers.
func Group(p *Projection) string { return "readside-projection-" + p.Name }

// Run consumes until ctx is cancelled (nil) or a batch cannot be applied.
func (pr *Projector) Run(ctx context.Context) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(pr.brokers...),
		// A worker killed without leaving is noticed within this, not the
		// default 45s: its partitions are not consumed until then.
		kgo.SessionTimeout(10 * time.Second),
		kgo.ConsumerGroup(Group(pr.p)),
		kgo.ConsumeTopics(pr.p.Topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit(), // offsets are committed in the sink, with the rows
		kgo.BlockRebalanceOnPoll(),
		kgo.AdjustFetchOffsetsFn(func(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			stored, err := pr.sink.Offsets(ctx, pr.p)
			if err != nil {
				return nil, err
			}
			for topic, parts := range assigned {
				for part := range parts {
					if next, ok := stored[part]; ok {
						parts[part] = kgo.NewOffset().At(next)
					} else {
						parts[part] = kgo.NewOffset().AtStart()
					}
				}
				assigned[topic] = parts
			}
			return assigned, nil
		}),
		kgo.WithLogger(kslog.New(pr.log)),
	}
	if pr.instanceID != "" {
		opts = append(opts, kgo.InstanceID(pr.instanceID+"-"+pr.p.Name))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Leaving the group on Close revokes partitions, which waits for
	// AllowRebalance under BlockRebalanceOnPoll: release it first.
	defer cl.AllowRebalance()
	for {
		fetches := cl.PollRecords(ctx, 5000)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) {
				return nil
			}
			pr.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
		}
		if err := pr.applyBatch(ctx, fetches); err != nil {
			cl.AllowRebalance()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		cl.AllowRebalance()
	}
}

// applyBatch maps the records to writes, keeps the newest write per read
// key, and applies them with the next offsets.
func (pr *Projector) applyBatch(ctx context.Context, fetches kgo.Fetches) error {
	offsets := map[int32]int64{}
	var writes []Write
	var failed error
	fetches.EachRecord(func(r *kgo.Record) {
		offsets[r.Partition] = r.Offset + 1
		if r.Value == nil || failed != nil { // tombstone: the delete event came before it
			return
		}
		e, err := DecodeEvent(r.Value)
		var ws []Write
		if err == nil {
			ws, err = pr.p.Writes(e)
		}
		if err != nil {
			failed = fmt.Errorf("projection %s: record %s/%d@%d: %w", pr.p.Name, r.Topic, r.Partition, r.Offset, err)
			return
		}
		writes = append(writes, ws...)
	})
	writes = Coalesce(writes)
	if failed != nil {
		return failed // dead-lettering (on_error: dlq) is not built yet: stop, fail closed
	}
	if len(offsets) == 0 {
		return nil
	}
	start := time.Now()
	if err := pr.sink.Apply(ctx, pr.p, writes, offsets); err != nil {
		return fmt.Errorf("projection %s: applying a batch of %d writes: %w", pr.p.Name, len(writes), err)
	}
	pr.log.Debug("batch applied", "writes", len(writes), "took", time.Since(start))
	return nil
}

// Coalesce keeps the newest write per read key (and every truncation): a
// batch then touches each row once, and applying only the newest is what
// the version guard would make of the whole sequence anyway.
func Coalesce(ws []Write) []Write {
	newest := map[string]int{}
	out := ws[:0:0]
	for _, w := range ws {
		if w.Kind == Truncate {
			out = append(out, w)
			continue
		}
		if i, ok := newest[w.Key]; ok {
			if out[i].Version < w.Version {
				out[i] = w
			}
			continue
		}
		newest[w.Key] = len(out)
		out = append(out, w)
	}
	return out
}
