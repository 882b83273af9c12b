package main

// readside's own INFO story of a run, between "starting" and "stopped":
// "caught up" once the tailer reads the source's present and once each
// projection's read table is within catchUpLag of the source (and the
// initial snapshot of every table it reads is complete: between two
// chunks of a snapshot nothing waits, so the lag alone said "caught up"
// while the larger tables were still loading; and what waits in its
// topics is no more than it applies in catchUpLag: the lag counts only
// the records a projector has read, and a snapshot's rows all carry the
// moment it read them, so a projection 300,000 rows behind read "3 s"
// and said "caught up" minutes before its read table was), then every
// log.progress_every a "committed" line with what was committed since the
// previous one. The numbers are read from the run's metrics registry, so
// the log and /metrics never disagree, and nothing is logged per
// transaction.

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// catchUpLag is the lag under which the tailer or a projection counts as
// caught up: a live pipeline is a few hundred milliseconds behind, but the
// source commit time has a 1 s resolution and a loaded box adds seconds
// to a batch, and the line must not wait for an idle moment.
const catchUpLag = 5 * time.Second

// catchUpRecords is the backlog (records of a projection's topics not yet
// read and applied) that never holds a caught-up line back, however
// slowly the projection applied in the last catchUpLag: a batch or two.
const catchUpRecords = 10_000

// projectionCaughtUp reports whether a projection counts as caught up: its
// lag (seconds) under catchUpLag, and its backlog (records not yet
// applied) what it applies within catchUpLag at the rate it applied over
// the last one (drained records), or at most catchUpRecords.
func projectionCaughtUp(lag, backlog, drained float64) bool {
	return lag < catchUpLag.Seconds() && backlog <= max(catchUpRecords, drained)
}

// appliedWindow keeps the projections' applied-rows counters of about the
// last catchUpLag, to tell how much each drains in that time.
type appliedWindow struct {
	samples []appliedSample
}

type appliedSample struct {
	at      time.Time
	applied map[string]float64
}

// add records the counters at at, keeping the newest sample older than
// catchUpLag as the window's start.
func (w *appliedWindow) add(at time.Time, applied map[string]float64) {
	w.samples = append(w.samples, appliedSample{at, applied})
	for len(w.samples) > 2 && at.Sub(w.samples[1].at) >= catchUpLag {
		w.samples = w.samples[1:]
	}
}

// drained is what projection name applied over the window, scaled to
// catchUpLag (0 until the window spans a second).
func (w *appliedWindow) drained(name string) float64 {
	if len(w.samples) < 2 {
		return 0
	}
	first, last := w.samples[0], w.samples[len(w.samples)-1]
	span := last.at.Sub(first.at)
	if span < time.Second {
		return 0
	}
	return (last.applied[name] - first.applied[name]) * catchUpLag.Seconds() / span.Seconds()
}

// progressLog writes the caught-up and committed lines of a run.
type progressLog struct {
	reg         prometheus.Gatherer
	tailer      *cdc.Tailer // nil in a --role projector process
	projections []string    // the projections this process runs
	every       time.Duration
	log         *slog.Logger
	poll        time.Duration // how often catching up is checked
	// reads are the source tables (db.table) each projection reads.
	reads map[string][]string
	// topicsWait reports a projection reading a topic the broker does
	// not have yet (a Debezium connector's, inputtopics.go): its
	// caught-up line waits. nil: never.
	topicsWait func(name string) bool
	// load is the initial load (known false: not known yet, so a
	// projection's caught-up line waits); nil: not asked.
	load func(ctx context.Context) (s *cdc.InitialSnapshot, known bool)
}

// progressTotals are the counters a committed line reports, summed.
type progressTotals struct {
	transactions, events float64
	applied              map[string]float64 // per projection
}

func (p *progressLog) run(ctx context.Context) error {
	tailerUp := p.tailer == nil
	projUp := map[string]bool{}
	var window appliedWindow
	prev := p.totals(nil)
	last := time.Now()
	tick := time.NewTicker(p.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		caughtUp := tailerUp && len(projUp) == len(p.projections)
		due := p.every > 0 && time.Since(last) >= p.every
		if caughtUp && !due {
			continue
		}
		families, err := p.reg.Gather()
		if err != nil {
			p.log.Debug("progress: reading the metrics", "err", err)
		}
		if !tailerUp {
			if s := p.tailer.Status(); s.Connected && !s.LastHeard.IsZero() && s.LagSeconds < catchUpLag.Seconds() {
				tailerUp = true
				attrs := []any{"component", "tailer", "lag_seconds", s.LagSeconds}
				if s.Checkpoint != nil {
					attrs = append(attrs, "position", s.Checkpoint.Position)
				}
				if loading := s.InitialSnapshot.Loading(); len(loading) > 0 {
					// True of the binlog, not of the tables: say so.
					attrs = append(attrs, "initial_snapshot", "running", "tables_loading", loading)
				}
				p.log.Info("caught up: reading the source's binlog as it is written", attrs...)
			}
		}
		lags := perProjection(families, "readside_projection_lag_seconds")
		backlog := perProjection(families, "readside_projection_consumer_lag")
		window.add(time.Now(), perProjection(families, "readside_projection_applied_rows_total"))
		var loading map[string]bool
		for _, name := range p.projections {
			if lag, ok := lags[name]; ok && !projUp[name] && projectionCaughtUp(lag, backlog[name], window.drained(name)) {
				if loading == nil {
					loading = p.loading(ctx)
				}
				if p.waitsForLoad(name, loading) || (p.topicsWait != nil && p.topicsWait(name)) {
					continue
				}
				projUp[name] = true
				p.log.Info("caught up: the read table is current with the topics", "projection", name, "lag_seconds", lag, "records_behind", int64(backlog[name]))
			}
		}
		if !due {
			continue
		}
		now := p.totals(families)
		if line := p.committed(prev, now, families, time.Since(last)); line != nil {
			p.log.Info("committed", line...)
		}
		prev, last = now, time.Now()
	}
}

// loading are the tables whose initial snapshot is pending or running; a
// nil key ("") stands for "not known yet".
func (p *progressLog) loading(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	if p.load == nil {
		return out
	}
	s, known := p.load(ctx)
	if !known {
		out[""] = true
		return out
	}
	for _, t := range s.Loading() {
		out[t] = true
	}
	return out
}

// waitsForLoad reports whether projection name's caught-up line waits:
// a table it reads is still in its initial snapshot, or that is not
// known yet.
func (p *progressLog) waitsForLoad(name string, loading map[string]bool) bool {
	if loading[""] {
		return true
	}
	for _, t := range p.reads[name] {
		if loading[t] {
			return true
		}
	}
	return false
}

// committed returns the attributes of a committed line, or nil when
// nothing was committed since prev.
func (p *progressLog) committed(prev, now progressTotals, families []*dto.MetricFamily, since time.Duration) []any {
	var attrs []any
	if p.tailer != nil {
		if d := now.transactions - prev.transactions; d > 0 {
			attrs = append(attrs, "source_transactions", int64(d), "events", int64(now.events-prev.events))
			if v, ok := single(families, "readside_source_lag_seconds"); ok {
				attrs = append(attrs, "source_lag_seconds", v)
			}
		}
	}
	// Under "projections": a projection named like one of the line's own
	// keys (events, since) must not take its place.
	lags := perProjection(families, "readside_projection_lag_seconds")
	var applied []any
	for _, name := range p.projections {
		if d := now.applied[name] - prev.applied[name]; d > 0 {
			applied = append(applied, slog.Group(name, "rows", int64(d), "lag_seconds", lags[name]))
		}
	}
	if len(applied) > 0 {
		attrs = append(attrs, slog.Group("projections", applied...))
	}
	if len(attrs) == 0 {
		return nil
	}
	return append([]any{"since", since.Round(time.Second)}, attrs...)
}

func (p *progressLog) totals(families []*dto.MetricFamily) progressTotals {
	t := progressTotals{applied: perProjection(families, "readside_projection_applied_rows_total")}
	t.transactions, _ = single(families, "readside_source_transactions_total")
	for _, f := range families {
		if f.GetName() == "readside_source_events_total" {
			for _, m := range f.GetMetric() {
				t.events += value(m)
			}
		}
	}
	return t
}

// perProjection returns a metric's value per projection label, summed
// over its other labels.
func perProjection(families []*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "projection" {
					out[l.GetValue()] += value(m)
				}
			}
		}
	}
	return out
}

// single returns the value of a metric without labels.
func single(families []*dto.MetricFamily, name string) (float64, bool) {
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return value(f.GetMetric()[0]), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// sortedNames returns the projection names of planned, sorted.
func sortedNames(planned []plannedProjection) []string {
	names := make([]string, 0, len(planned))
	for _, pp := range planned {
		names = append(names, pp.p.Name)
	}
	sort.Strings(names)
	return names
}

// readTables maps each planned projection to the captured tables it reads
// (its topics').
func readTables(cfg config.Config, planned []plannedProjection) map[string][]string {
	byTopic := map[string]string{}
	for _, name := range cfg.Source.Tables {
		db, tbl, _ := config.SplitTable(name)
		byTopic[projections.TopicOf(cfg, db, tbl)] = name
	}
	out := map[string][]string{}
	for _, pp := range planned {
		for _, topic := range pp.p.Topics() {
			if t, ok := byTopic[topic]; ok {
				out[pp.p.Name] = append(out[pp.p.Name], t)
			}
		}
	}
	return out
}

// storedLoad reads the initial load from the tailer's checkpoint in the
// broker, for a process that runs no tailer; at most every 5 s, and only
// until it is complete (it is asked only while a caught-up line waits).
// No checkpoint yet with source.snapshot.mode initial is not known (the
// tailer is about to queue the load); a checkpoint that cannot be read
// counts as known with no load: the line is then written as before rather
// than never.
func storedLoad(cfg config.Config) func(ctx context.Context) (*cdc.InitialSnapshot, bool) {
	var last *cdc.InitialSnapshot
	var at time.Time
	return func(ctx context.Context) (*cdc.InitialSnapshot, bool) {
		if !at.IsZero() && time.Since(at) < 5*time.Second {
			return last, true
		}
		at = time.Now()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cp, found, err := cdc.ReadCheckpoint(rctx, cfg.Kafka.Brokers, event.CheckpointTopic(cfg.Kafka.TopicPrefix), cfg.TransactionalID())
		last = nil
		if err == nil && !found && cfg.Source.Snapshot.Mode == config.SnapshotInitial {
			return nil, false
		}
		if err == nil && found {
			last = cdc.InitialSnapshotOf(cp, time.Now())
		}
		return last, true
	}
}
