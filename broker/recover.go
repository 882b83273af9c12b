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
// uncommitted) and returns those that are transactional data. One request
// per partition: a fetch returns a batch over its size limits only for the
// first partition of a response, and one batch can be as large as
// kafka.max_message_bytes.
func cutTails(ctx context.Context, cl *kgo.Client, ends kadm.ListedOffsets, md kadm.Metadata) ([]cutBatch, error) {
	if len(md.Brokers) == 0 {
		return nil, errors.New("the broker lists no node in its metadata")
	}
	// kfake is a single node: every partition's leader answers here.
	node := cl.Broker(int(md.Brokers[0].NodeID))
	var cut []cutBatch
	for _, topic := range sortedTopics(ends) {
		for _, o := range sortedPartitions(ends[topic]) {
			if o.Err != nil {
				return nil, fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
			}
			if o.Offset <= 0 {
				continue
			}
			last, ok, err := fetchLast(ctx, node, topic, md.Topics[topic].ID, o.Partition, o.Offset-1)
			if err != nil {
				return nil, fmt.Errorf("fetching the last batch of %s/%d: %w", topic, o.Partition, err)
			}
			const transactional, control = 0x10, 0x20
			if ok && last.Attributes&transactional != 0 && last.Attributes&control == 0 {
				cut = append(cut, cutBatch{topic: topic, partition: o.Partition, pid: last.ProducerID, epoch: last.ProducerEpoch})
			}
		}
	}
	return cut, nil
}

// fetchLast returns the batch holding offset of a partition, the last one
// when offset is the high watermark less one.
func fetchLast(ctx context.Context, node *kgo.Broker, topic string, id [16]byte, partition int32, offset int64) (kmsg.RecordBatch, bool, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = 1 << 30
	req.IsolationLevel = 0 // read uncommitted: the cut batch itself
	rt := kmsg.NewFetchRequestTopic()
	// Both name and id: the version negotiated decides which is sent.
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<30
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp, err := req.RequestWith(ctx, node)
	if err != nil {
		return kmsg.RecordBatch{}, false, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kmsg.RecordBatch{}, false, err
	}
	// One partition of one topic was asked for: the answer is the first.
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return kmsg.RecordBatch{}, false, nil
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return kmsg.RecordBatch{}, false, err
	}
	last, ok := lastBatch(p.RecordBatches)
	return last, ok, nil
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

func sortedPartitions(m map[int32]kadm.ListedOffset) []kadm.ListedOffset {
	ps := make([]kadm.ListedOffset, 0, len(m))
	for _, o := range m {
		ps = append(ps, o)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Partition < ps[j].Partition })
	return ps
}

// recoverTimeout bounds the recovery step; the broker is in this process,
// so it takes milliseconds unless something is wrong.
const recoverTimeout = 60 * time.Second
