package projector

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Readers of the table topics never skip records: a partition whose next
// offset Kafka no longer has (retention or a deletion removed the records
// up to a later log start while a projection stayed behind; a topic
// deleted and created again) is an error, not a silent jump to the
// partition's start. franz-go's default (ConsumeResetOffset at the start)
// would jump: the read table then misses every change in between, with a
// lag of zero. noReset makes such a fetch fail instead.
var noReset = kgo.ConsumeResetOffset(kgo.NoResetOffset())

// lostRecords is the error of a fetch whose offset is out of range, with
// what the partition holds now; nil for any other fetch error. next is the
// offset the reader needs there (-1: unknown).
func lostRecords(ctx context.Context, cl *kgo.Client, fe kgo.FetchError, next int64) error {
	if !errors.Is(fe.Err, kerr.OffsetOutOfRange) {
		return nil
	}
	adm := kadm.NewClient(cl)
	span := "its offsets could not be listed"
	starts, serr := adm.ListStartOffsets(ctx, fe.Topic)
	ends, eerr := adm.ListEndOffsets(ctx, fe.Topic)
	if serr == nil && eerr == nil {
		s, sok := starts.Lookup(fe.Topic, fe.Partition)
		e, eok := ends.Lookup(fe.Topic, fe.Partition)
		if sok && eok && s.Err == nil && e.Err == nil {
			span = fmt.Sprintf("it now holds offsets %d to %d", s.Offset, e.Offset)
		}
	}
	need := "the offset it needs next"
	if next >= 0 {
		need = fmt.Sprintf("offset %d, the next it needs", next)
	}
	return fmt.Errorf("%s partition %d no longer has %s (%s): records it never applied are gone from Kafka "+
		"(the topic's retention or a deletion removed them, or the topic was created again), and going on from the "+
		"partition's start would miss their changes for good", fe.Topic, fe.Partition, need, span)
}
