package projector

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/debezium"
	"github.com/readside/readside/projections"
)

// unmapped deals with the records a job could not map: under on_error:
// dlq they go to the dead-letter topic before the offsets that pass them
// are committed, so nothing is lost; under stop, the projector stops on
// the first. A record that lacks a mapped column stops it either way.
func (pr *Projector) unmapped(ctx context.Context, bad []projections.Rejected) error {
	if len(bad) == 0 {
		return nil
	}
	for _, r := range bad {
		// Not bad data but a DDL: every later row lacks the column too.
		if err := pr.p.DroppedColumn(r.Record.Topic, r.Reason); err != nil {
			return err
		}
		// Not bad data but a topic in another format than the config
		// says: every record of it would be dead-lettered.
		if wrongFormat(r.Reason) {
			return &projections.StopError{Projection: pr.p.Name, Reason: fmt.Errorf("record %s/%d@%d: %w", r.Record.Topic, r.Record.Partition, r.Record.Offset, r.Reason),
				Fix: "set input.format (and input.schema_registry.url or input.debezium.schemas.enable) as the error says, then send SIGHUP or restart readside"}
		}
	}
	if pr.dlq == nil {
		r := bad[0]
		return fmt.Errorf("projection %s: record %s/%d@%d: %w (set on_error: dlq to dead-letter such records and go on)", pr.p.Name, r.Record.Topic, r.Record.Partition, r.Record.Offset, r.Reason)
	}
	return pr.deadLetter(ctx, bad)
}

// deadLetter publishes rejected records to the dead-letter topic and waits
// for the broker to acknowledge them. The record keeps its key and value;
// headers say where it came from and why it was rejected.
func (pr *Projector) deadLetter(ctx context.Context, rs []projections.Rejected) error {
	topic := pr.p.DLQTopic
	var out []*kgo.Record
	for _, r := range rs {
		src := r.Record
		pr.log.Warn("dead-lettering a record", "topic", src.Topic, "partition", src.Partition, "offset", src.Offset, "reason", r.Reason, "dlq", topic)
		out = append(out, &kgo.Record{Topic: topic, Key: src.Key, Value: src.Value, Headers: []kgo.RecordHeader{
			{Key: "readside.error", Value: []byte(r.Reason.Error())},
			{Key: "readside.projection", Value: []byte(pr.p.Name)},
			{Key: "readside.topic", Value: []byte(src.Topic)},
			{Key: "readside.partition", Value: []byte(strconv.Itoa(int(src.Partition)))},
			{Key: "readside.offset", Value: []byte(strconv.FormatInt(src.Offset, 10))},
		}})
	}
	if err := pr.dlq.ProduceSync(ctx, out...).FirstErr(); err != nil {
		return fmt.Errorf("publishing to the dead-letter topic %s: %w", topic, err)
	}
	pr.o.Metrics.deadLettered(pr.p, len(out))
	return nil
}

// wrongFormat reports a record the decoder refused for its envelope's
// format (JSON against Avro, a bare payload where the schema block is
// expected), which the config decides for the whole topic.
func wrongFormat(err error) bool {
	return errors.Is(err, debezium.ErrAvroNotJSON) || errors.Is(err, debezium.ErrNotAvro) || errors.Is(err, debezium.ErrNoSchema)
}
