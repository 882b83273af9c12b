package projector

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/projections"
)

// Projection lag (readside_projection_lag_seconds) is how old the oldest
// source change may be that is not yet in the read table, computed at
// scrape time so it grows with wall time while anything is stuck:
//
//   - records read from the topics and not yet committed to the sink (a
//     sink away or stuck, a projector stopped by an error): now minus the
//     source commit time of the oldest event of the oldest such job;
//   - changes not yet in the topics (the stream, the source or the broker
//     away): the source lag of the tailer in this process, when there is
//     one (SetUpstreamLag). A projector-only process cannot see that part;
//     the tailer's own readside_source_lag_seconds shows it.
//
// Nothing waiting and the tailer caught up is 0: an idle, caught-up
// system reads 0 however long it stays idle.
type lagCollector struct {
	desc     *prometheus.Desc
	mu       sync.Mutex
	state    map[string]*lagState
	upstream func() float64
}

type lagState struct {
	// waiting holds, per job read and not yet committed (in the order
	// they commit), the oldest source commit time of its events (Unix s).
	waiting []int64
}

func newLagCollector() *lagCollector {
	return &lagCollector{desc: prometheus.NewDesc("readside_projection_lag_seconds",
		"How old the oldest source change not yet in the read table may be: now minus the source commit time of the oldest event read and not yet applied, or the in-process tailer's source lag if higher; 0 when nothing waits and the tailer is caught up.",
		[]string{"projection"}, nil), state: map[string]*lagState{}}
}

func (c *lagCollector) get(projection string) *lagState {
	st := c.state[projection]
	if st == nil {
		st = &lagState{}
		c.state[projection] = st
	}
	return st
}

// reset starts a projector's membership: jobs of an earlier one were
// committed or abandoned (their records are read again).
func (c *lagCollector) reset(projection string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.get(projection).waiting = nil
}

func (c *lagCollector) push(projection string, ts int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.get(projection)
	st.waiting = append(st.waiting, ts)
}

// popThrough takes out every waiting entry at or below ts.
func (c *lagCollector) popThrough(projection string, ts int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.get(projection)
	st.waiting = slices.DeleteFunc(st.waiting, func(w int64) bool { return w <= ts })
}

func (c *lagCollector) pop(projection string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.get(projection); len(st.waiting) > 0 {
		st.waiting = st.waiting[1:]
	}
}

// seconds is the projection's lag at now; known is false for a projection
// no projector of this process has started.
func (c *lagCollector) seconds(projection string, now time.Time) (lag float64, known bool) {
	c.mu.Lock()
	st, ok := c.state[projection]
	var oldest int64
	if ok && len(st.waiting) > 0 {
		oldest = st.waiting[0]
	}
	up := c.upstream
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	return projectionLag(now, oldest, up), true
}

// projectionLag is the lag at now from the oldest source commit time
// waiting to be applied (0: nothing waits) and the upstream lag (nil: no
// tailer here).
func projectionLag(now time.Time, oldestWaiting int64, upstream func() float64) float64 {
	lag := 0.0
	if oldestWaiting > 0 {
		lag = max(0, now.Sub(time.Unix(oldestWaiting, 0)).Seconds())
	}
	if upstream != nil {
		lag = max(lag, upstream())
	}
	return lag
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	names := make([]string, 0, len(c.state))
	for name := range c.state {
		names = append(names, name)
	}
	c.mu.Unlock()
	now := time.Now()
	for _, name := range names {
		lag, _ := c.seconds(name, now)
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, lag, name)
	}
}

// SetUpstreamLag makes every projection's lag at least the source lag f
// reports: the tailer of this process (cdc.Tailer.LagSeconds). Call it
// before the metrics are served.
func (m *Metrics) SetUpstreamLag(f func() float64) {
	if m == nil {
		return
	}
	m.lag.mu.Lock()
	defer m.lag.mu.Unlock()
	m.lag.upstream = f
}

// LagSeconds is readside_projection_lag_seconds of projection now; false
// when no projector of this process runs it.
func (m *Metrics) LagSeconds(projection string) (float64, bool) {
	if m == nil {
		return 0, false
	}
	return m.lag.seconds(projection, time.Now())
}

// started resets a projection's waiting jobs when a membership begins.
func (m *Metrics) started(p *projections.Projection) {
	if m != nil {
		m.lag.reset(p.Name)
	}
}

// waiting counts a prepared job in the lag until done; oldest is its
// oldest source commit time (0: none known, the job's start counts).
func (m *Metrics) waiting(p *projections.Projection, oldest int64, start time.Time) bool {
	if m == nil {
		return false
	}
	if oldest == 0 {
		oldest = start.Unix()
	}
	m.lag.push(p.Name, oldest)
	return true
}

// doneThrough takes out of the lag every wait a consistent commit ended:
// those of its cut (source time ts) and of the commits before it that
// were rolled back and redone by it (consistent.go).
func (m *Metrics) doneThrough(p *projections.Projection, ts int64) {
	if m != nil {
		m.lag.popThrough(p.Name, ts)
	}
}

// done takes a committed job out of the lag.
func (m *Metrics) done(p *projections.Projection) {
	if m != nil {
		m.lag.pop(p.Name)
	}
}
