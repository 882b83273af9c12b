package cdc

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestCheckpointCutAfterOrphans: with the checkpoint committed alone (the
// embedded broker), a crash between the events' commit and the
// checkpoint's leaves committed events past the last checkpoint's cut,
// which the tailer publishes again from that checkpoint. The cuts must
// stay whole: the first commit after the restart may not stop short of
// the last orphan's source transaction, even when it would hold fewer
// source transactions than the lost commit. The broker is kfake in this
// process: its request hooks are the one way to land the failure exactly
// between the two commits, and to make the lost commit a big one (the
// commit before it is held back a second while the workload runs, so the
// source transactions read meanwhile all ride in the next).
func TestCheckpointCutAfterOrphans(t *testing.T) {
	bed := testbed.Get(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cfg, w, topics := cutSetup(t, bed, rand.New(rand.NewPCG(seed, 7)))
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	cfg.Kafka.CommitEvery = 200 // the lost commit: many source transactions
	stop := startTailer(t, cfg, EmbeddedBroker())
	testbed.WaitForTailer(t, bed.MySQL, cfg.Kafka.Brokers, event.CheckpointTopic(cfg.Kafka.TopicPrefix))

	fault := &lostCheckpoint{cluster: cluster, checkpointTopic: event.CheckpointTopic(cfg.Kafka.TopicPrefix)}
	fault.install(t, cfg.Kafka.Brokers)
	w.run(t, 300)
	testbed.Eventually(t, 30*time.Second, func() (bool, string) {
		return fault.failing(), "the checkpoint's commit was never failed"
	})
	if err := stop(); err != nil {
		t.Fatalf("tailer: %v", err)
	}
	// The successor commits after a few records: without waiting for the
	// orphans, its first cut would pass some of them before the copies
	// of their source transactions.
	fault.release()
	cfg.Kafka.CommitEvery = 3
	stop = startTailer(t, cfg, EmbeddedBroker())
	w.run(t, 50)
	waitCaughtUp(t, cfg, w.mark(t))
	if err := stop(); err != nil {
		t.Fatalf("tailer: %v", err)
	}
	recs := checkCuts(t, cfg, topics, w)
	if republished(recs) == 0 {
		t.Error("no event was published again after the lost checkpoint")
	}
}

// lostCheckpoint, once installed, holds back the events' commit of the
// next Kafka commit for a second (the source transactions read meanwhile
// ride in the commit after it), lets that next commit's events commit and
// fails its checkpoint's commit; from then on it fails every commit until
// released, as if the process had died there.
type lostCheckpoint struct {
	cluster         *kfake.Cluster
	checkpointTopic string
	checkpointID    [16]byte

	mu     sync.Mutex
	events bool // the open transaction produced to a table topic
	phase  int  // 0: hold the next events' commit; 1: pass the next; 2: fail the next checkpoint's; 3: fail all; 4: released
}

func (f *lostCheckpoint) install(t *testing.T, brokers []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(t.Context(), f.checkpointTopic)
	if err != nil {
		t.Fatal(err)
	}
	f.checkpointID = md.Topics[f.checkpointTopic].ID
	f.cluster.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		for _, tp := range kreq.(*kmsg.ProduceRequest).Topics {
			if tp.Topic != f.checkpointTopic && tp.TopicID != f.checkpointID {
				f.mu.Lock()
				f.events = true
				f.mu.Unlock()
			}
		}
		return nil, nil, false
	})
	f.cluster.ControlKey(int16(kmsg.EndTxn), f.endTxn)
}

func (f *lostCheckpoint) endTxn(kreq kmsg.Request) (kmsg.Response, error, bool) {
	req := kreq.(*kmsg.EndTxnRequest)
	f.mu.Lock()
	defer f.mu.Unlock()
	events := f.events
	f.events = false
	if !req.Commit {
		return nil, nil, false
	}
	switch {
	case f.phase == 0 && events:
		f.phase = 1
		f.mu.Unlock()
		f.cluster.SleepControl(func() { time.Sleep(time.Second) })
		f.mu.Lock()
	case f.phase == 1 && events:
		f.phase = 2
	case f.phase == 2 && !events:
		f.phase = 3
	}
	if f.phase != 3 {
		return nil, nil, false
	}
	f.cluster.KeepControl()
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode = kerr.UnknownServerError.Code
	return resp, nil, true
}

func (f *lostCheckpoint) failing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.phase == 3
}

func (f *lostCheckpoint) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phase = 4
}
