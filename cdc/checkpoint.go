package cdc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/readside/readside/event"
)

// Checkpoint is the tailer's durable state: the position after the last
// source transaction published and the version clock at that point. It is
// written to the checkpoint topic inside the same Kafka transaction as the
// events it covers, so it can never run ahead of (or behind) them.
type Checkpoint struct {
	Position    Position  `json:"position"`
	LastVersion uint64    `json:"last_version"`
	WrittenAt   time.Time `json:"written_at"`
	// Snapshots still to do, the first in progress.
	Snapshots []SnapshotTask `json:"snapshots,omitempty"`
	// Tables are the captured tables whose existing rows are covered
	// (cdc/snapshot_added.go); nil in checkpoints of older versions.
	Tables []string `json:"tables,omitempty"`
	// Keys are, per captured table, the key columns of the events the
	// tailer published for it (key_change.go); nil in checkpoints of older
	// versions and before a table's first row.
	Keys map[string][]string `json:"keys,omitempty"`
	// LastRequest is the id of the last snapshot request read from the
	// binlog: rows above it are not read yet (readside snapshot --pending).
	LastRequest uint64 `json:"last_request,omitempty"`
	// Finished are the last requested snapshots the tailer completed,
	// oldest first (at most maxFinished): `readside snapshot --wait` reads
	// its request's total here once it left Snapshots.
	Finished []SnapshotFinished `json:"finished,omitempty"`
	// InitialLoad is how far the initial snapshot got
	// (cdc/snapshot_progress.go); nil when there was none.
	InitialLoad *InitialLoad `json:"initial_load,omitempty"`
	// SchemaHistory: the schema history topic holds the schema as of
	// Position (the tailer kept it up to here).
	SchemaHistory bool `json:"schema_history,omitempty"`
	// The server the position was read from. A file/offset is only
	// meaningful there; a GTID set is valid on every server of the
	// replication topology.
	ServerID   uint32 `json:"server_id,omitempty"`
	ServerUUID string `json:"server_uuid,omitempty"` // MySQL only
	// SourceTS is the source commit time (Unix seconds) of the last
	// source transaction the checkpoint covers; 0 before the first one.
	SourceTS int64 `json:"source_ts,omitempty"`
	// Transactions counts the source transactions the tailer has read
	// through the checkpoint since its first start (every transaction of
	// the binlog it followed, with or without a captured row), carried
	// from checkpoint to checkpoint across restarts.
	Transactions uint64 `json:"transactions,omitempty"`
	// Published is, per table topic and partition, the offset after the
	// last record the tailer published there up to and including this
	// checkpoint, for every partition of every table topic, not only those
	// of this Kafka transaction (cdc/published.go). Only when a sink is
	// transactional (docs/design/consistent-sinks.md); nil otherwise.
	Published event.Offsets `json:"published,omitempty"`
}

// ErrCorruptCheckpoint means the stored checkpoint failed its checksum.
var ErrCorruptCheckpoint = event.ErrCorruptCheckpoint

// encodeCheckpoint is the stored form (event.SealCheckpoint): readers of
// the checkpoint topic other than the tailer decode it as an event.Cut.
func encodeCheckpoint(c Checkpoint) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return event.SealCheckpoint(body)
}

func decodeCheckpoint(b []byte) (Checkpoint, error) {
	body, err := event.OpenCheckpoint(b)
	if err != nil {
		return Checkpoint{}, err
	}
	var c Checkpoint
	if err := json.Unmarshal(body, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	return c, nil
}

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
	// Read committed records up to the end with raw fetches, so the read
	// position is known even across records that are never returned: an
	// aborted transaction at the end of the log has its records filtered
	// out, and the embedded broker (kfake) aborts a transaction left open
	// by a crash without writing an abort marker, so waiting to *see* the
	// last offset would hang the restart forever (TestEmbeddedBrokerKill9).
	last, err := readLastValue(ctx, adm, brokers, topic, txnID, end.Offset)
	if err != nil {
		return Checkpoint{}, false, err
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

// readLastValue returns the value of the last committed record keyed key
// in partition 0 of topic below end.
func readLastValue(ctx context.Context, adm *kadm.Client, brokers []string, topic, key string, end int64) ([]byte, error) {
	var start int64
	if starts, err := adm.ListStartOffsets(ctx, topic); err == nil {
		if so, ok := starts.Lookup(topic, 0); ok && so.Err == nil {
			start = so.Offset
		}
	}
	var last []byte
	err := scanCommitted(ctx, adm, brokers, topic, 0, start, end, func(r *kgo.Record) {
		if string(r.Key) == key {
			last = r.Value
		}
	})
	return last, err
}

// scanCommitted hands each committed record of topic/part from offset
// from up to end (and maybe a few past it) to each, reading with read_committed fetches whose next
// offset comes from the fetched batches themselves.
func scanCommitted(ctx context.Context, adm *kadm.Client, brokers []string, topic string, part int32, from, end int64, each func(*kgo.Record)) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 {
		return fmt.Errorf("metadata of %s: %v", topic, td.Err)
	}
	if _, ok := td.Partitions[part]; !ok {
		return fmt.Errorf("metadata of %s: no partition %d", topic, part)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	offset := from
	for offset < end {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.IsolationLevel = 1 // read_committed
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = part, offset, 8<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// The partition's leader, looked up again on every round: it may
		// move while the read goes on.
		leader := td.Partitions[part].Leader
		if md, err := adm.Metadata(ctx, topic); err == nil {
			if p, ok := md.Topics[topic].Partitions[part]; ok {
				leader = p.Leader
			}
		}
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			return fmt.Errorf("reading %s: %w", topic, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("reading %s: %w", topic, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("reading %s: unexpected fetch response shape", topic)
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: part},
			&resp.Topics[0].Partitions[0], kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			switch {
			case errors.Is(fp.Err, kerr.NotLeaderForPartition), errors.Is(fp.Err, kerr.UnknownLeaderEpoch), errors.Is(fp.Err, kerr.LeaderNotAvailable):
				time.Sleep(100 * time.Millisecond)
				continue // the leader moved: look it up again
			case errors.Is(fp.Err, kerr.OffsetOutOfRange) && fp.LogStartOffset > offset:
				offset = fp.LogStartOffset // the log start moved on
				continue
			}
			return fmt.Errorf("reading %s/%d at offset %d: %w", topic, part, offset, fp.Err)
		}
		for _, r := range fp.Records {
			each(r)
		}
		// Nothing readable yet (an open transaction holds the last
		// stable offset back) leaves next where it was: fetch again,
		// the broker waits MaxWaitMillis for it.
		offset = max(offset, next)
	}
	return nil
}
