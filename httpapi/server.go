package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// reportMaxAge bounds how often probes and scrapes make the collector
// query the broker and the sinks.
const reportMaxAge = time.Second

// Server serves the operations endpoint.
type Server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
	// Pprof adds Go's profiler under /debug/pprof/ (http.pprof).
	Pprof bool
	// handler is what Route (or RouteHealth during start-up) installed:
	// swapped while serving.
	handler atomic.Pointer[http.ServeMux]
}

// NewServer returns a server that routes nothing until Route.
func NewServer(log *slog.Logger) *Server {
	log = log.With("component", "http")
	s := &Server{
		// ErrorLog: net/http's own lines (an accept error, a handler's
		// panic) would go to stderr as text, no line of a JSON log.
		srv: &http.Server{ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		log: log,
	}
	s.handler.Store(http.NewServeMux())
	s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.Load().ServeHTTP(w, r) })
	return s
}

// RouteHealth serves /healthz alone, and /readyz as not ready, while
// start-up waits for the source, the brokers and the sinks; Route
// replaces it once the pipeline is wired.
func (s *Server) RouteHealth(h *Health) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { serveHealth(w, r, h) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		_, reasons := h.Healthy()
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reasons": append([]string{"starting"}, reasons...)})
	})
	// /status and /wait exist, they just cannot answer yet: 503 with
	// Retry-After tells an application waiting for its writes (/wait) to
	// ask again, where a 404 would say it asked the wrong thing.
	starting := func(w http.ResponseWriter, _ *http.Request) {
		_, reasons := h.Healthy()
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "starting: the pipeline is not wired yet; ask again", "reasons": reasons})
	}
	mux.HandleFunc("GET /status", starting)
	mux.HandleFunc("GET /wait", starting)
	// "/{$}" is / alone: a bare "/" would answer every unknown path.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { serveStartingPage(w, h) })
	s.handler.Store(mux)
}

// serveHealth answers 503 when the process is unhealthy (a restart is the
// remedy) and 200 otherwise, degraded or not: a stopped projection is not
// fixed by a restart, which would only stop the healthy ones too. With
// ?strict=1 it answers 503 while degraded as well.
func serveHealth(w http.ResponseWriter, r *http.Request, h *Health) {
	ok, reasons := h.Healthy()
	degraded := h.Degradations()
	code := http.StatusOK
	if !ok || (len(degraded) > 0 && r.URL.Query().Get("strict") != "") {
		code = http.StatusServiceUnavailable
	}
	body := map[string]any{"healthy": ok, "degraded": len(degraded) > 0, "reasons": reasons, "components": h.Components()}
	if len(degraded) > 0 {
		body["stopped_projections"] = degraded
	}
	writeJSON(w, code, body)
}

// Route serves /metrics (gatherer), /healthz, /readyz, /status, /wait
// and the status page at /.
func (s *Server) Route(gatherer prometheus.Gatherer, c *Collector, h *Health) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { serveHealth(w, r, h) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rep := c.Cached(r.Context(), reportMaxAge)
		code := http.StatusOK
		if !rep.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"ready": rep.Ready, "reasons": rep.NotReady})
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.Cached(r.Context(), reportMaxAge))
	})
	mux.HandleFunc("GET /wait", c.serveWait)
	mux.HandleFunc("GET /{$}", c.servePage)
	if s.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	}
	s.handler.Store(mux)
}

// Listen binds addr, so a taken port fails start-up rather than later.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	return nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close releases a listener that never served.
func (s *Server) Close() error { return s.ln.Close() }

// Shutdown stops serving, letting requests in flight finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
