package projector

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/projections"
)

// Metrics are the projector's Prometheus metrics (docs/metrics.md).
type Metrics struct {
	appliedRows  *prometheus.CounterVec
	parentRows   *prometheus.CounterVec
	stale        *prometheus.CounterVec
	lag          *lagCollector
	batchSeconds *prometheus.HistogramVec
	consumerLagG *prometheus.GaugeVec
	deadLetters  *prometheus.CounterVec
	errors       *prometheus.CounterVec
	stoppedG     *prometheus.GaugeVec
	allDeadG     *prometheus.GaugeVec
	dlq          *deadLetterTracker
	alters       *prometheus.CounterVec
	fanOutN      *prometheus.GaugeVec
	fanOutAge    *prometheus.GaugeVec
}

// NewMetrics registers the projector metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		appliedRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_applied_rows_total",
			Help: "Read-table writes (upserts, deletes) committed to the sink, after coalescing per key; for an aggregate projection the source rows' contributions, for children the child rows' states."}, []string{"projection"}),
		parentRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_parent_changes_total",
			Help: "Parent-row changes applied to join state (each fans out to the parent's read rows)."}, []string{"projection"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_stale_skipped_total",
			Help: "Writes skipped because a newer version already covers them: older writes of the same key coalesced away in a batch, and writes under a newer tombstone or truncation."}, []string{"projection"}),
		lag: newLagCollector(),
		batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readside_projection_batch_seconds",
			Help: "Time to map and apply one batch, commit included.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"projection"}),
		consumerLagG: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_projection_consumer_lag",
			Help: "Records in the partition after the last applied one."}, []string{"projection", "topic", "partition"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_dead_letters_total",
			Help: "Records sent to the dead-letter topic (on_error: dlq)."}, []string{"projection"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_errors_total",
			Help: "Errors that stopped a projector."}, []string{"projection"}),
		stoppedG: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_projection_stopped",
			Help: "1 while the projection is stopped on an error it cannot get past (the other projections and the tailer keep running; /status says why and the fix), else 0."}, []string{"projection"}),
		allDeadG: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_projection_all_dead_lettered",
			Help: "1 while every record the projection receives goes to its dead-letter topic (the last 100 or more, with no row applied between them), else 0."}, []string{"projection"}),
		dlq: newDeadLetterTracker(time.Now),
		alters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readside_projection_read_table_alters_total",
			Help: "ALTERs the projector ran on its read table (per shard) so that rows of a widened source column fit."}, []string{"projection"}),
		fanOutN: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_projection_fan_out_pending",
			Help: "fan_out: background: parent rows changed and not yet copied into their other read rows, as the last round of copies began (summed over shards)."}, []string{"projection"}),
		fanOutAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_projection_fan_out_pending_seconds",
			Help: "fan_out: background: age of the oldest parent change not yet copied into its other read rows, as the last round of copies began (the largest over shards)."}, []string{"projection"}),
	}
	if reg != nil {
		reg.MustRegister(m.appliedRows, m.parentRows, m.stale, m.lag, m.batchSeconds, m.consumerLagG, m.deadLetters, m.errors, m.stoppedG, m.allDeadG, m.alters, m.fanOutN, m.fanOutAge)
	}
	return m
}

func (m *Metrics) applied(p *projections.Projection, b *projections.Batch, took time.Duration) {
	if m == nil {
		return
	}
	// An aggregate projection's and a children entry's writes are the
	// source rows' contributions and child states: without them such a
	// projection would show no progress, and every dead letter would look
	// like all of them.
	own := len(b.Writes) + len(b.Contributions) + len(b.ChildWrites)
	m.appliedRows.WithLabelValues(p.Name).Add(float64(own))
	if good := own + len(b.Parents) - int(b.Rejected); good > 0 {
		m.dlq.applied(p.Name, good)
		m.allDeadG.WithLabelValues(p.Name).Set(0)
	}
	m.parentRows.WithLabelValues(p.Name).Add(float64(len(b.Parents)))
	m.stale.WithLabelValues(p.Name).Add(float64(b.Coalesced + b.Stale.Load()))
	m.batchSeconds.WithLabelValues(p.Name).Observe(took.Seconds())
}

func (m *Metrics) fanOutPending(p *projections.Projection, n int64, oldest time.Duration) {
	if m != nil {
		m.fanOutN.WithLabelValues(p.Name).Set(float64(n))
		m.fanOutAge.WithLabelValues(p.Name).Set(oldest.Seconds())
	}
}

func (m *Metrics) consumerLag(p *projections.Projection, topic string, part int32, n int64) {
	if m != nil {
		m.consumerLagG.WithLabelValues(p.Name, topic, strconv.Itoa(int(part))).Set(float64(max(0, n)))
	}
}

func (m *Metrics) deadLettered(p *projections.Projection, n int) {
	if m != nil {
		m.deadLetters.WithLabelValues(p.Name).Add(float64(n))
		if m.dlq.deadLettered(p.Name, n) {
			m.allDeadG.WithLabelValues(p.Name).Set(1)
		}
	}
}

func (m *Metrics) error(p *projections.Projection) {
	if m != nil {
		m.errors.WithLabelValues(p.Name).Inc()
	}
}

// Started marks a projection running (readside_projection_stopped 0), so
// the series exists before anything stops.
func (m *Metrics) Started(projection string) {
	if m != nil {
		m.stoppedG.WithLabelValues(projection).Set(0)
		m.allDeadG.WithLabelValues(projection).Add(0)
	}
}

// Stopped marks a projection stopped on an error (1).
func (m *Metrics) Stopped(projection string) {
	if m != nil {
		m.stoppedG.WithLabelValues(projection).Set(1)
	}
}

// DeadLetters is a projection's dead-lettering, for /status.
func (m *Metrics) DeadLetters(projection string) DeadLetterStatus {
	if m == nil {
		return DeadLetterStatus{}
	}
	return m.dlq.status(projection)
}

func (m *Metrics) altered(p *projections.Projection) {
	if m != nil {
		m.alters.WithLabelValues(p.Name).Inc()
	}
}
