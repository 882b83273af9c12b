// Package httpapi is readside's operations endpoint: /metrics, /healthz,
// /readyz and /status on `readside run --http ADDR`, and the status report
// `readside status` prints (from a running daemon, or read from the stores
// when none answers).
//
// Health is about this process: a component that stopped on an error
// makes /healthz fail (restart me), except a projector, which stops alone
// and makes the process degraded (degraded.go). Readiness is about the pipeline: the
// tailer is streaming and within http.ready_max_lag of the source, and the
// projectors hold their partitions (do not send me traffic yet).
package httpapi

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Component states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
	StateFailed  = "failed"
	// StateWaiting: start-up waits for a server this component needs
	// (the process is up, not healthy yet).
	StateWaiting = "waiting"
)

// Health tracks the components of one process.
type Health struct {
	mu    sync.Mutex
	comps map[string]componentState
	// extra reports degradations other than halted components.
	extra func() []Degradation
}

type componentState struct {
	state  string
	err    error
	reason string // StateWaiting: what it waits for and why; StateHalted: the fix
	since  time.Time
}

// NewHealth returns an empty tracker.
func NewHealth() *Health { return &Health{comps: map[string]componentState{}} }

// Track wraps a component's run function for an errgroup: the component
// is running until run returns, then stopped (nil) or failed (an error).
func (h *Health) Track(name string, run func() error) func() error {
	h.set(name, componentState{state: StateRunning})
	return func() error {
		err := run()
		if err != nil {
			h.set(name, componentState{state: StateFailed, err: err})
		} else {
			h.set(name, componentState{state: StateStopped})
		}
		return err
	}
}

func (h *Health) set(name string, s componentState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.comps[name] = s
}

// Waiting marks name as waiting at start-up for the reason given
// ("waiting for source: ... connection refused"), or clears it when
// reason is empty.
func (h *Health) Waiting(name, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reason == "" {
		if h.comps[name].state == StateWaiting {
			delete(h.comps, name)
		}
		return
	}
	h.comps[name] = componentState{state: StateWaiting, reason: reason}
}

// State is the state of a component ("" when not tracked) and, when it
// failed, the error.
func (h *Health) State(name string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.comps[name]
	return s.state, s.err
}

// Healthy reports false, with the reasons, once a component has failed
// or while start-up waits for a server. A halted projector does not make
// the process unhealthy: see Degradations.
func (h *Health) Healthy() (bool, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var reasons []string
	for name, s := range h.comps {
		if s.state == StateFailed {
			reasons = append(reasons, fmt.Sprintf("%s failed: %v", name, s.err))
		}
		if s.state == StateWaiting {
			reasons = append(reasons, s.reason)
		}
	}
	sort.Strings(reasons)
	return len(reasons) == 0, reasons
}

// Components lists every tracked component with its state.
func (h *Health) Components() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.comps))
	for name, s := range h.comps {
		out[name] = s.state
	}
	return out
}
