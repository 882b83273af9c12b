package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/debezium"
)

// registryPatience is how long a projector waits out a schema registry
// (or, for Debezium's JSON without the schema block, a source) that does
// not answer (a restart, a network blip) before it stops: until
// then its position stays before the records it cannot decode, and the
// lag shows the wait.
const registryPatience = time.Minute

// loadSchemas has the projection fetch what decoding recs needs (the
// writer schemas of Avro records) before they are mapped, so a registry
// that does not answer holds the projector where it is rather than making
// the records look like bad data: nothing is dead-lettered or skipped for
// it. A failure that may pass is retried for registryPatience; one that
// cannot (an id the registry does not hold) stops the projector at once.
func (pr *Projector) loadSchemas(ctx context.Context, recs []*kgo.Record) error {
	values := func(yield func([]byte) bool) {
		for _, r := range recs {
			if !yield(r.Value) {
				return
			}
		}
	}
	deadline := time.Now().Add(registryPatience)
	for tries := 1; ; tries++ {
		err := pr.p.LoadSchemas(ctx, values)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, debezium.ErrSchemaUnusable) {
			return fmt.Errorf("%w (nothing past the record was consumed)", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no answer for %s; the projector stops before the records it cannot decode, and resumes there on restart or SIGHUP. Fix: make the schema registry (or, for records without the schema block, the source of source.dsn) reachable", err, registryPatience)
		}
		wait := min(100*time.Millisecond<<min(tries-1, 6), 5*time.Second)
		pr.log.Warn("cannot fetch the records' schemas; retrying", "err", err, "retry_in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
