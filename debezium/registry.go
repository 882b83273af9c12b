package debezium

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// Registry is a Confluent-compatible schema registry read as a
// SchemaSource (its GET /schemas/ids/{id}).
type Registry struct {
	url string
	key string // the config key that names url, for errors

	once sync.Once
	cl   *sr.Client
	err  error
}

var _ SchemaSource = (*Registry)(nil)

// NewRegistry does no I/O and cannot fail: a URL the client refuses is
// Schema's error. key is the config key url comes from.
func NewRegistry(url, key string) *Registry {
	return &Registry{url: url, key: key}
}

// Schema is the text of the schema of id. The registry answering that it
// holds no such id wraps ErrSchemaUnusable.
func (r *Registry) Schema(ctx context.Context, id int) (string, error) {
	r.once.Do(func() {
		r.cl, r.err = sr.NewClient(sr.URLs(r.url), sr.HTTPClient(&http.Client{Timeout: 30 * time.Second}), sr.UserAgent("readside"))
	})
	if r.err != nil {
		return "", fmt.Errorf("%w: %s %s: %w. Fix: give the registry's base URL", ErrSchemaUnusable, r.key, r.url, r.err)
	}
	s, err := r.cl.SchemaByID(ctx, id)
	if err == nil && s.Type != sr.TypeAvro {
		return "", fmt.Errorf("%w: schema id %d at %s is a %s schema, not Avro. Fix: read the topics with the converter that wrote them (input.format)", ErrSchemaUnusable, id, r.url, s.Type)
	}
	var re *sr.ResponseError
	switch {
	case err == nil:
		return s.Schema, nil
	case errors.As(err, &re) && (re.ErrorCode == sr.ErrSchemaNotFound.Code || re.StatusCode == http.StatusNotFound):
		return "", fmt.Errorf("%w: the schema registry at %s (%s) holds no schema id %d, which a record names (%s). "+
			"Fix: point %s at the registry the topics' producer registers in; the record stays unconsumed until then", ErrSchemaUnusable, r.url, r.key, id, re.Message, r.key)
	}
	return "", fmt.Errorf("fetching schema id %d from the schema registry at %s (%s): %w", id, r.url, r.key, err)
}
