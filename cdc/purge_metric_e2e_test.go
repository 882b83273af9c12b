package cdc

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/readside/readside/e2e/testbed"
)

func TestSecondsToPurge(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	cases := []struct {
		why       string
		retention int64
		needsFrom int64
		want      float64
	}{
		{"a source that never purges by age", 0, 999_000, math.Inf(1)},
		{"nothing committed yet: the whole retention", 3600, 0, 3600},
		{"the checkpoint's binlog was written 600s ago", 3600, 999_400, 3000},
		{"overdue: the position may be gone already", 3600, 990_000, -6400},
	}
	for _, c := range cases {
		tl := &Tailer{now: func() time.Time { return now }}
		tl.retention.Store(c.retention)
		tl.needsFrom.Store(c.needsFrom)
		if got := tl.secondsToPurge(); got != c.want {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}

// TestPurgeMetricLive: with a retention set on the source, a running
// tailer exports the time left before its position could be purged.
func TestPurgeMetricLive(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("changes a global setting of the source")
	}
	ctx := t.Context()
	if err := bed.MySQL.Exec(ctx, "SET GLOBAL binlog_expire_logs_seconds = 3600"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.MySQL.Exec(ctx, "SET GLOBAL binlog_expire_logs_seconds = 0") })
	db, err := bed.MySQL.CreateDatabase(ctx, "pm")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".none")
	reg := prometheus.NewRegistry()
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = tl.Run(ctx) }()
	waitForTailer(t, bed, cfg)
	got := testutil.ToFloat64(tl.metrics.purge)
	if got < 3500 || got > 3600 {
		t.Errorf("readside_source_binlog_purge_seconds = %v, want just under 3600", got)
	}
	if n, err := testutil.GatherAndCount(reg, "readside_source_binlog_purge_seconds"); err != nil || n != 1 {
		t.Errorf("metric not registered: %d %v", n, err)
	}
}
