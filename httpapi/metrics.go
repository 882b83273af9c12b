package httpapi

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetrics exports the collector's report as metrics (listed in
// docs/metrics.md). They are computed at scrape time from a report at most
// reportMaxAge old.
func (c *Collector) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(reportCollector{c})
}

var (
	consumerLagDesc = prometheus.NewDesc("readside_projection_consumer_lag_offsets",
		"Offsets of the projection's topics (its own, its joins' and children's) not yet applied to its read table (end offset minus applied offset minus the last commit marker, summed over partitions).",
		[]string{"projection"}, nil)
	readyDesc = prometheus.NewDesc("readside_ready",
		"1 when /readyz answers 200: tailer streaming within http.ready_max_lag and projectors holding their partitions.", nil, nil)
)

type reportCollector struct{ c *Collector }

func (rc reportCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- consumerLagDesc
	ch <- readyDesc
}

func (rc reportCollector) Collect(ch chan<- prometheus.Metric) {
	// Gather has no context; bound the stores' time here.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rep := rc.c.Cached(ctx, reportMaxAge)
	ready := 0.0
	if rep.Ready {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, ready)
	for _, p := range rep.Projections {
		if p.Error != "" {
			continue // unknown, not zero
		}
		ch <- prometheus.MustNewConstMetric(consumerLagDesc, prometheus.GaugeValue, float64(p.ConsumerLag), p.Name)
	}
}
