package projector

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
)

// TestCutFeedReadsAhead: the feed goes on reading the tailer's checkpoints
// while nobody takes them, so a commit starts at the newest cut written
// rather than at one buffered while the commit before it ran; it keeps
// only its tailer's, reports one that does not decode, and holds at most
// maxQueuedCuts until they are taken.
func TestCutFeedReadsAhead(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "cp"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("cp"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("cp"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	feedCtx, stop := context.WithCancel(ctx)
	f := newCutFeed(feedCtx, cl, "t")
	defer func() { stop(); <-f.done }()

	cut := func(seq int) []byte {
		body, err := json.Marshal(event.Cut{Position: event.CutPosition{GTID: "0-1-" + string(rune('0'+seq%10))}, Transactions: uint64(seq), Published: event.Offsets{}})
		if err != nil {
			t.Fatal(err)
		}
		v, err := event.SealCheckpoint(body)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	produce := func(key string, values ...[]byte) {
		var rs []*kgo.Record
		for _, v := range values {
			rs = append(rs, &kgo.Record{Key: []byte(key), Value: v})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	queued := func(want int) {
		t.Helper()
		for ctx.Err() == nil {
			f.mu.Lock()
			n := len(f.queued)
			f.mu.Unlock()
			if n >= want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("the feed did not read %d cuts ahead", want)
	}

	produce("t", cut(1))
	produce("another-tailer", cut(9))
	queued(1)
	// Nobody takes: the feed reads on.
	produce("t", cut(2))
	produce("t", []byte("garbled"))
	queued(3)
	got := f.take(maxHeldCuts)
	if len(got) != 3 || got[0].cut.Transactions != 1 || got[1].cut.Transactions != 2 || got[0].err != nil || got[1].err != nil || got[2].err == nil {
		t.Fatalf("took %+v, want cuts 1 and 2, then one that does not decode", got)
	}

	// More than the queue holds: it stops at maxQueuedCuts and reads the
	// rest once they are taken.
	var many [][]byte
	for i := range maxQueuedCuts + 100 {
		many = append(many, cut(i))
	}
	produce("t", many...)
	queued(maxQueuedCuts)
	time.Sleep(200 * time.Millisecond)
	f.mu.Lock()
	n := len(f.queued)
	f.mu.Unlock()
	if n != maxQueuedCuts {
		t.Fatalf("%d cuts queued, want the bound %d", n, maxQueuedCuts)
	}
	if got := f.take(maxQueuedCuts); len(got) != maxQueuedCuts || got[0].cut.Transactions != 0 {
		t.Fatalf("took %d cuts, the first %d", len(got), got[0].cut.Transactions)
	}
	// Its queue empty, the topic still holding cuts past what it fetched:
	// not drained (no cut due then is no sign the sink is current).
	if f.drained() {
		t.Fatal("drained with 100 cuts still in the topic")
	}
	queued(100)
	f.take(100)
	for ctx.Err() == nil && !f.drained() {
		time.Sleep(10 * time.Millisecond)
	}
	if !f.drained() {
		t.Fatal("not drained once every cut was taken")
	}
}
