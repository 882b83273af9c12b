package testbed

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// front is a reverse proxy before the test bed's registry: it passes every
// request through, except lookups of a schema by id while failLookups is
// set, which it answers as an unreachable registry does (503), so a test
// can take the registry away from consumers without stopping producers,
// and registrations under a subject refuse names, which it answers as
// Confluent refuses an incompatible schema (409) — the verdict the
// in-memory registry cannot give.
type front struct {
	srv    *http.Server
	url    string
	down   atomic.Bool
	mu     sync.Mutex
	refuse map[string]string // subject → the registry's message
}

// newFront serves a proxy to backend (a URL with the API's path) on a free
// loopback port; url is the same path on the proxy.
func newFront(backend string) (*front, error) {
	to, err := url.Parse(backend)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{url: "http://" + ln.Addr().String() + to.Path, refuse: map[string]string{}}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: to.Scheme, Host: to.Host})
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if f.down.Load() && req.Method == http.MethodGet && strings.Contains(req.URL.EscapedPath(), "/schemas/ids/") {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 50003, "message": "registry unavailable (testbed.Registry.FailLookups)"})
			return
		}
		if msg, ok := f.refused(req); ok {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]any{"error_code": http.StatusConflict, "message": msg})
			return
		}
		proxy.ServeHTTP(w, req)
	})}
	go f.srv.Serve(ln)
	return f, nil
}

func (f *front) failLookups(fail bool) { f.down.Store(fail) }

// refused is the message a registration of req is refused with, if any.
func (f *front) refused(req *http.Request) (string, bool) {
	if req.Method != http.MethodPost {
		return "", false
	}
	rest, ok := strings.CutSuffix(req.URL.Path, "/versions")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "/subjects/")
	if i < 0 {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	msg, ok := f.refuse[rest[i+len("/subjects/"):]]
	return msg, ok
}

// setRefused refuses registrations under subject with msg; "" lifts it.
func (f *front) setRefused(subject, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if msg == "" {
		delete(f.refuse, subject)
		return
	}
	f.refuse[subject] = msg
}

func (f *front) close() { f.srv.Close() }
