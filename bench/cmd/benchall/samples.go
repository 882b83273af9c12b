package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/readside/readside/projections"
)

// sample is one point of the end-to-end step's time series (every
// sampleEvery): cumulative counts, so rates are differences.
type sample struct {
	T         float64 `json:"t_s"`         // seconds since readside started
	Source    int64   `json:"source_rows"` // rows written to the source table (its MAX(id); the e2e workload only inserts)
	TopicEnd  int64   `json:"topic_end"`   // Σ end offsets of the topic (records and transaction markers)
	AppliedTo int64   `json:"applied_to"`  // Σ next offsets in _readside_offsets (the same units)
	RSSMiB    float64 `json:"rss_mib"`     // readside's resident set
	CPU       float64 `json:"cpu_s"`       // readside's user+system CPU seconds so far
	SinkDown  bool    `json:"sink_down"`   // the sink proxy was cut
}

// metricSample is readside's own event counters, scraped from /metrics in
// a loop of their own: while the sink is away a scrape can take seconds
// (the consumer-lag gauge asks the sink, bounded at 5 s), which must not
// stall the other samples.
type metricSample struct {
	T         float64 `json:"t_s"`
	Published float64 `json:"published"` // readside_source_events_total
	Applied   float64 `json:"applied"`   // readside_projection_applied_rows_total
}

// phase is a named interval of the time series (for the chart).
type phase struct {
	Name string  `json:"name"`
	T0   float64 `json:"t0_s"`
	T1   float64 `json:"t1_s"`
}

const sampleEvery = 500 * time.Millisecond

// sampler records samples until stopped.
type sampler struct {
	t0     time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	samples []sample
	metrics []metricSample
	phases  []phase
	down    bool
}

func (e *env) startSampler(p *proc, proj *projections.Projection, srcTable string) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{t0: time.Now(), cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		every(ctx, func() {
			var sm sample
			sm.T = s.now()
			_ = e.bed.MySQL.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COALESCE(MAX(id), 0) FROM `%s`.`%s`", e.srcDB, srcTable)).Scan(&sm.Source)
			_, sm.TopicEnd = e.endOffsets(ctx, proj.Topic)
			_, sm.AppliedTo, _ = e.appliedOffsets(ctx, proj)
			sm.RSSMiB = currentRSS(p.cmd.Process.Pid)
			sm.CPU = p.cpuSeconds()
			s.mu.Lock()
			sm.SinkDown = s.down
			s.samples = append(s.samples, sm)
			s.mu.Unlock()
		})
	}()
	go func() {
		defer wg.Done()
		every(ctx, func() {
			m, err := scrape(ctx, p.httpAddr, "readside_source_events_total", "readside_projection_applied_rows_total")
			if err != nil {
				return
			}
			s.mu.Lock()
			s.metrics = append(s.metrics, metricSample{T: s.now(), Published: m[0], Applied: m[1]})
			s.mu.Unlock()
		})
	}()
	go func() { wg.Wait(); close(s.done) }()
	return s
}

// every runs f now and then every sampleEvery until ctx is done.
func every(ctx context.Context, f func()) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scrape reads the sums of the named metrics from readside's /metrics,
// bounded in time (see metricSample).
func scrape(ctx context.Context, addr string, names ...string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make([]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for i, name := range names {
			// A name with its first labels (`m{phase="apply"`) picks
			// those series; a bare name sums every series of it.
			if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") ||
				strings.Contains(name, "{") && strings.HasPrefix(line, name) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				out[i] += v
			}
		}
	}
	return out, sc.Err()
}

// now is the sampler's clock (seconds since readside started).
func (s *sampler) now() float64 { return time.Since(s.t0).Seconds() }

// mark records a phase that began at t0 and ends now.
func (s *sampler) mark(name string, t0 float64) {
	s.mu.Lock()
	s.phases = append(s.phases, phase{Name: name, T0: t0, T1: s.now()})
	s.mu.Unlock()
}

func (s *sampler) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *sampler) stop() ([]sample, []metricSample, []phase) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.metrics, s.phases
}
