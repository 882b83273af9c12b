package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// lagScrape is what one scrape of /metrics and /readyz said, kept to run
// the shipped alert rules on (lag_promtool_e2e_test.go).
type lagScrape struct {
	phase       string
	at          time.Time
	source      float64 // readside_source_lag_seconds
	projection  float64 // readside_projection_lag_seconds
	consumerLag float64 // readside_projection_consumer_lag, summed over partitions
	applied     float64 // readside_projection_applied_rows_total
	stale       float64 // readside_projection_stale_skipped_total
	ready       int     // /readyz status code
	readyBody   string
}

// lagRig is a readside daemon between a private source MariaDB and the
// test bed's MariaDB as its sink, on the test bed's broker, whose servers
// the test pauses and stops.
type lagRig struct {
	p       *opsPipeline
	src     *testbed.MySQL
	srcDB   *sql.DB
	scrapes []lagScrape
	next    int // the next row id
}

const (
	lagHeartbeat   = time.Second
	lagReadyMaxLag = 5 * time.Second
	lagProjection  = "messages_by_sender"
)

func newLagRig(t *testing.T) *lagRig {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("pauses and stops servers: needs the test bed's own MariaDB")
	}
	ctx := t.Context()
	src, err := testbed.StartMariaDBWith(ctx, filepath.Join(bed.Dir(), "lag-source"), testbed.MariaDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	r := &lagRig{src: src, srcDB: src.DB(), next: 1}
	p := newPipeline(t, "lag", pipelineOptions{src: src, brokers: bed.Kafka.Brokers(), partitions: 2,
		sourceExtra: fmt.Sprintf("  heartbeat_period: %s\n", lagHeartbeat), httpExtra: fmt.Sprintf("  ready_max_lag: %s\n", lagReadyMaxLag)})
	r.p = p
	return r
}

// insert writes n rows to the source, one transaction each.
func (r *lagRig) insert(n int) {
	r.p.t.Helper()
	for range n {
		_, err := r.srcDB.ExecContext(r.p.t.Context(), "INSERT INTO `"+r.p.src+"`.messages VALUES (?, ?, '2026-01-01 00:00:00', 'b')", r.next, r.next%5)
		if err != nil {
			r.p.t.Fatal(err)
		}
		r.next++
	}
}

// converge waits until the read table holds every source row.
func (r *lagRig) converge(timeout time.Duration) {
	t := r.p.t
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var want, got int
	if !testbed.Poll(ctx, 500*time.Millisecond, func() bool {
		_ = r.srcDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+r.p.src+"`.messages").Scan(&want)
		_ = r.p.bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+r.p.sink+"`.`"+lagProjection+"`").Scan(&got)
		return want > 0 && want == got
	}) {
		t.Fatalf("read table has %d rows, the source %d, after %s\nlog:\n%s", got, want, timeout, tail(r.p.logPath))
	}
}

// scrape reads /metrics and /readyz once and records what they said.
func (r *lagRig) scrape(phase string) lagScrape {
	t := r.p.t
	t.Helper()
	// While the sink is paused the report behind /readyz waits up to 5 s
	// for it; a scrape still answers.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := lagScrape{phase: phase, at: time.Now()}
	fams := r.p.scrape(ctx)
	s.source = gauge(t, fams, "readside_source_lag_seconds", nil)
	s.projection = gauge(t, fams, "readside_projection_lag_seconds", map[string]string{"projection": lagProjection})
	if fam := fams["readside_projection_consumer_lag"]; fam != nil {
		for _, m := range fam.GetMetric() {
			s.consumerLag += m.GetGauge().GetValue()
		}
	}
	if fams["readside_projection_applied_rows_total"] != nil {
		s.applied = gauge(t, fams, "readside_projection_applied_rows_total", map[string]string{"projection": lagProjection})
	}
	if fams["readside_projection_stale_skipped_total"] != nil {
		s.stale = gauge(t, fams, "readside_projection_stale_skipped_total", map[string]string{"projection": lagProjection})
	}
	code, body, err := r.p.get(ctx, "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	s.ready, s.readyBody = code, strings.TrimSpace(string(body))
	r.scrapes = append(r.scrapes, s)
	return s
}

// until scrapes every second until ok holds, failing after timeout with
// the last scrape.
func (r *lagRig) until(phase string, timeout time.Duration, what string, ok func(lagScrape) bool) lagScrape {
	t := r.p.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := r.scrape(phase)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s within %s; last scrape: %+v\nlog:\n%s", phase, what, timeout, s, tail(r.p.logPath))
		}
		time.Sleep(time.Second)
	}
}

// caughtUp: both lags 0, nothing waiting in any partition, ready.
func caughtUp(s lagScrape) bool {
	return s.source == 0 && s.projection == 0 && s.consumerLag == 0 && s.ready == http.StatusOK
}

// grows checks that a lag read from two scrapes gap apart grew by about
// the wall time between them, and is behind /readyz answering 503.
func (r *lagRig) grows(phase, name string, lag func(lagScrape) float64, gap time.Duration) {
	t := r.p.t
	t.Helper()
	s1 := r.scrape(phase)
	time.Sleep(gap)
	s2 := r.scrape(phase)
	// Both values are computed at scrape time: the second scrape began at
	// least gap after the first one was computed.
	if d := lag(s2) - lag(s1); d < gap.Seconds()-0.5 {
		t.Errorf("%s: %s went from %.2f to %.2f over at least %s; want it to grow with wall time", phase, name, lag(s1), lag(s2), gap)
	}
	if s2.ready != http.StatusServiceUnavailable || !strings.Contains(s2.readyBody, "http.ready_max_lag") {
		t.Errorf("%s: /readyz %d %q with %s %.1fs above http.ready_max_lag %s; want 503 naming it", phase, s2.ready, s2.readyBody, name, lag(s2), lagReadyMaxLag)
	}
}

// TestLagBothWays: source and projection lag are 0 on an idle, caught-up
// system however long it stays idle, and grow with wall time while the
// source is frozen (SIGSTOP), the broker is down, or the sink is frozen,
// with /readyz 503 past http.ready_max_lag and 200 again once caught up.
// The scrapes then drive the shipped alert rules through promtool.
func TestLagBothWays(t *testing.T) {
	bed := testbed.Get(t)
	r := newLagRig(t)
	d := r.p.start()
	r.p.waitReady(120 * time.Second)
	r.insert(50)
	r.converge(90 * time.Second)

	// (a) Idle: 20 s with no writes, every scrape caught up: neither a
	// projection lag growing from the first second nor a consumer lag of
	// 1 per partition (counting its last commit marker) passes.
	r.until("settle", 30*time.Second, "caught up", caughtUp)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		if s := r.scrape("idle"); !caughtUp(s) {
			t.Fatalf("idle and caught up, yet: %+v", s)
		}
	}

	// (b) The source frozen: the tailer hears nothing, so its lag (and the
	// projection's, which includes it) grows with wall time.
	if err := r.src.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = r.src.Resume()
		}
	})
	r.until("source-paused", 60*time.Second, "source lag above http.ready_max_lag", func(s lagScrape) bool { return s.source > lagReadyMaxLag.Seconds() })
	r.grows("source-paused", "source lag", func(s lagScrape) float64 { return s.source }, 3*time.Second)
	if s := r.scrape("source-paused"); s.projection < s.source-0.5 {
		t.Errorf("source paused: projection lag %.2f below the source lag %.2f it includes", s.projection, s.source)
	}
	time.Sleep(5 * time.Second)
	r.scrape("source-paused")
	if err := r.src.Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	r.until("source-resumed", 120*time.Second, "caught up", caughtUp)

	// (c) The broker down while the source is written: nothing can be
	// published, both lags grow.
	if err := bed.Kafka.Stop(0); err != nil {
		if errors.Is(err, testbed.ErrNotControllable) {
			t.Skip("external broker: the broker and sink outages need the test bed's own")
		}
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = bed.Kafka.Restart(context.WithoutCancel(t.Context()), 0)
		}
	})
	r.insert(10)
	r.until("broker-stopped", 60*time.Second, "source lag above http.ready_max_lag", func(s lagScrape) bool { return s.source > lagReadyMaxLag.Seconds() })
	r.grows("broker-stopped", "source lag", func(s lagScrape) float64 { return s.source }, 3*time.Second)
	r.grows("broker-stopped", "projection lag", func(s lagScrape) float64 { return s.projection }, 3*time.Second)
	if err := bed.Kafka.Restart(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	stopped = false
	r.until("broker-restarted", 180*time.Second, "caught up", caughtUp)
	r.converge(120 * time.Second)

	// (d) The sink frozen while the source is written: the projection lag
	// grows, the source lag stays low (the tailer publishes on).
	if err := bed.MySQL.Pause(); err != nil {
		t.Fatal(err)
	}
	sinkPaused := true
	t.Cleanup(func() {
		if sinkPaused {
			_ = bed.MySQL.Resume()
		}
	})
	r.insert(10)
	s := r.until("sink-paused", 60*time.Second, "projection lag above http.ready_max_lag", func(s lagScrape) bool { return s.projection > lagReadyMaxLag.Seconds() })
	r.grows("sink-paused", "projection lag", func(s lagScrape) float64 { return s.projection }, 3*time.Second)
	for _, s := range append(r.scrapes[len(r.scrapes)-2:], s) {
		if s.source >= lagReadyMaxLag.Seconds() {
			t.Errorf("sink paused, the tailer publishing: source lag %.2f, want it low", s.source)
		}
	}
	if err := bed.MySQL.Resume(); err != nil {
		t.Fatal(err)
	}
	sinkPaused = false
	r.until("sink-resumed", 120*time.Second, "caught up", caughtUp)
	r.converge(60 * time.Second)

	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
	r.promtool(t)
}
