package cdc

import (
	"sync/atomic"
	"time"
)

// Status is what the tailer tells the operations endpoint (/status,
// /readyz) about itself.
type Status struct {
	// Connected is true while a binlog stream is open.
	Connected bool
	// Checkpoint is the last one committed to (or loaded from) Kafka; nil
	// before the first.
	Checkpoint *Checkpoint
	// LagSeconds is readside_source_lag_seconds now (cdc/lag.go).
	LagSeconds float64
	// LastHeard is when the source last sent anything (an event or a
	// heartbeat); a live stream hears something every heartbeat period.
	LastHeard time.Time
	// InitialSnapshot is the initial load as far as committed; nil before
	// the checkpoint is read, or when there is none
	// (cdc/snapshot_progress.go).
	InitialSnapshot *InitialSnapshot
}

// tailerState is the tailer's side of Status, written by the stream.
type tailerState struct {
	connected  atomic.Bool
	checkpoint atomic.Pointer[Checkpoint]
	lastHeard  atomic.Int64 // Unix nanoseconds
}

// Status reports the tailer's state; safe to call from any goroutine.
func (t *Tailer) Status() Status {
	s := Status{
		Connected:       t.state.connected.Load(),
		Checkpoint:      t.state.checkpoint.Load(),
		LagSeconds:      t.LagSeconds(),
		InitialSnapshot: t.load.status(),
	}
	if n := t.state.lastHeard.Load(); n != 0 {
		s.LastHeard = time.Unix(0, n)
	}
	return s
}

func (t *Tailer) heard() { t.state.lastHeard.Store(t.now().UnixNano()) }

func (t *Tailer) committed(cp Checkpoint) {
	t.state.checkpoint.Store(&cp)
	t.load.committed(cp)
}
