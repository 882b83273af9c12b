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
// min.insync.replicas=2, acks=all. A node is killed with SIGKILL in the
// middle of producing and restarted; every acknowledged record must be
// readable afterwards, in order per partition.
func TestKafkaThreeNodes(t *testing.T) {
	testbed.Get(t)
	if testbed.BrokerKind() != "kafka" {
		t.Skip("three-node mode needs the real broker (E2E_BROKER=kafka)")
	}
	ctx := t.Context()
	began := time.Now()
	bed, err := testbed.Start(ctx, testbed.Options{KafkaNodes: 3, NoMySQL: true})
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Errorf("closing three-node test bed: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after %s", "cluster up", time.Since(began).Round(time.Millisecond))
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
