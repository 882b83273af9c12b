package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHealthz: 200 while components run or stopped cleanly, 503 naming
// the component once one failed.
func TestHealthz(t *testing.T) {
	h := NewHealth()
	release := make(chan error)
	tailer := h.Track("tailer", func() error { return <-release })
	done := make(chan error)
	go func() { done <- tailer() }()
	proj := h.Track("projector p", func() error { return nil })
	if err := proj(); err != nil {
		t.Fatal(err)
	}
	col, err := NewCollector(Options{Brokers: []string{"127.0.0.1:1"}}, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.Route(prometheus.NewRegistry(), col, h)
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("running: %d %s", code, body)
	}
	release <- errors.New("binlog gone")
	<-done
	code, body := get()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "tailer failed: binlog gone") {
		t.Fatalf("after a failure: %d %s", code, body)
	}
}

func TestLag(t *testing.T) {
	cases := []struct {
		why               string
		applied, end, lag int64
	}{
		{"caught up: only the last commit marker is left", 41, 42, 0},
		{"nothing written", -1, 0, 0},
		{"nothing applied of a written partition", -1, 11, 10},
		{"behind by records", 30, 42, 11},
	}
	for _, c := range cases {
		if got := lag(c.applied, c.end); got != c.lag {
			t.Errorf("%s: lag(%d, %d) = %d, want %d", c.why, c.applied, c.end, got, c.lag)
		}
	}
}
