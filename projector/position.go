package projector

import (
	"sync"

	"github.com/readside/readside/event"
)

// positions are, per partition, how far a projector has applied its
// topics, commit markers included. The offsets it stores in the sink stop
// after the last data record: a Kafka transaction ends with a commit
// marker that occupies an offset and carries nothing to apply, so a
// partition whose last offset is a marker never has a stored offset at
// the end. Whoever waits for a projector to reach an end offset (a
// rebuild) compares the position instead.
type positions struct {
	mu sync.Mutex
	m  event.Offsets
}

// advance records where each partition of a committed job stands.
func (pr *Projector) advance(ls []partitionLag) {
	pr.pos.mu.Lock()
	defer pr.pos.mu.Unlock()
	if pr.pos.m == nil {
		pr.pos.m = event.Offsets{}
	}
	for _, l := range ls {
		pr.pos.m.Set(l.topic, l.part, l.next)
	}
}

// Applied is, per partition this projector has read from, the offset after
// the last record (data or commit marker) applied to the sink: the next
// offset it would fetch there. Partitions it has read nothing from since
// it started are absent (their stored offsets say where they stand).
func (pr *Projector) Applied() event.Offsets {
	pr.pos.mu.Lock()
	defer pr.pos.mu.Unlock()
	out := event.Offsets{}
	for topic, parts := range pr.pos.m {
		for part, next := range parts {
			out.Set(topic, part, next)
		}
	}
	return out
}
