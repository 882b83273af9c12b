package projector

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchOf builds a poll the way a fetch returns it: partition after
// partition, each with its high watermark.
func fetchOf(topic string, from map[int32][2]int64) kgo.Fetches {
	ft := kgo.FetchTopic{Topic: topic}
	for part := int32(0); part < 16; part++ {
		r, ok := from[part]
		if !ok {
			continue
		}
		fp := kgo.FetchPartition{Partition: part, HighWatermark: r[1] + 100}
		for o := r[0]; o < r[1]; o++ {
			fp.Records = append(fp.Records, &kgo.Record{Topic: topic, Partition: part, Offset: o})
		}
		ft.Partitions = append(ft.Partitions, fp)
	}
	return kgo.Fetches{{Topics: []kgo.FetchTopic{ft}}}
}

// TestPollQueueDealsEvenJobs: a fetch of lopsided partitions comes out as
// equal jobs, each with an even share of every partition, every record
// exactly once and in order per partition; split for two connections, a
// job's transactions are the same size.
func TestPollQueueDealsEvenJobs(t *testing.T) {
	var q pollQueue
	// 8,551 of partition 0 and 1,449 of 1, then a second poll.
	ends := map[int32]int64{0: 8551, 1: 1449, 2: 2894, 3: 4306, 4: 5869, 5: 7262}
	q.add(fetchOf("t", map[int32][2]int64{0: {0, ends[0]}, 1: {0, ends[1]}, 2: {0, ends[2]}}))
	q.add(fetchOf("t", map[int32][2]int64{3: {0, ends[3]}, 4: {0, ends[4]}, 5: {0, ends[5]}}))
	total := 8551 + 1449 + 2894 + 4306 + 5869 + 7262 // 30,331: four jobs of ≤ 10,000
	if q.len() != total {
		t.Fatalf("queued %d, want %d", q.len(), total)
	}
	next := map[string]int64{}
	seen := 0
	for jobs := 0; q.len() > 0; jobs++ {
		if jobs == 4 {
			t.Fatalf("more than 4 jobs for %d records", total)
		}
		recs, before, after := q.take(10_000)
		if len(recs) < 7_582 || len(recs) > 7_583 {
			t.Fatalf("job %d: %d records, want the queue cut into 4 equal jobs (7,582–7,583)", jobs, len(recs))
		}
		for _, r := range recs {
			k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if r.Offset != next[k] {
				t.Fatalf("job %d: partition %s offset %d, want %d", jobs, k, r.Offset, next[k])
			}
			next[k]++
		}
		seen += len(recs)
		for i, l := range after {
			hw := ends[l.part] + 100 // fetchOf's high watermark
			if l.lag != hw-next[fmt.Sprintf("%s/%d", l.topic, l.part)] {
				t.Errorf("job %d: lag after of %d is %d", jobs, l.part, l.lag)
			}
			if before[i].lag <= l.lag {
				t.Errorf("job %d: lag before %d not above after %d", jobs, before[i].lag, l.lag)
			}
		}
		groups := splitByPartition(recs, 2)
		if len(groups) != 2 {
			t.Fatalf("job %d: %d transactions, want 2", jobs, len(groups))
		}
		if d := len(groups[0]) - len(groups[1]); d > len(recs)/5 || d < -len(recs)/5 {
			t.Errorf("job %d: transactions of %d and %d records", jobs, len(groups[0]), len(groups[1]))
		}
	}
	if seen != total {
		t.Fatalf("took %d records, want %d", seen, total)
	}
}

// TestPollQueueSmallAndKeep: a poll under a job is taken whole; a
// partition given up in a rebalance is dropped.
func TestPollQueueSmallAndKeep(t *testing.T) {
	var q pollQueue
	q.add(fetchOf("t", map[int32][2]int64{0: {5, 105}, 1: {7, 8}, 2: {0, 300}}))
	q.keep(func(_ string, part int32) bool { return part != 2 })
	if q.len() != 101 {
		t.Fatalf("after keep: %d queued, want 101", q.len())
	}
	recs, _, _ := q.take(10_000)
	if len(recs) != 101 || q.len() != 0 {
		t.Fatalf("took %d, left %d; want all 101", len(recs), q.len())
	}
	for _, r := range recs {
		if r.Partition == 2 {
			t.Fatalf("a record of a dropped partition was taken")
		}
	}
	if recs, _, _ := q.take(10); recs != nil {
		t.Fatalf("empty queue gave %d records", len(recs))
	}
}

// TestPollQueueCommitMarkers: a Kafka transaction ends with a commit
// marker the high watermark is one past, so a partition read through its
// marker is caught up (lag 0), whether the marker came with the records
// or alone in a later fetch; the markers are never handed out as records.
func TestPollQueueCommitMarkers(t *testing.T) {
	marker := func(o int64) *kgo.Record {
		return &kgo.Record{Topic: "t", Partition: 0, Offset: o, Attrs: kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: true})}
	}
	data := func(o int64) *kgo.Record { return &kgo.Record{Topic: "t", Partition: 0, Offset: o} }
	fetch := func(hw int64, recs ...*kgo.Record) kgo.Fetches {
		return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{{Partition: 0, HighWatermark: hw, Records: recs}}}}}}
	}
	cases := []struct {
		why     string
		fetches []kgo.Fetches
		records int
		after   int64
	}{
		{"records and their marker in one fetch: caught up", []kgo.Fetches{fetch(4, data(0), data(1), data(2), marker(3))}, 3, 0},
		{"the marker alone in the next fetch: caught up", []kgo.Fetches{fetch(3, data(0), data(1)), fetch(3, marker(2))}, 2, 0},
		{"a marker alone with nothing queued still reports caught up", []kgo.Fetches{fetch(8, marker(7))}, 0, 0},
		{"a transaction still being read: what follows is lag", []kgo.Fetches{fetch(10, data(0), data(1), marker(2), data(3))}, 3, 6},
	}
	for _, c := range cases {
		var q pollQueue
		for _, f := range c.fetches {
			q.add(f)
		}
		recs, _, after := q.take(10_000)
		if len(recs) != c.records {
			t.Errorf("%s: took %d records, want %d", c.why, len(recs), c.records)
		}
		for _, r := range recs {
			if r.Attrs.IsControl() {
				t.Errorf("%s: a control record was handed out (offset %d)", c.why, r.Offset)
			}
		}
		if len(after) != 1 || after[0].lag != c.after {
			t.Errorf("%s: lag after = %+v, want one partition at %d", c.why, after, c.after)
		}
		if recs, _, after := q.take(10_000); len(recs) != 0 || len(after) != 0 {
			t.Errorf("%s: a second take gave %d records and %d lags, want nothing", c.why, len(recs), len(after))
		}
	}
}
