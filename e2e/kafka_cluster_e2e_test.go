package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// TestKafkaThreeNodes runs the three-node mode of the test bed: RF=3,
// min.insync.replicas=2, acks=all. The cluster starts once for its
// subtests (a start costs three JVMs).
func TestKafkaThreeNodes(t *testing.T) {
	shared := testbed.Get(t)
	if testbed.BrokerKind() != "kafka" {
		t.Skip("three-node mode needs the real broker (E2E_BROKER=kafka)")
	}
	began := time.Now()
	bed, err := testbed.Start(t.Context(), testbed.Options{KafkaNodes: 3, NoMySQL: true})
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Errorf("closing three-node test bed: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after %s", "cluster up", time.Since(began).Round(time.Millisecond))
	t.Run("producer", func(t *testing.T) { testThreeNodesProducer(t, bed) })
	// readside on the test bed's MariaDB and the three-node cluster.
	t.Run("readside", func(t *testing.T) { testThreeNodesReadside(t, &testbed.Bed{MySQL: shared.MySQL, Kafka: bed.Kafka}) })
}

// testThreeNodesProducer: a node is killed with SIGKILL in the middle of
// producing and restarted; every acknowledged record must be readable
// afterwards, in order per partition.
func testThreeNodesProducer(t *testing.T, bed *testbed.Bed) {
	ctx := t.Context()
	began := time.Now()
	cl := newClient(t, bed, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.ProduceRequestTimeout(10*time.Second))
	topic := "cluster.smoke"
	res, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("creating topic: %v %v", err, res.Err)
	}

	const n = 3000
	for i := range n {
		if i == n/2 {
			t.Logf("%s after %s", "killing node 2", time.Since(began).Round(time.Millisecond))
			if err := bed.Kafka.Kill(1); err != nil {
				t.Fatal(err)
			}
		}
		key := strconv.Itoa(i % 50)
		r := &kgo.Record{Topic: topic, Key: []byte(key), Value: fmt.Appendf(nil, `{"op":"c","id":%q,"cols":{"seq":"%d"}}`, key, i)}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("record %s not acknowledged: %v", r.Value, err)
			}
		})
	}
	t.Logf("produced %d records after %s", n, time.Since(began).Round(time.Millisecond))
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	restartCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := bed.Kafka.Restart(restartCtx, 1); err != nil {
		t.Fatalf("restarting node after kill -9: %v", err)
	}
	t.Logf("%s after %s", "node restarted", time.Since(began).Round(time.Millisecond))
	got := consumeAll(t, bed, topic, n)
	last := map[string]int{}
	for _, c := range got {
		seq, _ := strconv.Atoi(c.Cols["seq"])
		if prev, ok := last[c.ID]; ok && seq <= prev {
			t.Fatalf("key %s: seq %d after %d: per-key order broken", c.ID, seq, prev)
		}
		last[c.ID] = seq
	}
}

// testThreeNodesReadside: `readside run` (tailer and projectors) under a
// steady write load while the node leading the tailer's checkpoint
// partition — every Kafka transaction of the tailer writes there — is
// killed with SIGKILL for 20 s and started again. readside keeps running
// and loses, duplicates and reorders nothing (brokerFaultPipeline.check).
func testThreeNodesReadside(t *testing.T, bed *testbed.Bed) {
	ctx := t.Context()
	p := startBrokerFaultPipeline(t, bed)
	cl := newClient(t, bed)
	adm := kadm.NewClient(cl)
	checkpoints := p.prefix + "._readside_checkpoints"
	topics, err := adm.ListTopics(ctx, checkpoints)
	if err != nil {
		t.Fatal(err)
	}
	part, ok := topics[checkpoints].Partitions[0]
	if !ok || part.Leader < 1 || int(part.Leader) > bed.Kafka.Nodes() {
		t.Fatalf("no leader for %s/0: %+v", checkpoints, topics[checkpoints])
	}
	if len(part.Replicas) != 3 {
		t.Fatalf("%s/0 has replicas %v, want 3 (the broker's default.replication.factor)", checkpoints, part.Replicas)
	}
	// acks=all (the tailer's transactional producer) waits for every
	// in-sync replica, and at least min.insync.replicas of them.
	configs, err := adm.DescribeTopicConfigs(ctx, checkpoints)
	if err != nil {
		t.Fatal(err)
	}
	minISR := "<unset>"
	for _, c := range configs {
		for _, kv := range c.Configs {
			if kv.Key == "min.insync.replicas" && kv.Value != nil {
				minISR = *kv.Value
			}
		}
	}
	if minISR != "2" {
		t.Fatalf("%s: min.insync.replicas %s, want 2", checkpoints, minISR)
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := int(part.Leader) - 1 // node ids are 1-based
	p.startLoad()
	p.writeFor(5*time.Second, "before the node was killed")
	if err := bed.Kafka.Kill(victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed node %d (leader of %s/0; the controller is node %d) after %d committed changes", part.Leader, checkpoints, md.Controller, p.w.model.total())
	p.writeFor(20*time.Second, "while a node was down")
	began := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err = bed.Kafka.Restart(rctx, victim)
	cancel()
	if err != nil {
		t.Fatalf("restarting node %d: %v", part.Leader, err)
	}
	t.Logf("node %d up again in %s, %d committed changes", part.Leader, time.Since(began).Round(time.Millisecond), p.w.model.total())
	p.writeFor(5*time.Second, "after the node came back")
	p.stopLoad()
	p.check()
}
