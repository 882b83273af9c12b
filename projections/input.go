package projections

import (
	"context"
	"fmt"
	"iter"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
)

// TopicOf is the topic the projections read source table db.tbl from:
// readside's topic names (event.TopicFor), or Debezium's when they read
// Debezium's envelope — a connector's under input.topic_prefix, or
// readside's tailer's own under kafka.format: debezium or debezium-avro.
func TopicOf(cfg config.Config, db, tbl string) string {
	if cfg.ReadsDebezium() {
		return debezium.Topic(cfg.TablePrefix(), db, tbl)
	}
	return event.TopicFor(cfg.Kafka.TopicPrefix, db, tbl)
}

// Decoder reads a record value into a change event. Decode is
// synchronous; Recycle hands back an event the caller is done with (and
// with anything holding its images), so the decoder may reuse them.
type Decoder interface {
	Decode(value []byte) (event.Event, error)
	Recycle(e event.Event)
}

var (
	_ Decoder = (*event.Decoder)(nil)
	_ Decoder = (*debezium.Decoder)(nil)
	_ Decoder = (*debezium.AvroDecoder)(nil)
)

// NewDecoder is a decoder of the envelope p's topics carry, for one run
// of records (a poll) whose schemas LoadSchemas loaded: not safe for
// concurrent use.
func (p *Projection) NewDecoder() Decoder {
	if p.avro != nil {
		return p.avro.Decoder()
	}
	if p.debezium {
		return new(debezium.Decoder)
	}
	return new(event.Decoder)
}

// LoadSchemas fetches what decoding values needs from outside the records
// (over Avro topics, the writer schemas from the registry; nothing
// otherwise). It blocks on the registry; an error wrapping
// debezium.ErrSchemaUnusable is one no retry changes. The caller decodes
// none of values until LoadSchemas succeeded: a record is never taken for
// bad data because the registry did not answer.
func (p *Projection) LoadSchemas(ctx context.Context, values iter.Seq[[]byte]) error {
	if p.avro == nil {
		return nil
	}
	if err := p.avro.Load(ctx, values); err != nil {
		return fmt.Errorf("projection %s: %w", p.Name, err)
	}
	return nil
}

// avroInput is the writer schemas' holder when cfg's projections read
// Avro, else nil.
func avroInput(cfg config.Config) *debezium.AvroSchemas {
	url, key, ok := cfg.ReadsAvro()
	if !ok {
		return nil
	}
	return debezium.NewAvroSchemas(debezium.NewRegistry(url, key))
}
