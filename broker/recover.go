package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A transaction a crash cut off (kill -9 while records of it were on disk
// but before its last marker) is aborted by kfake when it reloads, in
// memory only: it writes no abort marker. Read-committed consumers (franz-go
// and the Java client alike) skip a producer's batches from an aborted
// transaction's first offset until they read that producer's abort marker;
// with none, they also skipped every later batch of the same producer
// delivered in the same fetch. The tailer keeps its producer id across
// restarts (its transactional id), so the events it republished after the
// crash were hidden from the projector for good. finishCutTransactions
// writes the abort marker Kafka's transaction coordinator would have
// written, before any client connects.

// cutBatch is the last batch of a partition whose log ends inside a
// transaction.
type cutBatch struct {
	topic     string
	partition int32
	pid       int64
	epoch     int16
}

// finishCutTransactions ends with an abort marker every partition whose log
// ends with a transactional data batch, and returns how many it ended.
//
// At start no transaction can be open: kfake forgets a transaction's state
// on a crash (it keeps no transaction log) and no client has connected yet.
// So a partition whose last batch is transactional data holds a transaction
// the crash cut, and nothing of the same producer can follow it, since every
// later write of a producer comes after its transaction ends (a marker). A
// transaction cut in a partition but not at its end would need a second
// transactional producer writing to the same partition after it; readside's
// only transactional producer is its tailer, one per embedded broker.
func finishCutTransactions(ctx context.Context, addr string, log *slog.Logger) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing end offsets: %w", err)
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading metadata: %w", err)
	}
	cut, err := cutTails(ctx, cl, ends, md)
	if err != nil {
		return 0, err
	}
	if len(cut) == 0 {
		return 0, nil
	}
	if err := writeAbortMarkers(ctx, cl, cut); err != nil {
		return 0, err
	}
	for _, c := range cut {
		log.Info("aborted a transaction cut by a crash of the embedded broker",
			"topic", c.topic, "partition", c.partition, "producer_id", c.pid)
	}
	return len(cut), nil
}

// cutTails fetches the last batch of every non-empty partition (read
// uncommitted) and returns those that are transactional data.
func cutTails(ctx context.Context, cl *kgo.Client, ends kadm.ListedOffsets, md kadm.Metadata) ([]cutBatch, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	// One batch per partition, whatever its size: kfake returns a
	// partition's first batch even when it exceeds the limits, and stops
	// the whole response only at MaxBytes.
	req.MaxBytes = 1 << 30
	req.IsolationLevel = 0 // read uncommitted: the cut batch itself
	var firstErr error
	for _, topic := range sortedTopics(ends) {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rt.TopicID = md.Topics[topic].ID
		for _, o := range ends[topic] {
			if o.Err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
				}
				continue
			}
			if o.Offset <= 0 {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = o.Partition
			rp.FetchOffset = o.Offset - 1
			rp.PartitionMaxBytes = 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if len(req.Topics) == 0 {
		return nil, nil
	}
	byID := map[[16]byte]string{}
	for name, td := range md.Topics {
		byID[td.ID] = name
	}
	if len(md.Brokers) == 0 {
		return nil, errors.New("the broker lists no node in its metadata")
	}
	// kfake is a single node: every partition's leader answers here.
	resp, err := req.RequestWith(ctx, cl.Broker(int(md.Brokers[0].NodeID)))
	if err != nil {
		return nil, fmt.Errorf("fetching the last batch of each partition: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetching the last batch of each partition: %w", err)
	}
	var cut []cutBatch
	for _, rt := range resp.Topics {
		topic := rt.Topic
		if topic == "" {
			topic = byID[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("fetching the last batch of %s/%d: %w", topic, rp.Partition, err)
			}
			last, ok := lastBatch(rp.RecordBatches)
			if !ok {
				continue
			}
			const transactional, control = 0x10, 0x20
			if last.Attributes&transactional != 0 && last.Attributes&control == 0 {
				cut = append(cut, cutBatch{topic: topic, partition: rp.Partition, pid: last.ProducerID, epoch: last.ProducerEpoch})
			}
		}
	}
	return cut, nil
}

// lastBatch decodes the headers of raw record batches and returns the last
// complete one.
func lastBatch(raw []byte) (kmsg.RecordBatch, bool) {
	var last kmsg.RecordBatch
	found := false
	for len(raw) >= 12 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			break // a partial batch at the end of the response
		}
		last, found = b, true
		raw = raw[12+int(b.Length):]
	}
	return last, found
}

// writeAbortMarkers writes an abort marker for each cut batch's producer
// and epoch in its partition.
func writeAbortMarkers(ctx context.Context, cl *kgo.Client, cut []cutBatch) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, c := range cut {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = c.pid, c.epoch, false
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = c.topic, []int32{c.partition}
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{t}
		req.Markers = append(req.Markers, m)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("writing abort markers: %w", err)
	}
	var errs []error
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("writing the abort marker of producer %d in %s/%d: %w", m.ProducerID, t.Topic, p.Partition, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func sortedTopics(ends kadm.ListedOffsets) []string {
	topics := make([]string, 0, len(ends))
	for t := range ends {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	return topics
}

// recoverTimeout bounds the recovery step; the broker is in this process,
// so it takes milliseconds unless something is wrong.
const recoverTimeout = 60 * time.Second
