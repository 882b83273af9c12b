package cdc

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Status is what the tailer tells the operations endpoint (/status,
// /readyz) about itself.
type Status struct {
	// Connected is true while a binlog stream is open.
	Connected bool
	// Checkpoint is the last one committed to (or loaded from) Kafka; nil
	// before the first.
	Checkpoint *Checkpoint
	// LagSeconds is readside_source_lag_seconds: 0 once a heartbeat showed
	// the tailer caught up.
	LagSeconds float64
	// LastHeard is when the source last sent anything (an event or a
	// heartbeat); a live stream hears something every heartbeat period.
	LastHeard time.Time
}

// tailerState is the tailer's side of Status, written by the stream.
type tailerState struct {
	connected  atomic.Bool
	checkpoint atomic.Pointer[Checkpoint]
	lag        atomic.Uint64 // math.Float64bits
	lastHeard  atomic.Int64  // Unix nanoseconds
}

// Status reports the tailer's state; safe to call from any goroutine.
func (t *Tailer) Status() Status {
	s := Status{
		Connected:  t.state.connected.Load(),
		Checkpoint: t.state.checkpoint.Load(),
		LagSeconds: math.Float64frombits(t.state.lag.Load()),
	}
	if n := t.state.lastHeard.Load(); n != 0 {
		s.LastHeard = time.Unix(0, n)
	}
	return s
}

// setLag sets the lag gauge and the value Status reports.
func (t *Tailer) setLag(seconds float64) {
	t.metrics.lag.Set(seconds)
	t.state.lag.Store(math.Float64bits(seconds))
}

func (t *Tailer) heard() { t.state.lastHeard.Store(t.now().UnixNano()) }

func (t *Tailer) committed(cp Checkpoint) { t.state.checkpoint.Store(&cp) }

// ReadCheckpoint reads the newest committed checkpoint of the tailer with
// transactional id txnID from the checkpoint topic, without joining or
// fencing anything: for `readside status` and processes that run no
// tailer. found is false when there is none.
func ReadCheckpoint(ctx context.Context, brokers []string, topic, txnID string) (cp Checkpoint, found bool, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return Checkpoint{}, false, err
	}
	defer cl.Close()
	return readCheckpoint(ctx, kadm.NewClient(cl), brokers, topic, txnID)
}

// readCheckpoint reads the last committed record keyed txnID in the
// checkpoint topic.
func readCheckpoint(ctx context.Context, adm *kadm.Client, brokers []string, topic, txnID string) (Checkpoint, bool, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("listing end offsets of %s: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return Checkpoint{}, false, fmt.Errorf("end offset of %s: %v", topic, end.Err)
	}
	if end.Offset == 0 {
		return Checkpoint{}, false, nil
	}
	// Control records are kept so the read can tell it reached the end even
	// when the last offsets are transaction markers.
	rd, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return Checkpoint{}, false, err
	}
	defer rd.Close()
	var last []byte
	for seen := int64(-1); seen < end.Offset-1; {
		fetches := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return Checkpoint{}, false, err
		}
		for _, fe := range fetches.Errors() {
			return Checkpoint{}, false, fmt.Errorf("reading %s: %w", topic, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			seen = max(seen, r.Offset)
			if r.Attrs.IsControl() || string(r.Key) != txnID {
				return
			}
			last = r.Value
		})
	}
	if last == nil {
		return Checkpoint{}, false, nil
	}
	cp, err := decodeCheckpoint(last)
	if err != nil {
		// Fatal: retrying would read the same record again.
		return Checkpoint{}, false, &FatalError{fmt.Errorf("%w in topic %s for %s: refusing to guess a position; restore it or delete the record and re-snapshot", err, topic, txnID)}
	}
	return cp, true, nil
}
