package cdc

import (
	"sync/atomic"
	"time"
)

// Source lag (readside_source_lag_seconds) is how old the newest source
// change may be that is not yet in Kafka, computed when it is read, so it
// grows with wall time whenever the tailer stops learning that it is
// caught up: the source stopped or unreachable, the stream dropped, the
// broker refusing commits. Two things prove freshness:
//
//   - a source heartbeat heard while everything read is committed to
//     Kafka: at that moment nothing newer existed on the source. The
//     source sends one only when it has had nothing to send for a
//     heartbeat period, so on an idle source they come every period;
//   - a committed Kafka transaction: every source transaction up to the
//     last one in it (its commit time) is published.
//
// Within lagWindow of the last proof by heartbeat the lag reads 0 (what
// the heartbeats can resolve); after that, or while busy, it is now minus
// the newest proof.
type lagClock struct {
	caughtUp  atomic.Int64 // Unix ns: last heartbeat heard with nothing unpublished
	published atomic.Int64 // Unix s: source commit time of the newest published transaction
	started   atomic.Int64 // Unix ns: the tailer's start, the lag's origin before any proof
}

// lagWindow is how long after a heartbeat the tailer still counts as
// caught up: one period is the source's own cadence, the second period
// and a second more absorb a late heartbeat on a loaded host.
func lagWindow(heartbeat time.Duration) time.Duration { return 2*heartbeat + time.Second }

// sourceLag is the lag at now, in seconds, from the last heartbeat proof
// (zero time: none), the commit time of the newest published transaction
// (zero time: none) and the tailer's start.
func sourceLag(now, caughtUp, published, started time.Time, heartbeat time.Duration) float64 {
	if !caughtUp.IsZero() && now.Sub(caughtUp) <= lagWindow(heartbeat) {
		return 0
	}
	fresh := caughtUp
	if published.After(fresh) {
		fresh = published
	}
	if fresh.IsZero() {
		fresh = started
	}
	if fresh.IsZero() {
		return 0
	}
	return max(0, now.Sub(fresh).Seconds())
}

// LagSeconds is readside_source_lag_seconds now (see lagClock).
func (t *Tailer) LagSeconds() float64 {
	var caughtUp, published, started time.Time
	if n := t.lag.caughtUp.Load(); n != 0 {
		caughtUp = time.Unix(0, n)
	}
	if s := t.lag.published.Load(); s != 0 {
		published = time.Unix(s, 0)
	}
	if n := t.lag.started.Load(); n != 0 {
		started = time.Unix(0, n)
	}
	return sourceLag(t.now(), caughtUp, published, started, t.cfg.Source.HeartbeatPeriod)
}

// markCaughtUp records a heartbeat heard with everything read published.
func (t *Tailer) markCaughtUp() { t.lag.caughtUp.Store(t.now().UnixNano()) }

// markPublished records that the source transactions up to one committed
// at ts (Unix seconds) are in Kafka.
func (t *Tailer) markPublished(ts int64) {
	for {
		cur := t.lag.published.Load()
		if ts <= cur || t.lag.published.CompareAndSwap(cur, ts) {
			return
		}
	}
}
