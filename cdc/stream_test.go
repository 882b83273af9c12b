package cdc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// TestEventQueueGivesUpWhenStreamEnds: the read stage hands events to a
// bounded queue; once the stream is over it must stop waiting for room,
// or closing go-mysql's syncer (which waits for its reading goroutine)
// would hang the tailer's restart.
func TestEventQueueGivesUpWhenStreamEnds(t *testing.T) {
	over := make(chan struct{})
	q := eventQueue{events: make(chan *replication.BinlogEvent, 1), over: over}
	if err := q.HandleEvent(&replication.BinlogEvent{}); err != nil {
		t.Fatalf("room in the queue: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- q.HandleEvent(&replication.BinlogEvent{}) }()
	select {
	case err := <-done:
		t.Fatalf("a full queue accepted an event (%v): no back-pressure on the binlog connection", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(over)
	select {
	case err := <-done:
		if !errors.Is(err, errStreamOver) {
			t.Fatalf("after the stream ended: %v, want errStreamOver", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the read stage still waits for room after the stream ended")
	}
}

// TestWatch: the watch stage returns the binlog connection's error for
// classification, and nothing when the stream ends for another reason.
func TestWatch(t *testing.T) {
	failed := replication.NewBinlogStreamer()
	cut := errors.New("connection reset by peer")
	failed.AddErrorToStreamer(cut)
	var re *readError
	if err := watch(t.Context(), failed); !errors.As(err, &re) || !errors.Is(err, cut) {
		t.Errorf("connection error: %v, want it as a readError", err)
	}

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if err := watch(ended, replication.NewBinlogStreamer()); err != nil {
		t.Errorf("stream over: %v, want nil (the stage that ended it has the error)", err)
	}
}

// TestProcessTakesUpCommitWhileIdle: the process stage wakes when a
// background commit is over, even with no event to read, so a failed
// commit restarts the stream from the checkpoint in Kafka at once rather
// than at the next source write.
func TestProcessTakesUpCommitWhileIdle(t *testing.T) {
	var cfg Config
	cfg.Kafka.CommitEvery, cfg.Kafka.CommitInterval = 100, time.Hour
	running := &pendingCommit{done: make(chan struct{})}
	s := &stream{t: &Tailer{cfg: cfg, now: time.Now}, pub: &publisher{inflight: running},
		src: &sourceDB{}, clock: NewClock(0), sched: newCommitScheduler(cfg.Kafka)}
	events := make(chan *replication.BinlogEvent)
	done := make(chan error, 1)
	go func() { done <- s.process(t.Context(), t.Context(), events) }()
	// A heartbeat, then a pause: the stage is then most likely waiting in
	// its select, the place this guards, rather than about to look at
	// the commit before reading (a slow box only makes the test weaker).
	events <- &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.HeartbeatEvent{}}
	time.Sleep(50 * time.Millisecond)

	failed := errors.New("committing Kafka transaction: broker gone")
	running.err = failed
	close(running.done)
	select {
	case err := <-done:
		if !errors.Is(err, failed) {
			t.Fatalf("process: %v, want the failed commit's error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an idle stream did not take up its failed background commit")
	}
}
