package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/readside/readside/projections"
)

// outageResult is the catch-up after a sink outage under live load.
type outageResult struct {
	Fraction    float64 `json:"fraction_of_capacity"`
	OfferedPerS float64 `json:"offered_per_s"`
	OutageS     float64 `json:"outage_s"` // the sink proxy was cut this long
	// Pre is commit → visible of the rows committed in the window before
	// the outage; Post of those committed in the window after catch-up.
	Pre  percentiles `json:"pre_outage_latency"`
	Post percentiles `json:"post_catchup_latency"`
	// BacklogEvents: rows committed to the source before the sink came back
	// that became visible after (the work the outage left behind).
	BacklogEvents int `json:"backlog_events_at_restore"`
	// BacklogOffsets: Σ(topic end − applied offset) at restore (records and
	// transaction markers) — what the projector saw as its lag.
	BacklogOffsets int64 `json:"backlog_offsets_at_restore"`
	// CatchUpS: restore → the projector's lag (Σ end − applied offsets)
	// back to its largest value in the pre-outage window, measured live.
	CatchUpS float64 `json:"catch_up_s"`
	CaughtUp bool    `json:"caught_up"`
	// BacklogAppliedS: restore → the last backlog row visible (from
	// _bench_visible_at, exact).
	BacklogAppliedS float64 `json:"backlog_applied_s"`
	// LagAtEndOffsets: the lag when catch-up ended (≤ the baseline when
	// caught up; what was left when the limit ran out otherwise).
	LagAtEndOffsets int64 `json:"lag_at_end_offsets"`
	// CatchUpRowsPerS: read-table rows applied per second between restore
	// and the end of catch-up (backlog and new rows); NetPerS: how fast
	// the lag shrank, (backlog − lag at end) / CatchUpS, in offsets/s.
	CatchUpRowsPerS float64 `json:"catch_up_applied_rows_per_s"`
	NetPerS         float64 `json:"catch_up_net_offsets_per_s"`
	LagBaseline     int64   `json:"pre_outage_max_lag_offsets"`
	RSSBeforeMiB    float64 `json:"rss_mib_before_outage"`
	PeakRSSMiB      float64 `json:"peak_rss_mib_outage_and_catch_up"`
	CPUPer1000      float64 `json:"catch_up_cpu_s_per_1000_rows"`
	AchievedPerS    float64 `json:"achieved_per_s"`
	Load1           float64 `json:"load1"`
}

// outageDurations are the phase lengths: the window before the outage,
// the outage, the window after catch-up, and how long catch-up may take.
type outageDurations struct {
	pre, guard, outage, post, limit time.Duration
}

var outageFlag string

// outageFor is the outage step's timing: 2 minutes down (the issue's
// figure) with 20 s windows either side and up to 4 minutes to catch up,
// or 10 s down, 5 s and 4 s windows and 30 s for bench-quick; -outage
// overrides the length of the outage (0 skips the step).
func outageFor(quick bool) (outageDurations, error) {
	d := outageDurations{pre: 20 * time.Second, guard: 5 * time.Second, outage: 2 * time.Minute, post: 20 * time.Second, limit: 4 * time.Minute}
	if quick {
		d = outageDurations{pre: 5 * time.Second, guard: 2 * time.Second, outage: 10 * time.Second, post: 4 * time.Second, limit: 30 * time.Second}
	}
	if outageFlag != "" {
		v, err := time.ParseDuration(outageFlag)
		if err != nil || v < 0 {
			return d, fmt.Errorf("-outage %q: want a duration such as 2m or 20s (0 skips the outage step)", outageFlag)
		}
		d.outage = v
	}
	return d, nil
}

// loader offers rows open-loop in the background until stopped.
type loader struct {
	stopc chan struct{}
	done  chan struct{}
	sent  int
	secs  float64
	err   error
}

func startLoader(ctx context.Context, gen *generator, rate float64) *loader {
	l := &loader{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.Now()
		l.sent, l.err = offerOpenLoop(ctx, gen.writeTxn, rate, 0, l.stopc, nil)
		l.secs = time.Since(t).Seconds()
	}()
	return l
}

func (l *loader) stop() (int, float64, error) {
	close(l.stopc)
	<-l.done
	return l.sent, l.secs, l.err
}

// txnWriter writes one source transaction of about n row changes, each
// stamped commit_us = us, and returns the row changes it wrote (a
// workload's transaction shape may round n: an order comes with its
// lines).
type txnWriter func(ctx context.Context, n int, us int64) (int, error)

// offerOpenLoop writes row changes at rate rows/s on a 5 ms schedule that
// never waits for readside (a late tick sends everything due, so the
// offered rate holds), for dur or until stop is closed. Each transaction's
// rows carry the microsecond time just before its autocommit statement.
//
// With execUs, each row's statement round trip (its transaction, commit
// included) is appended there in µs: the part of commit → visible spent
// before the binlog has the row.
func offerOpenLoop(ctx context.Context, write txnWriter, rate float64, dur time.Duration, stop <-chan struct{}, execUs *[]int64) (int, error) {
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		var now time.Time
		select {
		case now = <-tick.C:
		case <-stop:
			return sent, nil
		}
		el := now.Sub(start)
		if dur > 0 && el >= dur {
			return sent, nil
		}
		due := int(rate*el.Seconds()) - sent
		if due <= 0 {
			continue
		}
		at := time.Now()
		n, err := write(ctx, min(due, 2000), at.UnixMicro())
		if err != nil {
			return sent, err
		}
		if execUs != nil {
			took := time.Since(at).Microseconds()
			for range n {
				*execUs = append(*execUs, took)
			}
		}
		sent += n
	}
}

// runOutage: with readside running (its sink behind px) and rows offered
// open-loop at rate, a window of normal operation, then the sink cut for
// d.outage, then restored, timing how long the projector takes to catch
// up while the load continues, then a window after catch-up.
func (e *env) runOutage(ctx context.Context, gen *generator, p *proc, px *sinkProxy, smp *sampler, proj *projections.Projection, fraction, rate float64, d outageDurations) (*outageResult, error) {
	res := &outageResult{Fraction: fraction, OfferedPerS: rate, Load1: loadavg()}
	lo := gen.maxID + 1
	lag := func() (int64, error) {
		_, end := e.endOffsets(ctx, proj.Topic)
		_, applied, err := e.appliedOffsets(ctx, proj)
		return end - applied, err
	}
	ld := startLoader(ctx, gen, rate)
	stopped := false
	defer func() {
		if !stopped {
			_, _, _ = ld.stop()
		}
	}()

	// Before: normal operation; the largest lag seen is the baseline.
	tPre, sPre := time.Now(), smp.now()
	for time.Since(tPre) < d.pre {
		l, err := lag()
		if err != nil {
			return nil, err
		}
		res.LagBaseline = max(res.LagBaseline, l)
		time.Sleep(250 * time.Millisecond)
	}
	smp.mark("before outage", sPre)

	// The outage. RSS is sampled every 100 ms from here to catch-up.
	res.RSSBeforeMiB = currentRSS(p.cmd.Process.Pid)
	var peakMu sync.Mutex
	peak := res.RSSBeforeMiB
	rssCtx, rssStop := context.WithCancel(ctx)
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		for rssCtx.Err() == nil {
			v := currentRSS(p.cmd.Process.Pid)
			peakMu.Lock()
			peak = max(peak, v)
			peakMu.Unlock()
			select {
			case <-rssCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { rssStop(); <-rssDone }()
	// readside's applied-rows counter does not move while the sink is
	// away, and scraping it then can take seconds: read it now.
	m, err := scrape(ctx, p.httpAddr, "readside_projection_applied_rows_total")
	if err != nil {
		return nil, err
	}
	applied0 := m[0]
	tCut, sCut := time.Now(), smp.now()
	px.cut()
	smp.setDown(true)
	logf("sink cut for %v at %.0f rows/s offered", d.outage, rate)
	time.Sleep(d.outage)
	if err := processGone(p); err != nil {
		return nil, err
	}
	if res.BacklogOffsets, err = lag(); err != nil {
		return nil, err
	}
	cpu0 := p.cpuSeconds()
	if err := px.restore(); err != nil {
		return nil, err
	}
	tRestore, sRestore := time.Now(), smp.now()
	smp.setDown(false)
	smp.mark("sink down", sCut)
	res.OutageS = tRestore.Sub(tCut).Seconds()
	logf("sink restored; backlog %d offsets", res.BacklogOffsets)

	// Catch-up: until the lag is back to the pre-outage baseline.
	for {
		l, err := lag()
		if err != nil {
			return nil, err
		}
		res.LagAtEndOffsets = l
		if l <= res.LagBaseline {
			res.CaughtUp = true
			break
		}
		if time.Since(tRestore) > d.limit {
			logf("not caught up %v after the sink came back (lag %d offsets)", d.limit, l)
			break
		}
		if err := processGone(p); err != nil {
			return nil, err
		}
		time.Sleep(250 * time.Millisecond)
	}
	tCaught := time.Now()
	res.CatchUpS = tCaught.Sub(tRestore).Seconds()
	if m, err = scrape(ctx, p.httpAddr, "readside_projection_applied_rows_total"); err != nil {
		return nil, err
	}
	rows := m[0] - applied0
	res.CatchUpRowsPerS = rows / res.CatchUpS
	res.CPUPer1000 = (p.cpuSeconds() - cpu0) / max(rows, 1) * 1000
	rssStop()
	<-rssDone
	peakMu.Lock()
	res.PeakRSSMiB = peak
	peakMu.Unlock()
	smp.mark("catch-up", sRestore)
	logf("caught up=%v in %.1f s", res.CaughtUp, res.CatchUpS)

	// After: the same load, is latency back to where it was?
	sPost := smp.now()
	time.Sleep(d.post)
	tPost := time.Now()
	smp.mark("after", sPost)
	sent, secs, err := ld.stop()
	stopped = true
	if err != nil {
		return nil, err
	}
	res.AchievedPerS = float64(sent) / secs
	hi := gen.maxID

	// Everything offered must become visible before the read table is read.
	if err := e.waitVisible(ctx, proj.Table, lo, hi, sent, 5*time.Minute); err != nil {
		return nil, err
	}
	us := func(t time.Time) int64 { return t.UnixMicro() }
	// The pre-outage window ends d.guard before the cut: rows committed
	// just before it were still on their way when the sink went away.
	if res.Pre, err = e.visibleLatency(ctx, proj.Table, lo, hi, us(tPre), us(tCut.Add(-d.guard))); err != nil {
		return nil, err
	}
	if res.Post, err = e.visibleLatency(ctx, proj.Table, lo, hi, us(tCaught), us(tPost)); err != nil {
		return nil, err
	}
	var last sql.NullInt64
	if err := e.sink.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*), MAX(%s) FROM `%s` WHERE id BETWEEN ? AND ? AND commit_us < ? AND %s >= ?", visibleUS, proj.Table, visibleUS),
		lo, hi, us(tRestore), us(tRestore)).Scan(&res.BacklogEvents, &last); err != nil {
		return nil, err
	}
	if last.Valid {
		res.BacklogAppliedS = float64(last.Int64-us(tRestore)) / 1e6
	}
	res.NetPerS = float64(res.BacklogOffsets-res.LagAtEndOffsets) / res.CatchUpS
	return res, nil
}

// visibleUS is when the projector's upsert wrote a row, in Unix µs.
const visibleUS = "CAST(UNIX_TIMESTAMP(_bench_visible_at)*1000000 AS SIGNED)"

// waitVisible waits until n rows with ids in [lo, hi] are in the read table.
func (e *env) waitVisible(ctx context.Context, table string, lo, hi int64, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var got int
		if err := e.sink.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM `%s` WHERE id BETWEEN ? AND ?", table), lo, hi).Scan(&got); err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d rows visible %v after the load stopped", got, n, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// visibleLatency is commit → visible of the rows in [lo, hi] committed in
// [fromUS, toUS).
func (e *env) visibleLatency(ctx context.Context, table string, lo, hi, fromUS, toUS int64) (percentiles, error) {
	rows, err := e.sink.DB().QueryContext(ctx, fmt.Sprintf("SELECT %s - commit_us FROM `%s` WHERE id BETWEEN ? AND ? AND commit_us >= ? AND commit_us < ?", visibleUS, table), lo, hi, fromUS, toUS)
	if err != nil {
		return percentiles{}, err
	}
	defer rows.Close()
	var lat []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return percentiles{}, err
		}
		lat = append(lat, v)
	}
	return percentilesOf(lat), rows.Err()
}

// processGone reports a readside process that exited (a zombie until
// waited for): the projector must retry through an outage, not stop.
func processGone(p *proc) error {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "stat"))
	s := string(b)
	if err == nil {
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] != 'Z' {
			return nil
		}
	}
	return fmt.Errorf("readside exited during the sink outage (it must retry until the sink is back); see the .all.log next to %s", p.cmd.Args[len(p.cmd.Args)-3])
}
