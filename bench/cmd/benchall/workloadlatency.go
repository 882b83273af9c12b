package main

// The latency step of a workload of its own (workload.Live): after the
// projector's drain, one `readside run` on the workload's config, its
// live capacity with the workload's own mix written, then commit →
// visible at fractions of it. The end-to-end step (e2e.go) measures
// narrow inserts, where every read row is one source row inserted once;
// here a read row may be touched by other rows' changes (a join's
// fan-out, a group's other members, an order's lines), so the read table
// says when it showed a change through a trigger and a stamp column.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/projections"
)

// stampRule is how a workload's read rows say which source change they
// show (benchio.StampTriggers): column holds a source change's commit_us
// (a copy of the source row's, or an aggregate max(commit_us)); onEqual
// restamps a row written again at the same value too (a source
// transaction whose effect on one read row arrives in pieces — an order
// and its lines, on different topics — shows all of it at the last).
type stampRule struct {
	column  string
	onEqual bool
}

// latencyPlan is the workloads' latency steps: the live-capacity window,
// the fractions of it offered and each step's length.
type latencyPlan struct {
	fractions  []float64
	live, step time.Duration
}

// workloadLatency is a workload's live capacity and latency steps.
type workloadLatency struct {
	Live  liveCapacity  `json:"live_capacity"`
	Steps []latencyStep `json:"latency"`
	// Stamp is the read column whose commit_us a sample subtracts.
	Stamp   string  `json:"stamp_column"`
	PeakRSS float64 `json:"peak_rss_mib"`
}

// runWorkloadLatency runs a workload's latency step: readside (tailer and
// projector in one process) resumes where the drains left off, the
// workload's own mix is written as fast as the lag allows (its live
// capacity), then open-loop at each fraction of it for stepDur.
func (e *env) runWorkloadLatency(ctx context.Context, w workload, src *source, plan latencyPlan) (*workloadLatency, error) {
	proj := src.proj
	res := &workloadLatency{Stamp: src.stamp.column}
	if err := e.sink.Exec(ctx, benchio.StampTriggers(proj.Table, src.stamp.column, src.stamp.onEqual)); err != nil {
		return nil, fmt.Errorf("adding the stamp trigger: %w", err)
	}
	if w.transactional() {
		// The applier made its frontier row in the drain.
		if err := e.sink.Exec(ctx, frontierLogDDL); err != nil {
			return nil, fmt.Errorf("adding the frontier trigger: %w", err)
		}
	}
	cl, err := checkpointClient(e.bed, src.cfg.Kafka.TopicPrefix)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	p, err := startReadside(e.bin, src.cfgPath, "all", src.cfgPath+".live.log", freeAddr())
	if err != nil {
		return nil, err
	}
	defer func() {
		if p != nil {
			p.end()
		}
	}()

	e.settle(ctx, w.Name+": live capacity")
	if res.Live, err = e.workloadCapacity(ctx, src.live, proj, plan.live); err != nil {
		return nil, fmt.Errorf("live capacity: %w", err)
	}
	logf("%s: live capacity %+v", w.Name, res.Live)
	if err := e.waitApplied(ctx, cl, proj, 5*time.Minute); err != nil {
		return nil, err
	}
	if e.capacities == nil {
		e.capacities = map[string]float64{}
	}
	e.capacities[w.Name] = res.Live.PerS
	// A variant is offered its base's load, so both modes are measured at
	// the same rows/s.
	capacity := res.Live.PerS
	if c, ok := e.capacities[w.Base]; ok && w.Base != "" {
		capacity = c
	}
	rates := make([]float64, len(plan.fractions))
	for i, f := range plan.fractions {
		rates[i] = f * capacity
	}
	if fixedRates != "" {
		var err error
		if rates, err = parseRates(fixedRates); err != nil {
			return nil, err
		}
	}
	for _, rate := range rates {
		time.Sleep(2 * time.Second)
		f := rate / res.Live.PerS
		e.settle(ctx, fmt.Sprintf("%s: latency at %.0f rows/s", w.Name, rate))
		st, err := e.workloadStep(ctx, cl, p, src, f, rate, plan.step)
		if err != nil {
			return nil, err
		}
		logf("%s: latency at %.0f%%: %+v", w.Name, f*100, st)
		if c := st.CommitPhases; c != nil {
			logf("%s: its mean consistent commit (%d, %.0f records): previous %.1f ms, apply %.1f ms (previous included), finish %.1f ms; cut %.1f ms old at its start",
				w.Name, st.Batches, st.BatchRows, c.PreviousMs, c.ApplyMs, c.FinishMs, c.CutAgeMs)
		}
		res.Steps = append(res.Steps, st)
	}
	res.PeakRSS = p.end()
	p = nil
	return res, nil
}

// workloadCapacity is liveCapacity with the workload's own writer: its
// transactions of 500 row changes back to back while fewer than
// liveMaxLag are published and not yet applied (Σ over the projection's
// topics of end − applied offsets, transaction markers included), the
// rate the rows applied per second over the window's last two thirds.
func (e *env) workloadCapacity(ctx context.Context, write txnWriter, proj *projections.Projection, dur time.Duration) (liveCapacity, error) {
	c := liveCapacity{Load1: loadavg(), MaxLagRows: liveMaxLag}
	_, applied0, err := e.appliedAll(ctx, proj)
	if err != nil {
		return c, err
	}
	start := time.Now()
	mid := start.Add(dur / 3)
	var midApplied int64 = -1
	sent, applied := 0, int64(0)
	lastPoll := time.Time{}
	for time.Since(start) < dur {
		if time.Since(lastPoll) >= 20*time.Millisecond {
			_, sum, err := e.appliedAll(ctx, proj)
			if err != nil {
				return c, fmt.Errorf("reading the applied offsets: %w", err)
			}
			applied, lastPoll = sum-applied0, time.Now()
		}
		if midApplied < 0 && time.Now().After(mid) {
			midApplied = applied
		}
		if int64(sent)-applied >= liveMaxLag {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		n, err := write(ctx, 500, time.Now().UnixMicro())
		if err != nil {
			return c, err
		}
		sent += n
	}
	end := time.Now()
	_, sum, err := e.appliedAll(ctx, proj)
	if err != nil {
		return c, err
	}
	// A transactional sink's commit can outlast the window (each takes
	// all that is published): the window then ends at the next commit.
	for deadline := end.Add(30 * time.Second); midApplied >= 0 && sum-applied0 == midApplied && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if _, sum, err = e.appliedAll(ctx, proj); err != nil {
			return c, err
		}
		end = time.Now()
	}
	c.Seconds = end.Sub(start).Seconds()
	c.SourcePerS = float64(sent) / c.Seconds
	c.PerS = float64(sum-applied0-midApplied) / end.Sub(mid).Seconds()
	if midApplied < 0 || c.PerS <= 0 {
		return c, fmt.Errorf("no rows applied in the last two thirds of %v (source %.0f rows/s): readside stalled?", dur, c.SourcePerS)
	}
	return c, nil
}

// waitApplied waits until the tailer has checkpointed past everything the
// source holds now and the projector has applied every record of its
// topics published by then.
func (e *env) waitApplied(ctx context.Context, cl *kgo.Client, proj *projections.Projection, limit time.Duration) error {
	pos, err := e.bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return err
	}
	want, err := endPosition(pos)
	if err != nil {
		return err
	}
	if _, err := waitCheckpoint(ctx, cl, e.bed, &want, limit); err != nil {
		return err
	}
	ends, _ := e.topicEnds(ctx, proj)
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		applied, _, err := e.appliedAll(ctx, proj)
		if err != nil {
			return err
		}
		if caughtUpAll(applied, ends) {
			done, err := e.fanOutsDone(ctx, proj)
			if err != nil || done {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not apply what the tailer published within %v", proj.Name, limit)
		}
	}
}

// workloadStep writes the workload's mix open-loop at offered rows/s for
// dur, waits until all of it is applied, and reads commit → visible of
// every read row stamped with a commit in the step.
func (e *env) workloadStep(ctx context.Context, cl *kgo.Client, p *proc, src *source, fraction, offered float64, dur time.Duration) (latencyStep, error) {
	st := latencyStep{Fraction: fraction, OfferedPerS: offered, Load1: loadavg()}
	transactional := src.cfg.Sinks[src.proj.Sink].Consistency.Transactional()
	histograms := stepHistograms
	if transactional {
		// The applier's commits stand in for the projector's batches.
		histograms = []string{stepHistograms[0], stepHistograms[1],
			"readside_sink_commit_seconds_sum", "readside_sink_commit_seconds_count", "readside_sink_commit_records_sum",
			`readside_sink_commit_phase_seconds_sum{phase="previous"`, `readside_sink_commit_phase_seconds_sum{phase="apply"`,
			`readside_sink_commit_phase_seconds_sum{phase="finish"`, "readside_sink_commit_cut_age_seconds_sum"}
	}
	h0, err := scrape(ctx, p.httpAddr, histograms...)
	if err != nil {
		return st, err
	}
	cpu0 := p.cpuSeconds()
	from := time.Now().UnixMicro()
	var execUs []int64
	stopSampling := e.sampleFanOutAge(ctx, src.proj, &st)
	sent, err := offerOpenLoop(ctx, src.live, offered, dur, nil, &execUs)
	stopSampling()
	if err != nil {
		return st, err
	}
	to := time.Now().UnixMicro()
	st.AchievedPerS = float64(sent) / (float64(to-from) / 1e6)
	st.SourceInsert = percentilesOf(execUs)
	st.Rows = sent
	if err := e.waitApplied(ctx, cl, src.proj, 2*time.Minute); err != nil {
		return st, err
	}
	st.CPUPer1000 = (p.cpuSeconds() - cpu0) / float64(max(sent, 1)) * 1000
	st.RSSMiB = currentRSS(p.cmd.Process.Pid)
	if h1, err := scrape(ctx, p.httpAddr, histograms...); err == nil {
		d := make([]float64, len(h1))
		for i := range h1 {
			d[i] = h1[i] - h0[i]
		}
		st.KafkaCommits, st.Batches = int(d[1]), int(d[3])
		st.KafkaCommitMs = d[0] / max(d[1], 1) * 1000
		st.BatchMs = d[2] / max(d[3], 1) * 1000
		st.BatchRows = d[4] / max(d[3], 1)
		if transactional {
			ms := func(sum float64) float64 { return sum / max(d[3], 1) * 1000 }
			st.CommitPhases = &commitPhases{PreviousMs: ms(d[5]), ApplyMs: ms(d[6]), FinishMs: ms(d[7]), CutAgeMs: ms(d[8])}
		}
	}
	rows, err := e.sink.DB().QueryContext(ctx, visibleQuery(src.proj.Table, transactional), from, to)
	if err != nil {
		return st, err
	}
	lat, err := scanLatencies(rows)
	if err != nil {
		return st, err
	}
	pc := percentilesOf(lat)
	st.Samples = len(lat)
	st.P50ms, st.P95ms, st.P99ms, st.Maxms = pc.P50ms, pc.P95ms, pc.P99ms, pc.Maxms
	return st, nil
}

// sampleFanOutAge reads, every 50 ms until the returned stop, the age of
// the oldest parent change a background fan-out has not copied yet, and
// stop puts its percentiles in st (FanOutPendingAge): how long after its
// batch a parent change waits to reach its other rows, the copy
// included. Nothing for an in_batch projection.
func (e *env) sampleFanOutAge(ctx context.Context, proj *projections.Projection, st *latencyStep) (stop func()) {
	if proj.FanOut != projections.FanOutBackground {
		return func() {}
	}
	done := make(chan struct{})
	var ages []int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, age, err := e.fanOutPending(ctx, proj); err == nil {
				ages = append(ages, age)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		pc := percentilesOf(ages)
		st.FanOutPendingAge = &pc
	}
}

// commitPhases are a consistent step's mean commit phases in ms: the wait
// for the commit before, apply (read, map, write chunks; from the commit's
// start, the wait included), finish (held writes, frontier, COMMIT), and
// how old the cut was when the commit started.
type commitPhases struct {
	PreviousMs float64 `json:"previous_ms"`
	ApplyMs    float64 `json:"apply_ms"`
	FinishMs   float64 `json:"finish_ms"`
	CutAgeMs   float64 `json:"cut_age_ms"`
}
