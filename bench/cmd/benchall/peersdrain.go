package main

// Debezium's drains in `make bench-peers`: the source connector on the
// backlog and the JDBC sink on the filled topic, each timed as readside's
// stage of the same name.

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/readside/readside/bench/peers"
)

// sourceDrain starts the primed source on the backlog and times it from
// its first record in the topic to the last of the backlog's records
// acknowledged (acks=all), as readside's tailerDrain does from its first
// record to the checkpoint covering the backlog.
func (d *dbz) sourceDrain(ctx context.Context, v map[string]string, offsets string, w workload) (rate, error) {
	r := rate{Load1: loadavg()}
	c, err := d.start(ctx, v["NAME"]+".source", offsets, map[string]string{"source": peers.Render(peers.Source, v)})
	if err != nil {
		return r, err
	}
	defer func() {
		if c != nil {
			c.end()
		}
	}()
	var t0 time.Time
	var h0 int64
	var cpu0 float64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		_, sum := d.e.endOffsets(ctx, v["TOPIC"])
		if t0.IsZero() && sum > 0 {
			t0, h0, cpu0 = time.Now(), sum, c.cpuSeconds()
		}
		if sum >= int64(w.Events) {
			break
		}
		if err := c.healthy(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d events in 10 minutes (see %s)", sum, w.Events, c.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t1, cpu1 := time.Now(), c.cpuSeconds()
	r.PeakRSSMiB = c.end()
	c = nil
	ev := float64(int64(w.Events) - h0)
	r.drained(ev, t1.Sub(t0), cpu1-cpu0)
	return r, nil
}

// sinkDrain starts the JDBC sink on the filled topic and times it from its
// first committed consumer offset to every partition committed to its end,
// in source events, as readside's projectorDrain does with its applied
// offsets. Offsets are committed every 250 ms (offset.flush.interval.ms).
func (d *dbz) sinkDrain(ctx context.Context, v map[string]string, w workload) (rate, error) {
	r := rate{Load1: loadavg()}
	ends, total := d.e.endOffsets(ctx, v["TOPIC"])
	c, err := d.start(ctx, v["NAME"]+".sink", filepath.Join(d.e.dir, "connect", v["NAME"]+".sink.offsets"),
		map[string]string{"sink": peers.Render(peers.Sink, v)})
	if err != nil {
		return r, err
	}
	defer func() {
		if c != nil {
			c.end()
		}
	}()
	group := "connect-" + v["NAME"] + "-sink"
	var t0 time.Time
	var s0 int64
	var cpu0 float64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		committed, sum := d.committed(ctx, group, v["TOPIC"])
		if t0.IsZero() && sum > 0 {
			t0, s0, cpu0 = time.Now(), sum, c.cpuSeconds()
		}
		done := true
		for p, end := range ends {
			if committed[p] < end {
				done = false
			}
		}
		if done && sum > 0 {
			break
		}
		if err := c.healthy(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d records committed in 10 minutes (see %s)", sum, total, c.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t1, cpu1 := time.Now(), c.cpuSeconds()
	r.PeakRSSMiB = c.end()
	c = nil
	share := 1 - float64(s0)/float64(max(total, 1))
	ev := float64(w.Events) * share
	r.drained(ev, t1.Sub(t0), cpu1-cpu0)
	return r, nil
}

// committed is a consumer group's committed offsets on a topic.
func (d *dbz) committed(ctx context.Context, group, topic string) (map[int32]int64, int64) {
	m := map[int32]int64{}
	var sum int64
	resp, err := d.e.adm.FetchOffsets(ctx, group)
	if err != nil {
		return m, 0
	}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == topic && o.At >= 0 {
			m[o.Partition] = o.At
			sum += o.At
		}
	})
	return m, sum
}
