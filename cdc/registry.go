package cdc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// schemaRegistry registers kafka.format: debezium-avro's schemas under
// Confluent's TopicNameStrategy subjects (<topic>-key, <topic>-value) and
// keeps each id: a table's encoder is rebuilt on every change of its
// shape, and an unchanged schema costs no round trip.
type schemaRegistry struct {
	cl  *sr.Client
	url string

	mu  sync.Mutex
	ids map[[2]string]int // (subject, schema) -> id
}

// newSchemaRegistry does no I/O.
func newSchemaRegistry(url string) (*schemaRegistry, error) {
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: 30 * time.Second}), sr.UserAgent("readside"))
	if err != nil {
		return nil, fmt.Errorf("kafka.schema_registry.url %s: %w", url, err)
	}
	return &schemaRegistry{cl: cl, url: url, ids: map[[2]string]int{}}, nil
}

// id is the registry's id of schema under subject, registering it (a new
// version of the subject) when the registry does not hold it yet. A
// refusal (an incompatible or invalid schema) is a FatalError naming the
// registry's verdict, the subject and the fix; any other failure is
// transient, and the tailer retries from its checkpoint.
func (r *schemaRegistry) id(ctx context.Context, table, subject, schema string) (int, error) {
	r.mu.Lock()
	id, ok := r.ids[[2]string{subject, schema}]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := r.cl.RegisterSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return 0, registryError(table, subject, r.url, err)
	}
	r.mu.Lock()
	r.ids[[2]string{subject, schema}] = id
	r.mu.Unlock()
	return id, nil
}

func registryError(table, subject, url string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden) {
		return fatalf("the schema registry at %s refused access registering subject %s (HTTP %d): %s. "+
			"Fix: point kafka.schema_registry.url at a registry that lets readside register schemas without credentials", url, subject, re.StatusCode, re.Error())
	}
	if re == nil || (re.StatusCode != http.StatusConflict && re.StatusCode != http.StatusUnprocessableEntity) {
		return fmt.Errorf("registering the Avro schema of %s under subject %s at %s: %w", table, subject, url, err)
	}
	return fatalf("the schema registry at %s refused the Avro schema of %s under subject %s (HTTP %d, error code %d): %s. "+
		"No event of the change was published and the checkpoint stays before it, so nothing is lost. "+
		"Fix: make the table's change one the subject's compatibility accepts (add columns as NULL or with a default, do not drop or retype key columns), "+
		"or set the subject's compatibility (PUT /config/%s) to what its consumers can read, or publish to new subjects with another kafka.topic_prefix; then restart readside",
		url, table, subject, re.StatusCode, re.ErrorCode, re.Error(), subject)
}
