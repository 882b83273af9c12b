package projector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/projections"
)

// ConsistentMetrics are the appliers' Prometheus metrics
// (docs/metrics.md, "Transaction-consistent sinks"). A nil
// *ConsistentMetrics records nothing.
type ConsistentMetrics struct {
	commits      *prometheus.CounterVec
	transactions *prometheus.HistogramVec
	rows         *prometheus.HistogramVec
	seconds      *prometheus.HistogramVec
	phases       *prometheus.HistogramVec
	cutAge       *prometheus.HistogramVec
	failures     *prometheus.CounterVec
	frontierTS   *prometheus.GaugeVec
	frontierCut  *prometheus.GaugeVec
}

// NewConsistentMetrics registers the appliers' metrics on reg.
func NewConsistentMetrics(reg prometheus.Registerer) *ConsistentMetrics {
	perCommit := prometheus.ExponentialBuckets(1, 4, 12)
	m := &ConsistentMetrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_sink_commits_total",
			Help: "Consistent commits of a transaction-consistent sink: each moves every shard's frontier to a newer cut of the source."}, []string{"sink"}),
		transactions: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readside_sink_commit_transactions",
			Help: "Source transactions one consistent commit applied (whole transactions only).", Buckets: perCommit}, []string{"sink"}),
		rows: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readside_sink_commit_records",
			Help: "Change records one consistent commit applied.", Buckets: perCommit}, []string{"sink"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readside_sink_commit_seconds",
			Help:    "Time from opening a consistent commit to its COMMIT on every shard (reading the records included).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"sink"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readside_sink_commit_phase_seconds",
			Help: "Where a consistent commit's time goes: previous (waiting for the commit before it to land before opening its transaction), " +
				"apply (from its start until every record is read, mapped and applied, the wait included), finish (the writes held for the commit's end: " +
				"group rows, contributions, arrays; the frontier and the COMMIT).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"sink", "phase"}),
		cutAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readside_sink_commit_cut_age_seconds",
			Help:    "How old the tailer's cut a consistent commit goes to was when the commit started (the tailer's clock against the applier's).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"sink"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_sink_commit_failures_total",
			Help: "Consistent commits rolled back (a sink or broker fault, a frontier another applier moved, or an error that stops the sink's applier)."}, []string{"sink"}),
		frontierTS: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_sink_frontier_source_timestamp_seconds",
			Help: "Source commit time (Unix seconds) of the last source transaction the sink's frontier covers; the frontier lag is time() minus this while the source is busy."}, []string{"sink"}),
		frontierCut: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_sink_frontier_cut_timestamp_seconds",
			Help: "When the tailer wrote the cut the sink's frontier is at (Unix seconds): the tailer had read the source up to the frontier then."}, []string{"sink"}),
	}
	if reg != nil {
		reg.MustRegister(m.commits, m.transactions, m.rows, m.seconds, m.phases, m.cutAge, m.failures, m.frontierTS, m.frontierCut)
	}
	return m
}

func (m *ConsistentMetrics) started(sink string) {
	if m == nil {
		return
	}
	m.commits.WithLabelValues(sink)
	m.failures.WithLabelValues(sink)
}

func (m *ConsistentMetrics) failed(sink string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(sink).Inc()
}

// commitPhases is where one consistent commit's time went
// (readside_sink_commit_phase_seconds), and how old its cut was when it
// started.
type commitPhases struct {
	previous, apply, finish time.Duration
	cutAge                  time.Duration // < 0: the cut has no time
}

// cutAge is how old a cut written at writtenAt is at now (-1: no time
// written; 0 when the tailer's clock is ahead of the applier's).
func cutAge(writtenAt, now time.Time) time.Duration {
	if writtenAt.IsZero() {
		return -1
	}
	return max(now.Sub(writtenAt), 0)
}

// committed records a commit from frontier prev to f.
func (m *ConsistentMetrics) committed(sink string, f, prev projections.Frontier, records int, took time.Duration, ph commitPhases) {
	if m == nil {
		return
	}
	m.commits.WithLabelValues(sink).Inc()
	if prev.Checkpoint >= 0 && f.Transactions >= prev.Transactions {
		m.transactions.WithLabelValues(sink).Observe(float64(f.Transactions - prev.Transactions))
	}
	m.rows.WithLabelValues(sink).Observe(float64(records))
	m.seconds.WithLabelValues(sink).Observe(took.Seconds())
	m.phases.WithLabelValues(sink, "previous").Observe(ph.previous.Seconds())
	m.phases.WithLabelValues(sink, "apply").Observe(ph.apply.Seconds())
	m.phases.WithLabelValues(sink, "finish").Observe(ph.finish.Seconds())
	if ph.cutAge >= 0 {
		m.cutAge.WithLabelValues(sink).Observe(ph.cutAge.Seconds())
	}
	if f.SourceTS > 0 {
		m.frontierTS.WithLabelValues(sink).Set(float64(f.SourceTS))
	}
	if !f.CutWrittenAt.IsZero() {
		m.frontierCut.WithLabelValues(sink).Set(float64(f.CutWrittenAt.UnixNano()) / 1e9)
	}
}
