package sinks_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestTruncationWaitsForConcurrentBatch: a truncation read from one
// partition (a Debezium connector writes its op t into one) and a batch
// of another partition holding rows from before it, in two concurrent
// transactions. The batch has read the truncation floor (none yet) and is
// about to write its rows when the truncation applies: the truncation
// must wait for the batch's commit, or the rows would commit below the
// floor after it and stay for good. Once both committed, the read table
// holds none of the rows — a copy's, and an aggregate's groups.
func TestTruncationWaitsForConcurrentBatch(t *testing.T) {
	bed := testbed.Get(t)
	t.Run("copy", func(t *testing.T) {
		src, sinkDB := sourceAndSink(t, bed, "trr", "id INT PRIMARY KEY, s VARCHAR(10) NOT NULL")
		p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "s": "s"})
		var old []projections.Write
		for id := 1; id <= 50; id++ {
			old = append(old, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Values: projections.ValuesOf(id, "before"), Version: uint64(100 + id)})
		}
		raceTruncation(t, sink, p, &projections.Batch{Writes: old}, &projections.Batch{Writes: []projections.Write{{Kind: projections.Truncate, Version: 1000}}}, "t_copy")
	})
	t.Run("aggregate", func(t *testing.T) {
		src, sinkDB := sourceAndSink(t, bed, "tra", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
		p, sink := aggregateSink(t, bed, src, sinkDB)
		var stale atomic.Int64
		var old []projections.Contribution
		for id := 1; id <= 50; id++ {
			old = append(old, contribution(fmt.Sprint(id), uint64(100+id), id%3, "1.00"))
		}
		raceTruncation(t, sink, p, &projections.Batch{Contributions: old, Stale: &stale},
			&projections.Batch{Contributions: []projections.Contribution{{Truncate: true, Version: 1000}}, Stale: &stale}, "stats")
	})
}

// raceTruncation applies rows (partition 1) until it has read the
// truncation floor, then truncate (partition 0) while rows waits, then
// lets rows go on, and checks that table is empty once both committed.
func raceTruncation(t *testing.T, sink *sinks.Sharded, p *projections.Projection, rows, truncate *projections.Batch, table string) {
	ctx := t.Context()
	rows.Offsets, truncate.Offsets = event.Offsets{}, event.Offsets{}
	rows.Offsets.Set(p.Topic, 1, 10)
	truncate.Offsets.Set(p.Topic, 0, 5)
	read, resume := make(chan struct{}), make(chan struct{})
	sinks.SetAfterFloorRead(func() {
		close(read)
		<-resume
	})
	defer sinks.SetAfterFloorRead(nil)
	rowsDone := make(chan error, 1)
	go func() { rowsDone <- sink.Apply(ctx, p, rows) }()
	<-read
	sinks.SetAfterFloorRead(nil)
	truncated := make(chan error, 1)
	go func() { truncated <- sink.Apply(ctx, p, truncate) }()
	var truncErr error
	early := false
	select {
	case truncErr = <-truncated:
		early = true
		t.Logf("the truncation committed while the batch of older rows, its floor read, was open (%v)", truncErr)
	case <-time.After(3 * time.Second):
	}
	close(resume)
	if err := <-rowsDone; err != nil {
		t.Fatal(err)
	}
	if !early {
		truncErr = <-truncated
	}
	if truncErr != nil {
		t.Fatal(truncErr)
	}
	var n int
	if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows in %s from before the truncation (versions 101–150, truncated at 1000): a concurrent batch's rows committed below the floor", n, table)
	}
}
