package projections

import (
	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
)

// TopicOf is the topic the projections read source table db.tbl from:
// readside's topic names (event.TopicFor), or Debezium's when they read
// Debezium's envelope — a connector's under input.topic_prefix, or
// readside's tailer's own under kafka.format: debezium.
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
)

// NewDecoder is a decoder of the envelope p's topics carry, for one run
// of records (a poll): not safe for concurrent use.
func (p *Projection) NewDecoder() Decoder {
	if p.debezium {
		return new(debezium.Decoder)
	}
	return new(event.Decoder)
}
