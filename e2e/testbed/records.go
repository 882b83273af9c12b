package testbed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicRecords reads every committed record of the topics from the start
// up to their last stable offsets when it is called (call it once the
// tailer has published what the test waits for). A quiet spell alone is
// not an end: a client that needs a few seconds for its first fetch on a
// loaded machine would return nothing. Commit and abort markers are
// fetched too (and left out of the result) because the offset just below
// a partition's end is often one. Records committed after the call that
// arrive within a second of the end are kept.
func TopicRecords(t testing.TB, brokers []string, topics ...string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(t.Context(), topics...)
	if err != nil {
		t.Fatalf("end offsets of %v: %v", topics, err)
	}
	type partition struct {
		topic string
		p     int32
	}
	unread := map[partition]int64{} // the offset a partition's newest record must reach
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return // a topic nothing was published to has no records
		}
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			unread[partition{o.Topic, o.Partition}] = o.Offset - 1
		}
	})
	var out []*kgo.Record
	deadline := time.Now().Add(2 * time.Minute)
	for len(unread) > 0 {
		if time.Now().After(deadline) {
			t.Logf("TopicRecords: %d partitions of %v not read to their end within 2 minutes (a broker that lost them?): %v", len(unread), topics, unread)
			break
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		fetches := cl.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			k := partition{r.Topic, r.Partition}
			if want, ok := unread[k]; ok && r.Offset >= want {
				delete(unread, k)
			}
		})
	}
	// Whatever else the broker has ready: records committed after the
	// end offsets were listed.
	for quiet := time.Now(); time.Since(quiet) < time.Second; {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			quiet = time.Now()
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}
