package debezium

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// TestVerdictOf: which registry answers are verdicts no retry changes.
func TestVerdictOf(t *testing.T) {
	cases := []struct {
		why     string
		err     error
		verdict bool
		access  bool
	}{
		{"409: the subject's compatibility refuses the schema", &sr.ResponseError{StatusCode: 409, ErrorCode: 409, Message: "incompatible"}, true, false},
		{"422: an invalid schema", &sr.ResponseError{StatusCode: 422, ErrorCode: 42201, Message: "Invalid schema"}, true, false},
		{"401: access refused, for the operator", &sr.ResponseError{StatusCode: 401}, true, true},
		{"403 likewise", &sr.ResponseError{StatusCode: 403}, true, true},
		{"503: a registry down for a moment passes", &sr.ResponseError{StatusCode: 503}, false, false},
		{"a refused connection passes", errors.New("connection refused"), false, false},
	}
	for _, c := range cases {
		err := VerdictOf("http://r:8081", "s-value", c.err)
		var v *RegistryVerdict
		if errors.As(err, &v) != c.verdict {
			t.Errorf("%s: %v: verdict %v, want %v", c.why, err, !c.verdict, c.verdict)
			continue
		}
		if c.verdict && (v.Access() != c.access || v.Subject != "s-value") {
			t.Errorf("%s: access %v subject %q, want access %v and the subject", c.why, v.Access(), v.Subject, c.access)
		}
		if !c.verdict && err != c.err {
			t.Errorf("%s: a passing error is returned as it is, got %v", c.why, err)
		}
	}
}

// TestRegisterCache: Register asks the registry once per (subject,
// schema); the registry (franz-go's in-memory one, behind a server that
// counts registrations) keeps the versions.
func TestRegisterCache(t *testing.T) {
	fake := srfake.New()
	defer fake.Close()
	backend, err := url.Parse(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	posts := map[string]int{} // subject -> registration requests
	proxy := httputil.NewSingleHostReverseProxy(backend)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if subject, ok := strings.CutSuffix(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions"); ok && req.Method == http.MethodPost {
			mu.Lock()
			posts[subject]++
			mu.Unlock()
		}
		proxy.ServeHTTP(w, req)
	}))
	defer srv.Close()

	schema := func(fields ...string) string {
		return `{"type":"record","name":"Value","namespace":"p.db.t","fields":[` + strings.Join(fields, ",") + `]}`
	}
	v1 := schema(`{"name":"id","type":"int"}`)
	v2 := schema(`{"name":"id","type":"int"}`, `{"name":"added","type":["null","string"],"default":null}`)
	r := NewSchemaRegistry(srv.URL, "kafka.schema_registry.url")
	ctx := t.Context()
	steps := []struct {
		why      string
		reg      *SchemaRegistry
		subject  string
		schema   string
		posts    int // registration requests for subject so far
		versions int // the subject's versions in the registry
		sameAs   int // index of an earlier step whose id this one must have, -1: none
	}{
		{"the first registration asks the registry", r, "p.db.t-value", v1, 1, 1, -1},
		{"an identical schema costs no request and keeps the id", r, "p.db.t-value", v1, 1, 1, 0},
		{"a changed schema (a DDL) registers a new version", r, "p.db.t-value", v2, 2, 2, -1},
		{"the changed one, again: cached too", r, "p.db.t-value", v2, 2, 2, 2},
		{"the first schema again (a table changed back): cached, no new version", r, "p.db.t-value", v1, 2, 2, 0},
		{"the same schema under another subject is that subject's own registration", r, "p.db.u-value", v1, 1, 1, -1},
		{"a new process holds no cache: it asks, and the registry answers the id it has without a new version",
			NewSchemaRegistry(srv.URL, "kafka.schema_registry.url"), "p.db.t-value", v2, 3, 2, 2},
	}
	ids := make([]int, len(steps))
	for i, s := range steps {
		id, err := s.reg.Register(ctx, s.subject, s.schema)
		if err != nil {
			t.Fatalf("%s: %v", s.why, err)
		}
		ids[i] = id
		mu.Lock()
		n := posts[s.subject]
		mu.Unlock()
		if n != s.posts {
			t.Errorf("%s: %d registration requests for %s, want %d", s.why, n, s.subject, s.posts)
		}
		vs, err := s.reg.cl.SubjectVersions(ctx, s.subject)
		if err != nil {
			t.Fatalf("%s: %v", s.why, err)
		}
		if len(vs) != s.versions {
			t.Errorf("%s: %s has versions %v, want %d", s.why, s.subject, vs, s.versions)
		}
		if s.sameAs >= 0 && id != ids[s.sameAs] {
			t.Errorf("%s: id %d, want %d (step %d's)", s.why, id, ids[s.sameAs], s.sameAs)
		}
	}
	if ids[2] == ids[0] {
		t.Errorf("the changed schema got the first one's id %d", ids[0])
	}
}
