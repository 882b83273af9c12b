package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicRecords reads every committed record of the topics from the start,
// until they stay quiet for 3 seconds (call it once the tailer has
// published what the test waits for, so a quiet topic is not merely a
// slow one).
func TopicRecords(t testing.TB, brokers []string, topics ...string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for quiet := time.Now(); time.Since(quiet) < 3*time.Second; {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		fetches := cl.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			quiet = time.Now()
			out = append(out, r)
		})
	}
	return out
}
