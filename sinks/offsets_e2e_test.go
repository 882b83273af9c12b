package sinks_test

import (
	"fmt"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/sinks"
)

// TestLowestOffsets: a projection over two shards resumes each partition
// where the shard furthest behind stands, and a partition one shard never
// committed from the beginning: a record a shard lacks is never skipped.
// Sharded.Offsets and a reshard's fill sink both resume this way.
func TestLowestOffsets(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkA := sourceAndSink(t, bed, "lowa", "id INT PRIMARY KEY, v INT")
	sinkB, err := bed.MySQL.CreateDatabase(ctx, "lowbsink")
	if err != nil {
		t.Fatal(err)
	}
	p, a := copyTable(t, bed, src, sinkA, map[string]string{"id": "id", "v": "v"})
	_, b := copyTable(t, bed, src, sinkB, map[string]string{"id": "id", "v": "v"})
	for sh, parts := range map[sinks.Shard]map[int32]int64{
		a.Shards[0]: {0: 10, 1: 5, 2: 7},
		b.Shards[0]: {0: 8, 1: 9},
	} {
		o := event.Offsets{}
		for part, next := range parts {
			o.Set(p.Topic, part, next)
		}
		if err := sh.SetOffsets(ctx, p.OffsetsName(), o); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sinks.LowestOffsets(ctx, []sinks.Shard{a.Shards[0], b.Shards[0]}, p)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got[p.Topic]); s != "map[0:8 1:5]" {
		t.Errorf("offsets %s, want map[0:8 1:5]: the lower of each partition both shards committed, none for partition 2", s)
	}
}
