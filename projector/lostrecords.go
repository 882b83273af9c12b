package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Readers of the table topics never skip records: a partition that no
// longer holds the offset a reader needs next (retention or a deletion
// removed the records up to a later log start while a projection stayed
// behind) is an error, not a silent jump to the partition's start.
// franz-go's default (ConsumeResetOffset at the start) would jump: the
// read table then misses every change in between, with a lag of zero.
// noReset makes such a fetch fail, and outOfRange decides.
var noReset = kgo.ConsumeResetOffset(kgo.NoResetOffset())

// outOfRange decides what a fetch error means for a reader whose sink
// holds next as the partition's next offset (-1: none). Not an
// out-of-range fetch: ok false. next below the partition's log start (or
// none stored while the log start moved past 0 under a reader reading from
// the start): lost is the error to stop with (records the reader never
// applied are gone). Otherwise the reader's position is past the partition's end
// (the topic was created again and starts over, the broker lost its
// last records): the reader goes on at resetTo, next when the partition
// holds it, else the partition's start, as before this check (the
// version guard absorbs what is applied again).
func outOfRange(ctx context.Context, cl *kgo.Client, fe kgo.FetchError, next int64) (resetTo int64, lost error, ok bool) {
	if !errors.Is(fe.Err, kerr.OffsetOutOfRange) {
		return 0, nil, false
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, fe.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("%s partition %d: the offset read is out of range, and the partition's offsets could not be listed: %w", fe.Topic, fe.Partition, err), true
	}
	ends, err := adm.ListEndOffsets(ctx, fe.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("%s partition %d: the offset read is out of range, and the partition's offsets could not be listed: %w", fe.Topic, fe.Partition, err), true
	}
	s, _ := starts.Lookup(fe.Topic, fe.Partition)
	e, _ := ends.Lookup(fe.Topic, fe.Partition)
	switch {
	case next < s.Offset && (next >= 0 || s.Offset > 0):
		// With no offset stored the reader read from the start, which
		// has moved on past it since.
		need := "the records from its start"
		if next >= 0 {
			need = fmt.Sprintf("offset %d", next)
		}
		return 0, fmt.Errorf("%s partition %d no longer has %s, the next it needs (it now holds offsets %d to %d): "+
			"records it never applied are gone from Kafka (the topic's retention or a deletion removed them), "+
			"and going on from the partition's start would miss their changes for good", fe.Topic, fe.Partition, need, s.Offset, e.Offset), true
	case next >= s.Offset && next <= e.Offset:
		return next, nil, true
	}
	return s.Offset, nil, true
}

// warnTrimmedHistory warns when partitions a reader reads from their start
// (fresh: a new projection, a sink emptied for a rebuild) no longer start
// at offset 0: retention (Kafka's default keeps seven days) or a deletion
// removed the records before, so every row whose newest record was among
// them is missing from the read tables, and nothing else would say so. A
// snapshot of the table publishes every row again. tables maps each topic
// to its source table.
func warnTrimmedHistory(ctx context.Context, brokers []string, log *slog.Logger, tables map[string]string, fresh map[string][]int32) {
	if len(fresh) == 0 {
		return
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return
	}
	defer cl.Close()
	topics := make([]string, 0, len(fresh))
	for t := range fresh {
		topics = append(topics, t)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topics...)
	if err != nil {
		log.Warn("cannot tell whether the topics still hold their whole history (their start offsets could not be listed)", "err", err)
		return
	}
	var trimmed, fix []string
	for _, t := range topics {
		for _, part := range fresh[t] {
			if o, ok := starts.Lookup(t, part); ok && o.Err == nil && o.Offset > 0 {
				trimmed = append(trimmed, fmt.Sprintf("%s/%d starts at %d", t, part, o.Offset))
				if cmd := "readside snapshot --table " + tables[t]; !slices.Contains(fix, cmd) {
					fix = append(fix, cmd)
				}
			}
		}
	}
	if len(trimmed) == 0 {
		return
	}
	slices.Sort(trimmed)
	slices.Sort(fix)
	log.Warn("filling read tables from topics that no longer hold their whole history (retention or a deletion "+
		"removed their first records): rows whose newest record is gone will be missing until the tables are snapshotted again",
		"trimmed", strings.Join(trimmed, ", "), "fix", strings.Join(fix, "; "))
}
