package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHealthzDegraded: what /healthz answers for each mix of component
// states, plain and with ?strict=1.
func TestHealthzDegraded(t *testing.T) {
	type step func(h *Health)
	halt := func(name string) step {
		return func(h *Health) {
			h.Halt(ProjectorPrefix+name, errors.New("column gone"), "edit the config", time.Now())
		}
	}
	running := func(name string) step { return func(h *Health) { h.Resume(ProjectorPrefix + name) } }
	failed := func(name string) step {
		return func(h *Health) { _ = h.Track(name, func() error { return errors.New("binlog gone") })() }
	}
	dlq := func(name string) step {
		return func(h *Health) {
			h.SetDegradations(func() []Degradation {
				return []Degradation{{Projection: name, State: "dead-lettering", Reason: "all rows", Fix: "fix it"}}
			})
		}
	}
	cases := []struct {
		why              string
		steps            []step
		code, strictCode int
		body             []string // in the plain answer
	}{
		{"all running: healthy", []step{running("a"), running("b")}, 200, 200, []string{`"degraded": false`}},
		{"a projection stopped alone: alive (a restart would not fix it), degraded", []step{running("a"), halt("b")}, 200, 503,
			[]string{`"degraded": true`, `"projection": "b"`, `"reason": "column gone"`, `"fix": "edit the config"`, `"healthy": true`}},
		{"resumed after SIGHUP: healthy again", []step{halt("b"), running("b")}, 200, 200, []string{`"degraded": false`}},
		{"dead-lettering every row: degraded", []step{running("a"), dlq("a")}, 200, 503, []string{`"state": "dead-lettering"`}},
		{"the tailer failed: unhealthy whatever else", []step{halt("b"), failed("tailer")}, 503, 503, []string{"tailer failed: binlog gone", `"degraded": true`}},
	}
	for _, c := range cases {
		h := NewHealth()
		for _, s := range c.steps {
			s(h)
		}
		col, err := NewCollector(Options{Brokers: []string{"127.0.0.1:1"}}, nil, h)
		if err != nil {
			t.Fatal(err)
		}
		s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
		s.Route(prometheus.NewRegistry(), col, h)
		get := func(path string) (int, string) {
			rec := httptest.NewRecorder()
			s.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code, rec.Body.String()
		}
		code, body := get("/healthz")
		if code != c.code {
			t.Errorf("%s: /healthz %d, want %d: %s", c.why, code, c.code, body)
		}
		for _, want := range c.body {
			if !strings.Contains(body, want) {
				t.Errorf("%s: /healthz body lacks %s: %s", c.why, want, body)
			}
		}
		if code, body := get("/healthz?strict=1"); code != c.strictCode {
			t.Errorf("%s: /healthz?strict=1 %d, want %d: %s", c.why, code, c.strictCode, body)
		}
		col.Close()
	}
}

// TestDegradationOf: a projection both stopped and dead-lettering shows
// as stopped (the stop is what the user must fix first).
func TestDegradationOf(t *testing.T) {
	ds := []Degradation{{Projection: "a", State: "dead-lettering"}, {Projection: "a", State: "stopped"}, {Projection: "b", State: "dead-lettering"}}
	for _, c := range []struct{ why, name, state string }{
		{"stop outranks dead-lettering", "a", "stopped"},
		{"dead-lettering alone", "b", "dead-lettering"},
		{"not degraded", "c", ""},
	} {
		if d, _ := degradationOf(ds, c.name); d.State != c.state {
			t.Errorf("%s: %s is %q, want %q", c.why, c.name, d.State, c.state)
		}
	}
}
