package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
)

// TestSupervisorStopsOneAlone: a projector that returns an error stops
// alone — the process's context lives on, the others keep running, the
// stop is recorded with its fix in health and metrics — a restart of it
// clears that, and a clean stop drains every projector.
func TestSupervisorStopsOneAlone(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := projector.NewMetrics(reg)
	h := httpapi.NewHealth()
	sup := newSupervisor(h, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, stop := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return sup.wait(gctx) })

	fail := map[string]chan error{"typed": make(chan error), "plain": make(chan error)}
	drained := make(chan string, 3)
	for _, name := range []string{"typed", "plain", "healthy"} {
		sup.run(gctx, name, func(ctx context.Context) error {
			select {
			case err := <-fail[name]: // nil channel for healthy: never
				return err
			case <-ctx.Done():
				time.Sleep(20 * time.Millisecond) // a batch in flight commits
				drained <- name
				return nil
			}
		})
	}
	fail["typed"] <- &projections.StopError{Projection: "typed", Reason: errors.New("column extra was dropped"), Fix: "remove projections.typed.columns.extra"}
	fail["plain"] <- errors.New("connection reset")
	deadline := time.Now().Add(10 * time.Second)
	for len(sup.stoppedNames()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := sup.stoppedNames(); strings.Join(got, ",") != "plain,typed" {
		t.Fatalf("stopped %v, want plain and typed", got)
	}
	if gctx.Err() != nil {
		t.Fatal("a projector's error cancelled the process's context")
	}
	if ok, reasons := h.Healthy(); !ok {
		t.Errorf("unhealthy after projectors stopped alone: %v", reasons)
	}
	ds := h.Degradations()
	if len(ds) != 2 || ds[0].Projection != "plain" || ds[0].Fix != projections.GenericFix ||
		ds[1].Projection != "typed" || ds[1].Fix != "remove projections.typed.columns.extra" || !strings.Contains(ds[1].Reason, "column extra was dropped") {
		t.Errorf("degradations %+v: want plain with the generic fix, typed with its own", ds)
	}
	for name, want := range map[string]float64{"typed": 1, "plain": 1, "healthy": 0} {
		if got := stoppedGauge(t, reg, name); got != want {
			t.Errorf("readside_projection_stopped{projection=%q} = %v, want %v", name, got, want)
		}
	}

	// SIGHUP restarts a stopped one.
	sup.run(gctx, "plain", func(ctx context.Context) error { <-ctx.Done(); drained <- "plain"; return nil })
	if got := sup.stoppedNames(); strings.Join(got, ",") != "typed" {
		t.Errorf("after restarting plain, stopped %v, want typed", got)
	}
	if got := stoppedGauge(t, reg, "plain"); got != 0 {
		t.Errorf("readside_projection_stopped{projection=plain} after the restart = %v, want 0", got)
	}

	stop()
	if err := g.Wait(); err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	close(drained)
	var got []string
	for name := range drained {
		got = append(got, name)
	}
	if len(got) != 2 {
		t.Errorf("drained %v before the wait returned, want healthy and plain", got)
	}
}

// stoppedGauge is readside_projection_stopped{projection} in reg.
func stoppedGauge(t *testing.T, reg *prometheus.Registry, projection string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "readside_projection_stopped" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "projection" && l.GetValue() == projection {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("readside_projection_stopped{projection=%q} not exported", projection)
	return 0
}

// TestStopFix: the fix shown for each kind of error.
func TestStopFix(t *testing.T) {
	cases := []struct {
		why  string
		err  error
		want string
	}{
		{"a typed error carries its own fix", &projections.StopError{Projection: "p", Reason: errors.New("x"), Fix: "do y"}, "do y"},
		{"wrapped, it still does", errors.Join(errors.New("applying"), &projections.StopError{Projection: "p", Reason: errors.New("x"), Fix: "do y"}), "do y"},
		{"a typed error without a fix gets the generic one", &projections.StopError{Projection: "p", Reason: errors.New("x")}, projections.GenericFix},
		{"an untyped error gets the generic one", errors.New("connection reset"), projections.GenericFix},
		{"a row the sink rejects names on_error: dlq", fmt.Errorf("applying: %w", &driver.MySQLError{Number: 1406, Message: "Data too long"}), "set projections.p.on_error: dlq"},
	}
	for _, c := range cases {
		if got := stopFix("p", c.err); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.why, got, c.want)
		}
	}
}
