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
