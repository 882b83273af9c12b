package httpapi

// Degraded: a projection that cannot go on while the process and the
// other projections do. /healthz stays 200 (the process is alive and a
// restart would not fix the projection, it would stop the healthy ones
// for nothing) and names it; /healthz?strict=1 answers 503 for tools that
// want one bit for "everything works"; /status and `readside status` give
// the reason and the fix. /readyz leaves it out too: every replica meets
// the same broken event, so counting it would take them all out of
// service. The alerts (readside_projection_stopped,
// readside_projection_all_dead_lettered) are how a human hears of it.

import (
	"sort"
	"time"
)

// StateHalted: a projector stopped on an error it cannot get past; the
// rest of the process runs on.
const StateHalted = "stopped on error"

// Degradation is one projection that does not follow its source while the
// process runs.
type Degradation struct {
	Projection string `json:"projection"`
	// State: "stopped" (its projector stopped on an error) or
	// "dead-lettering" (every record it receives goes to the dead-letter
	// topic).
	State  string    `json:"state"`
	Reason string    `json:"reason"`
	Fix    string    `json:"fix"`
	Since  time.Time `json:"since,omitzero"`
}

// Halt marks a projector stopped on err with the fix; the process stays
// healthy, and degraded.
func (h *Health) Halt(name string, err error, fix string, since time.Time) {
	h.set(name, componentState{state: StateHalted, err: err, reason: fix, since: since})
}

// Finished marks a component stopped cleanly.
func (h *Health) Finished(name string) { h.set(name, componentState{state: StateStopped}) }

// Resume marks a halted projector running again.
func (h *Health) Resume(name string) { h.set(name, componentState{state: StateRunning}) }

// SetDegradations adds the degradations f reports (dead-lettering
// projections) to those of halted components.
func (h *Health) SetDegradations(f func() []Degradation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.extra = f
}

// ProjectorPrefix names a projection's component ("projector orders").
const ProjectorPrefix = "projector "

// Degradations lists what is degraded, sorted by projection.
func (h *Health) Degradations() []Degradation {
	h.mu.Lock()
	var out []Degradation
	for name, s := range h.comps {
		if s.state != StateHalted {
			continue
		}
		d := Degradation{Projection: name, State: "stopped", Fix: s.reason, Since: s.since}
		if len(name) > len(ProjectorPrefix) && name[:len(ProjectorPrefix)] == ProjectorPrefix {
			d.Projection = name[len(ProjectorPrefix):]
		}
		if s.err != nil {
			d.Reason = s.err.Error()
		}
		out = append(out, d)
	}
	extra := h.extra
	h.mu.Unlock()
	if extra != nil {
		out = append(out, extra()...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Projection != out[j].Projection {
			return out[i].Projection < out[j].Projection
		}
		return out[i].State < out[j].State
	})
	return out
}

// degradationOf is the projection's degradation in ds, if any; a stop
// outranks dead-lettering.
func degradationOf(ds []Degradation, projection string) (Degradation, bool) {
	var found Degradation
	ok := false
	for _, d := range ds {
		if d.Projection == projection && (!ok || d.State == "stopped") {
			found, ok = d, true
		}
	}
	return found, ok
}

// isolation adds to ps what this process knows of its projector: stopped
// alone (the reason and the fix) and its dead-lettering. It reports
// whether the projection is degraded.
func (c *Collector) isolation(ps *ProjectionStatus, p Projection, degraded []Degradation) bool {
	if !p.Here {
		return false
	}
	if c.opts.DeadLetters != nil {
		dl := c.opts.DeadLetters(p.Name)
		ps.DeadLetters = &dl
	}
	d, ok := degradationOf(degraded, p.Name)
	if ok {
		ps.State, ps.StopReason, ps.Fix = d.State, d.Reason, d.Fix
	}
	return ok
}
