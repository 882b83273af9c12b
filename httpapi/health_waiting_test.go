package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthzWaiting: during start-up /healthz answers 503 saying what the
// process waits for and why, and 200 once it is up.
func TestHealthzWaiting(t *testing.T) {
	h := NewHealth()
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.RouteHealth(h)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	h.Waiting("source", "waiting for source: dial tcp 127.0.0.1:3306: connect: connection refused")
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for source: dial tcp") {
		t.Fatalf("while waiting: %d %s", code, body)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz during start-up: %d, want 503", code)
	}
	// An application's /wait during a restart must be told to retry, not
	// that the endpoint does not exist.
	for _, path := range []string{"/wait?projection=p&gtid=0-1-1", "/status"} {
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "starting") {
			t.Errorf("%s during start-up: %d (Retry-After %q) %s, want 503 saying it is starting", path, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
		}
	}
	h.Waiting("source", "")
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Fatalf("once the source is up: %d %s", code, body)
	}
}
