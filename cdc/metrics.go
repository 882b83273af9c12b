package cdc

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// metrics of the tailer; each is listed in docs/metrics.md.
type metrics struct {
	events        *prometheus.CounterVec
	transactions  prometheus.Counter
	lag           prometheus.GaugeFunc
	commitLatency prometheus.Histogram
	reconnects    prometheus.Counter
	errors        prometheus.Counter
	purge         prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, secondsToPurge, lagSeconds func() float64) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "readside_source_events_total", Help: "Row change events published, by source table and op.",
		}, []string{"table", "op"}),
		transactions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "readside_source_transactions_total", Help: "Source transactions read from the binlog.",
		}),
		lag: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "readside_source_lag_seconds", Help: "How old the newest source change not yet published to Kafka may be, computed at scrape time: now minus the newest proof of freshness (a source heartbeat heard with everything published, or the commit time of the newest published transaction); 0 within two heartbeat periods and a second of such a heartbeat.",
		}, lagSeconds),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "readside_produce_commit_seconds", Help: "Time to flush and commit one Kafka transaction of events plus checkpoint.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "readside_source_reconnects_total", Help: "Binlog stream restarts from the checkpoint after a transient error.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "readside_tailer_errors_total", Help: "Errors that interrupted the tailer's stream.",
		}),
		purge: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "readside_source_binlog_purge_seconds",
			Help: "Lower bound on the seconds until the source may purge the binlog at the tailer's checkpoint (its binlog retention minus the age of the newest write known to be there); +Inf when the source never purges by age. Below zero the position may already be gone.",
		}, secondsToPurge),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.events, m.transactions, m.lag, m.commitLatency, m.reconnects, m.errors, m.purge} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// newRecord builds a Kafka record; partition is used only for keyless
// records (see pinnedPartitioner).
func newRecord(topic string, key, value []byte, partition int32) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: key, Value: value, Partition: partition}
}
