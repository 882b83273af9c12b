package debezium

// One client of a Confluent-compatible schema registry (Confluent's API,
// or Apicurio's ccompat one) for both directions readside uses it in: the
// tailer registers kafka.format: debezium-avro's schemas under
// TopicNameStrategy subjects, and projections fetch the writer schemas of
// the Avro records they read by the id each record carries.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// SchemaRegistry is a Confluent-compatible schema registry: a
// SchemaSource for reading, and where the tailer registers its schemas.
// It is safe for concurrent use.
type SchemaRegistry struct {
	url string
	key string // the config key that names url, for errors

	once sync.Once
	cl   *sr.Client
	err  error

	mu  sync.Mutex
	ids map[[2]string]int // (subject, schema) -> id, of Register
}

var _ SchemaSource = (*SchemaRegistry)(nil)

// NewSchemaRegistry does no I/O and cannot fail: a URL the client
// refuses is Check's error (and every call's). key is the config key url
// comes from.
func NewSchemaRegistry(url, key string) *SchemaRegistry {
	return &SchemaRegistry{url: url, key: key, ids: map[[2]string]int{}}
}

// Check reports a URL the client refuses, without I/O.
func (r *SchemaRegistry) Check() error {
	_, err := r.client()
	return err
}

func (r *SchemaRegistry) client() (*sr.Client, error) {
	r.once.Do(func() {
		r.cl, r.err = sr.NewClient(sr.URLs(r.url), sr.HTTPClient(&http.Client{Timeout: 30 * time.Second}), sr.UserAgent("readside"))
		if r.err != nil {
			r.err = fmt.Errorf("%s %s: %w. Fix: give the registry's base URL", r.key, r.url, r.err)
		}
	})
	return r.cl, r.err
}

// URL is the registry's base URL.
func (r *SchemaRegistry) URL() string { return r.url }

// Schema is the text of the schema of id. The registry answering that it
// holds no such id, or holds it as another kind than Avro, wraps
// ErrSchemaUnusable; any other error may pass.
func (r *SchemaRegistry) Schema(ctx context.Context, id int) (string, error) {
	cl, err := r.client()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSchemaUnusable, err)
	}
	s, err := cl.SchemaByID(ctx, id)
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

// Register is the registry's id of the Avro schema under subject,
// registering it (a new version of the subject) when the registry does
// not hold it yet; an id once known costs no round trip again. The
// registry's refusal is a *RegistryVerdict; any other error may pass.
func (r *SchemaRegistry) Register(ctx context.Context, subject, schema string) (int, error) {
	r.mu.Lock()
	id, ok := r.ids[[2]string{subject, schema}]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	cl, err := r.client()
	if err != nil {
		return 0, &RegistryVerdict{URL: r.url, Subject: subject, Message: err.Error()}
	}
	id, err = cl.RegisterSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return 0, VerdictOf(r.url, subject, err)
	}
	r.mu.Lock()
	r.ids[[2]string{subject, schema}] = id
	r.mu.Unlock()
	return id, nil
}

// RegistryVerdict is the registry refusing to register a schema, which no
// retry changes: access refused (HTTP 401, 403), a schema the subject's
// compatibility refuses (409) or an invalid one (422); Status 0 is a URL
// the client refuses.
type RegistryVerdict struct {
	URL, Subject string
	Status, Code int // HTTP status and the registry's error code
	Message      string
}

// Access reports a refusal of access rather than of the schema.
func (v *RegistryVerdict) Access() bool {
	return v.Status == http.StatusUnauthorized || v.Status == http.StatusForbidden
}

func (v *RegistryVerdict) Error() string {
	return fmt.Sprintf("the schema registry at %s refused subject %s (HTTP %d, error code %d): %s", v.URL, v.Subject, v.Status, v.Code, v.Message)
}

// VerdictOf is err as a *RegistryVerdict when it is the registry's
// refusal, else err.
func VerdictOf(url, subject string, err error) error {
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	switch re.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity:
		return &RegistryVerdict{URL: url, Subject: subject, Status: re.StatusCode, Code: re.ErrorCode, Message: re.Error()}
	}
	return err
}
