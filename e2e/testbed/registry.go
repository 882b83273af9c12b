package testbed

// The test bed's schema registry is franz-go's in-memory one (pkg/sr/srfake),
// served on a loopback port, not a registry process: Apicurio Registry, the
// Confluent-compatible registry on Maven Central, cannot be assembled here
// because artifacts its application needs are not served (docs/testing.md,
// "Schema registry", says which). srfake speaks Confluent's REST API and
// wire of ids and versions, but accepts every change of a subject's schema
// whatever its compatibility level; Refuse gives a test the refusal a real
// registry sends.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// RegistryVersion names the registry StartRegistry runs, for logs.
const RegistryVersion = "franz-go srfake (in-memory, sr v1.8.0)"

// Registry is a running in-memory schema registry with Confluent's REST API.
type Registry struct {
	fake *srfake.Registry

	mu      sync.Mutex
	refused map[string]string // subject -> the refusal's message
	down    bool              // lookups by id answer 503
}

// StartRegistry starts an empty registry on a free loopback port; Close
// stops it. The registry lives in the test binary and keeps nothing on
// disk, so ctx and dir are unused: they are the signature of a registry
// run as a process (its log in dir), which tests would then not change.
func StartRegistry(ctx context.Context, dir string) (*Registry, error) {
	r := &Registry{refused: map[string]string{}}
	r.fake = srfake.New()
	r.fake.Intercept(r.refuse)
	return r, nil
}

// URL is the registry's base URL, for franz-go's sr.URLs or any Confluent
// client: http://127.0.0.1:PORT.
func (r *Registry) URL() string { return r.fake.URL() }

// Close stops the registry; its schemas go with it.
func (r *Registry) Close() error {
	r.fake.Close()
	return nil
}

// Refuse makes every later registration under subject (of a new schema or
// of one it holds) fail the way Confluent's registry (and Apicurio's ccompat API) refuses an
// incompatible change: HTTP 409 with error_code 409 (sr.ErrIncompatibleSchema)
// and message. An empty message lifts the refusal.
func (r *Registry) Refuse(subject, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if message == "" {
		delete(r.refused, subject)
		return
	}
	r.refused[subject] = message
}

// FailLookups makes every later lookup of a schema by id (GET
// /schemas/ids/...), what a consumer does, fail as a registry that is
// restarting or unreachable behind a proxy does: HTTP 503. Registrations
// still succeed, so a producer goes on. false lifts it.
func (r *Registry) FailLookups(fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = fail
}

// refuse is the srfake interceptor behind Refuse and FailLookups:
// interceptors see requests before srfake routes them, so it matches POST
// /subjects/{subject}/versions and GET /schemas/ids/ itself, answers those
// refused and lets every other request through.
func (r *Registry) refuse(w http.ResponseWriter, req *http.Request) bool {
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	if down && req.Method == http.MethodGet && strings.HasPrefix(req.URL.EscapedPath(), "/schemas/ids/") {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 50003, "message": "registry unavailable (testbed.Registry.FailLookups)"})
		return true
	}
	rest, ok := strings.CutPrefix(req.URL.EscapedPath(), "/subjects/")
	if req.Method != http.MethodPost || !ok {
		return false
	}
	escaped, ok := strings.CutSuffix(rest, "/versions")
	if !ok || strings.Contains(escaped, "/") {
		return false
	}
	subject, err := url.PathUnescape(escaped)
	if err != nil {
		return false
	}
	r.mu.Lock()
	message, refused := r.refused[subject]
	r.mu.Unlock()
	if !refused {
		return false
	}
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(http.StatusConflict)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": sr.ErrIncompatibleSchema.Code, "message": message})
	return true
}
