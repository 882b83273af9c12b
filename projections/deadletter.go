package projections

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// unmapped deals with the records a job could not map: under on_error:
// dlq they go to the dead-letter topic before the offsets that pass them
// are committed, so nothing is lost; under stop, the projector stops on
// the first. A record that lacks a mapped column stops it either way.
func (pr *Projector) unmapped(ctx context.Context, bad []Rejected) error {
	if len(bad) == 0 {
		return nil
	}
	for _, r := range bad {
		// Not bad data but a DDL: every later row lacks the column too.
		if err := pr.p.droppedColumn(r.Record.Topic, r.Reason); err != nil {
			return err
		}
	}
	if pr.dlq == nil {
		r := bad[0]
		return fmt.Errorf("projection %s: record %s/%d@%d: %w (set on_error: dlq to dead-letter such records and go on)", pr.p.Name, r.Record.Topic, r.Record.Partition, r.Record.Offset, r.Reason)
	}
	return pr.deadLetter(ctx, bad)
}

// isolate finds the rows the sink rejects by applying the batch in halves
// (without offsets: a half applied twice is harmless), dead-letters each
// single rejected write, then commits the offsets alone.
func (pr *Projector) isolate(ctx context.Context, b *Batch) error {
	var bisect func(ws []Write, ps []ParentWrite) error
	bisect = func(ws []Write, ps []ParentWrite) error {
		err := pr.sink.Apply(ctx, pr.p, &Batch{Writes: ws, Parents: ps})
		if err == nil || !pr.o.Rejected(err) || ctx.Err() != nil {
			return err
		}
		switch {
		case len(ws)+len(ps) == 1:
			r := Rejected{Reason: err}
			if len(ws) == 1 {
				r.Record = ws[0].From
			} else {
				r.Record = ps[0].From
			}
			b.Rejected++
			return pr.deadLetter(ctx, []Rejected{r})
		case len(ps) > 0 && len(ws) > 0:
			if err := bisect(nil, ps); err != nil {
				return err
			}
			return bisect(ws, nil)
		case len(ps) > 1:
			if err := bisect(nil, ps[:len(ps)/2]); err != nil {
				return err
			}
			return bisect(nil, ps[len(ps)/2:])
		}
		if err := bisect(ws[:len(ws)/2], nil); err != nil {
			return err
		}
		return bisect(ws[len(ws)/2:], nil)
	}
	if err := bisect(b.Writes, b.Parents); err != nil {
		return err
	}
	return pr.sink.Apply(ctx, pr.p, &Batch{Offsets: b.Offsets, Marks: b.Marks})
}

// deadLetter publishes rejected records to the dead-letter topic and waits
// for the broker to acknowledge them. The record keeps its key and value;
// headers say where it came from and why it was rejected.
func (pr *Projector) deadLetter(ctx context.Context, rs []Rejected) error {
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
