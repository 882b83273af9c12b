package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/internal/testsync"
)

// TestServerErrorsInTheLog: what net/http itself logs (here a handler's
// panic, which it recovers) is a line of readside's log — JSON in a JSON
// log, at WARN with component=http — not text on stderr.
func TestServerErrorsInTheLog(t *testing.T) {
	var out testsync.Buffer
	s := NewServer(slog.New(slog.NewJSONHandler(&out, nil)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("a handler's bug") })
	s.handler.Store(mux)
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	defer s.Close()
	if resp, err := http.Get("http://" + s.Addr() + "/boom"); err == nil {
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "a handler's bug") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var line map[string]any
	first, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("net/http's line is not one JSON line of the log: %q (%v)", out.String(), err)
	}
	if line["level"] != "WARN" || line["component"] != "http" || !strings.Contains(line["msg"].(string), "a handler's bug") {
		t.Errorf("line %v, want level WARN, component http, the panic", line)
	}
}
