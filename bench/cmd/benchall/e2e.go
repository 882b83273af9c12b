package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/readside/readside/projections"
)

type latencyStep struct {
	Fraction float64 `json:"fraction_of_capacity"`
	// HalfDrain marks the step at half the backlog drain rate: its rows
	// compare with runs whose steps were fractions of the drain rate, not
	// of the live capacity (liveCapacity).
	HalfDrain    bool    `json:"half_drain_rate,omitempty"`
	OfferedPerS  float64 `json:"offered_per_s"`
	AchievedPerS float64 `json:"achieved_per_s"`
	Rows         int     `json:"rows"`
	// Samples are the read rows stamped with a commit of the step (a
	// workload's own step, workloadlatency.go): one per read row changed,
	// its last change; Rows counts the source row changes offered.
	Samples int     `json:"samples,omitempty"`
	P50ms   float64 `json:"p50_ms"`
	P95ms   float64 `json:"p95_ms"`
	P99ms   float64 `json:"p99_ms"`
	Maxms   float64 `json:"max_ms"`
	// Ack is commit → broker ack (a read_committed consumer's receive
	// time); Produce is commit → the tailer's produce call (the record's
	// CreateTime). See ackprobe.go.
	Ack     percentiles `json:"commit_to_ack"`
	Produce percentiles `json:"commit_to_produce"`
	// SourceInsert is the generator's INSERT round trip (commit included)
	// of each row: the share of the latency before the binlog has it.
	SourceInsert percentiles `json:"source_insert"`
	// FanOutPendingAge is, under a background fan-out, the age of the
	// oldest parent change not yet copied into its rows, sampled every
	// 50 ms through the step (workloadlatency.go, sampleFanOutAge).
	FanOutPendingAge *percentiles `json:"fan_out_pending_age,omitempty"`
	CPUPer1000       float64      `json:"cpu_s_per_1000"`
	RSSMiB           float64      `json:"rss_mib_at_end"`
	Load1            float64      `json:"load1"`
	// Where the time went, from readside's own histograms over the step:
	// the tailer's Kafka commits (flush and EndTxn) and the projector's
	// batches (poll to sink commit, the wait for the previous one
	// included), their mean length, count and rows.
	KafkaCommits  int     `json:"kafka_commits"`
	KafkaCommitMs float64 `json:"kafka_commit_mean_ms"`
	Batches       int     `json:"projector_batches"`
	BatchMs       float64 `json:"projector_batch_mean_ms"`
	BatchRows     float64 `json:"projector_batch_mean_rows"`
	// CommitPhases splits a transaction-consistent step's mean commit
	// (readside_sink_commit_phase_seconds, cut age): where a change's
	// commit → visible time goes in that mode.
	CommitPhases *commitPhases `json:"consistent_commit_phases,omitempty"`
	// PoolReadsPerRow is MariaDB's Innodb_buffer_pool_reads over the step
	// (pages read from disk because the buffer pool lacked them) per row
	// offered: the source's and the sink's tables share the server.
	PoolReadsPerRow float64 `json:"buffer_pool_reads_per_row"`
}

// stepHistograms are the metric sums and counts latencyStep differences.
var stepHistograms = []string{
	"readside_produce_commit_seconds_sum", "readside_produce_commit_seconds_count",
	"readside_projection_batch_seconds_sum", "readside_projection_batch_seconds_count",
	"readside_projection_applied_rows_total",
}

type e2eResult struct {
	Workload workload `json:"workload"`
	// Rate is the backlog drained through tailer and projector in one
	// process, timed like the projector stage: from the first applied
	// batch (the events before it are not counted) to the last.
	Rate rate `json:"rate"`
	// FromFirstRecord times the same drain from the tailer's first record
	// in the topic, so it also holds the projector's start (group join,
	// first fetch, first batch): 0.8–1 s, a sixth to a third of a
	// 200,000-event drain on the benchmark box.
	FromFirstRecord rate `json:"rate_from_first_record"`
	// Live is the rate sustained with the source written at the same
	// time; the latency steps and the outage take their fractions of it
	// (liveCapacity).
	Live       *liveCapacity `json:"live_capacity,omitempty"`
	VsSlower   float64       `json:"vs_slower_stage,omitempty"`
	SlowerName string        `json:"slower_stage,omitempty"`
	Latency    []latencyStep `json:"latency"`
	PeakRSSMiB float64       `json:"peak_rss_mib"`
	// Outage is the catch-up after a sink outage at 50% load (outage.go).
	Outage *outageResult `json:"sink_outage,omitempty"`
	// Samples is the throughput time series of the whole step (every
	// 500 ms from readside's start), Phases its named intervals.
	Samples []sample       `json:"samples"`
	Metrics []metricSample `json:"metric_samples"`
	Phases  []phase        `json:"phases"`
}

// runEndToEnd drains a backlog through one `readside run` (tailer and
// projector in one process), then offers live inserts open-loop at fixed
// fractions of the rate it reached and measures commit → visible.
func (e *env) runEndToEnd(ctx context.Context, w workload, fractions []float64, stepDur time.Duration, od outageDurations) (*e2eResult, error) {
	res := &e2eResult{Workload: w}
	tbl := tableName(w)
	if err := e.bed.MySQL.Exec(ctx, w.tableDDL(e.srcDB, tbl)); err != nil {
		return nil, err
	}
	prefix := prefixFor(tbl)
	cfgPath, err := e.config("p_"+tbl, tbl, prefix, true)
	if err != nil {
		return nil, err
	}
	// The sink is reached through a proxy the outage step can cut.
	px, err := startProxy(e.bed.MySQL.Addr())
	if err != nil {
		return nil, err
	}
	defer px.close()
	if err := e.proxySink(cfgPath, px.addr); err != nil {
		return nil, err
	}
	_, ps, err := compile(cfgPath)
	if err != nil {
		return nil, err
	}
	proj := ps[0]
	if err := e.createReadTable(ctx, proj); err != nil {
		return nil, err
	}
	if err := e.primeTailer(ctx, cfgPath, prefix); err != nil {
		return nil, err
	}
	gen := newGenerator(w, e.bed.MySQL.DB(), e.srcDB, tbl)
	if err := gen.backlog(ctx); err != nil {
		return nil, err
	}
	end, err := e.bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return nil, err
	}
	endPos, err := endPosition(end)
	if err != nil {
		return nil, err
	}
	cl, err := checkpointClient(e.bed, prefix)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	e.settle(ctx, w.Name+": the end-to-end drain")
	res.Rate.Load1 = loadavg()
	p, err := startReadside(e.bin, cfgPath, "all", cfgPath+".all.log", freeAddr())
	if err != nil {
		return nil, err
	}
	defer func() {
		if p != nil {
			p.end()
		}
	}()
	smp := e.startSampler(p, proj, tbl)
	defer func() {
		if smp != nil {
			smp.stop()
		}
	}()
	// first: the first record in the topic; applied: the first batch in
	// the read table. at is the sum of offsets then, which share of the
	// backlog was already behind it.
	type mark struct {
		t   time.Time
		at  int64
		cpu float64
	}
	var first, applied mark
	var ends map[int32]int64
	var total int64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("readside did not drain %d events end to end in 10 minutes (see %s.all.log)", w.Events, cfgPath)
		}
		if first.t.IsZero() {
			if _, sum := e.endOffsets(ctx, proj.Topic); sum > 0 {
				first = mark{time.Now(), sum, p.cpuSeconds()}
			}
		}
		done, sum, err := e.appliedOffsets(ctx, proj)
		if err != nil {
			return nil, err
		}
		if applied.t.IsZero() && sum > 0 {
			applied = mark{time.Now(), sum, p.cpuSeconds()}
		}
		if ends == nil {
			if found := pollCheckpoint(ctx, cl, 50*time.Millisecond); found != nil && !first.t.IsZero() {
				if ok, err := found.Contains(endPos); err == nil && ok {
					ends, total = e.endOffsets(ctx, proj.Topic)
				}
			}
			continue
		}
		if caughtUp(done, ends) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t1, cpu1 := time.Now(), p.cpuSeconds()
	since := func(m mark) rate {
		events := float64(w.Events) * (1 - float64(m.at)/float64(max(total, 1)))
		r := rate{Seconds: t1.Sub(m.t).Seconds(), Load1: res.Rate.Load1}
		r.PerS = events / r.Seconds
		r.CPUPer1000 = (cpu1 - m.cpu) / events * 1000
		return r
	}
	res.Rate, res.FromFirstRecord = since(applied), since(first)
	logf("end to end: %.0f events/s from the first applied batch, %.0f from the first record", res.Rate.PerS, res.FromFirstRecord.PerS)
	smp.mark("backlog drain", 0)

	// Latency: open-loop inserts at fixed fractions of the live capacity,
	// and one more at half the drain rate, so that runs whose fractions
	// were of the drain rate stay comparable.
	time.Sleep(2 * time.Second)
	e.settle(ctx, w.Name+": live capacity")
	live, err := e.liveCapacity(ctx, gen, proj, liveDur(stepDur))
	if err != nil {
		return nil, fmt.Errorf("live capacity: %w", err)
	}
	res.Live = &live
	logf("live capacity: %+v", live)
	capacity := live.PerS
	offered := make([]float64, len(fractions))
	for i, f := range fractions {
		offered[i] = capacity * f
	}
	offered = append(offered, 0.5*res.Rate.PerS)
	if fixedRates != "" {
		if offered, err = parseRates(fixedRates); err != nil {
			return nil, err
		}
	}
	probe, err := e.startAckProbe(proj.Topic)
	if err != nil {
		return nil, err
	}
	defer probe.close()
	for i, rate := range offered {
		f := rate / capacity
		time.Sleep(2 * time.Second)
		e.settle(ctx, fmt.Sprintf("%s: latency at %.0f rows/s", w.Name, rate))
		s0 := smp.now()
		step, err := e.latencyStep(ctx, gen, p, probe, proj.Table, f, rate, stepDur)
		if err != nil {
			return nil, err
		}
		step.HalfDrain = fixedRates == "" && i == len(fractions)
		smp.mark(fmt.Sprintf("%.0f%%", f*100), s0)
		logf("latency at %.0f%%: %+v", f*100, step)
		res.Latency = append(res.Latency, step)
	}
	probe.close()
	if od.outage > 0 {
		time.Sleep(2 * time.Second)
		e.settle(ctx, w.Name+": sink outage")
		if res.Outage, err = e.runOutage(ctx, gen, p, px, smp, proj, 0.5, 0.5*capacity, od); err != nil {
			return nil, fmt.Errorf("sink outage: %w", err)
		}
		logf("sink outage: %+v", *res.Outage)
	}
	res.Samples, res.Metrics, res.Phases = smp.stop()
	smp = nil
	res.Rate.PeakRSSMiB = p.end()
	res.PeakRSSMiB = res.Rate.PeakRSSMiB
	p = nil
	return res, nil
}

// latencyStep inserts rows at offered rows/s for dur on a 5 ms schedule
// that does not wait for readside (a late tick sends what is due, so the
// offered rate holds), each row carrying the microsecond time just before
// its autocommit INSERT; then reads visible − commit from the read table.
func (e *env) latencyStep(ctx context.Context, gen *generator, p *proc, probe *ackProbe, readTable string, fraction, offered float64, dur time.Duration) (latencyStep, error) {
	st := latencyStep{Fraction: fraction, OfferedPerS: offered, Load1: loadavg()}
	lo := gen.maxID + 1
	cpu0 := p.cpuSeconds()
	// Readside's own histograms; a peer's process (make bench-peers) has
	// no readside /metrics, and its step reports without them.
	readside := p.httpAddr != ""
	var h0 []float64
	if readside {
		// A process started just before the step (make bench-peers)
		// may not listen yet.
		var err error
		for wait := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if h0, err = scrape(ctx, p.httpAddr, stepHistograms...); err == nil || time.Now().After(wait) {
				break
			}
		}
		if err != nil {
			return st, err
		}
	}
	reads0, err := e.poolReads(ctx)
	if err != nil {
		return st, err
	}
	start := time.Now()
	var execUs []int64
	sent, err := offerOpenLoop(ctx, gen.writeTxn, offered, dur, nil, &execUs)
	if err != nil {
		return st, err
	}
	st.AchievedPerS = float64(sent) / time.Since(start).Seconds()
	st.SourceInsert = percentilesOf(execUs)
	hi := gen.maxID
	st.Rows = sent
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		if err := e.sink.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM `%s` WHERE id BETWEEN ? AND ?", readTable), lo, hi).Scan(&n); err != nil {
			return st, err
		}
		if n >= sent {
			break
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("only %d of %d rows visible 2 minutes after the step", n, sent)
		}
		time.Sleep(100 * time.Millisecond)
	}
	st.CPUPer1000 = (p.cpuSeconds() - cpu0) / float64(sent) * 1000
	if reads1, err := e.poolReads(ctx); err == nil && sent > 0 {
		st.PoolReadsPerRow = float64(reads1-reads0) / float64(sent)
	}
	st.RSSMiB = currentRSS(p.cmd.Process.Pid)
	if readside {
		if h1, err := scrape(ctx, p.httpAddr, stepHistograms...); err == nil {
			d := make([]float64, len(h1))
			for i := range h1 {
				d[i] = h1[i] - h0[i]
			}
			st.KafkaCommits, st.Batches = int(d[1]), int(d[3])
			st.KafkaCommitMs = d[0] / max(d[1], 1) * 1000
			st.BatchMs = d[2] / max(d[3], 1) * 1000
			st.BatchRows = d[4] / max(d[3], 1)
		}
	}
	if probe != nil { // nil: no ack probe (make bench-peers)
		ack, produce, err := probe.take(lo, hi, sent, 30*time.Second)
		if err != nil {
			return st, err
		}
		st.Ack, st.Produce = percentilesOf(ack), percentilesOf(produce)
	}
	rows, err := e.sink.DB().QueryContext(ctx, fmt.Sprintf("SELECT CAST(UNIX_TIMESTAMP(_bench_visible_at)*1000000 AS SIGNED) - commit_us FROM `%s` WHERE id BETWEEN ? AND ?", readTable), lo, hi)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	var lat []int64
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return st, err
		}
		lat = append(lat, us)
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / 1000
	}
	st.P50ms, st.P95ms, st.P99ms, st.Maxms = pct(0.50), pct(0.95), pct(0.99), pct(1)
	return st, nil
}

func currentRSS(pid int) float64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// liveCapacity is the end-to-end rate sustained with the source written at
// the same time. The backlog drain (e2eResult.Rate) has the box to
// readside alone: on the benchmark box the source and the sink are one
// MariaDB, on the same two cores as the broker and readside, so live the
// source's inserts take a share of what drained the backlog. Half the
// drain rate was already near what the box sustained live (run 10: at 50%
// the projector's batches grew to 1,935 rows and 116 ms; at 75% the
// generator itself fell short and the lag grew without bound).
//
// So the generator writes as fast as the end-to-end lag allows: 500-row
// INSERTs back to back while fewer than liveMaxLag rows are committed but
// not yet applied (from the projection's committed offsets, polled every
// 20 ms), waiting otherwise. The rate it holds is the highest the whole
// box sustains with a bounded lag. It is the rows applied per second over
// the window's last two thirds (the first third fills the lag); the
// source's own rate over the whole window is kept next to it.
type liveCapacity struct {
	Seconds    float64 `json:"seconds"`
	SourcePerS float64 `json:"source_per_s"`
	PerS       float64 `json:"per_s"`
	MaxLagRows int     `json:"max_lag_rows"`
	Load1      float64 `json:"load1"`
}

// liveMaxLag is the lag the live-capacity generator keeps under: about
// half a second at the rates of the benchmark box, so the rate is
// measured in the saturated regime without the lag growing.
const liveMaxLag = 20_000

// liveDur is the live-capacity window: as long as a latency step.
func liveDur(step time.Duration) time.Duration { return step }

func (e *env) liveCapacity(ctx context.Context, gen *generator, proj *projections.Projection, dur time.Duration) (liveCapacity, error) {
	c := liveCapacity{Load1: loadavg(), MaxLagRows: liveMaxLag}
	lo := gen.maxID + 1
	_, applied0, err := e.appliedOffsets(ctx, proj)
	if err != nil {
		return c, err
	}
	// applied is the rows applied since the start, from the projection's
	// committed offsets (a Kafka commit marker takes an offset too: a few
	// dozen per second, noise against tens of thousands of rows).
	var applied atomic.Int64
	var pollErr atomic.Pointer[error]
	pctx, cancel := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pctx.Err() == nil {
			_, sum, err := e.appliedOffsets(pctx, proj)
			if err != nil {
				if pctx.Err() == nil {
					pollErr.Store(&err)
				}
				return
			}
			applied.Store(sum - applied0)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-polled }()
	const rows = 500
	start := time.Now()
	mid := start.Add(dur / 3)
	var midApplied int64 = -1
	sent := 0
	for time.Since(start) < dur {
		if err := pollErr.Load(); err != nil {
			return c, fmt.Errorf("reading the applied offsets: %w", *err)
		}
		if midApplied < 0 && time.Now().After(mid) {
			midApplied = applied.Load()
		}
		if int64(sent)-applied.Load() >= liveMaxLag {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		stmt, _ := gen.statement(rows, time.Now().UnixMicro())
		if _, err := gen.db.ExecContext(ctx, stmt); err != nil {
			return c, err
		}
		sent += rows
	}
	end := time.Now()
	c.Seconds = end.Sub(start).Seconds()
	c.SourcePerS = float64(sent) / c.Seconds
	c.PerS = float64(applied.Load()-midApplied) / end.Sub(mid).Seconds()
	if midApplied < 0 || c.PerS <= 0 {
		return c, fmt.Errorf("no rows applied in the last two thirds of %v (source %.0f rows/s): readside stalled?", dur, c.SourcePerS)
	}
	// What readside is behind drains before the latency steps.
	return c, e.waitVisible(ctx, proj.Table, lo, gen.maxID, sent, 5*time.Minute)
}

// poolReads is MariaDB's Innodb_buffer_pool_reads: pages InnoDB had to
// read from disk.
func (e *env) poolReads(ctx context.Context) (int64, error) {
	var name string
	var n int64
	err := e.sink.DB().QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'").Scan(&name, &n)
	return n, err
}

// parseRates reads -latency-rates: comma-separated rows/s.
func parseRates(list string) ([]float64, error) {
	var out []float64
	for _, r := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil {
			return nil, fmt.Errorf("-latency-rates: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}
