package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackProbe measures commit → broker ack: a read_committed consumer of the
// projection's topic that notes, for every record, the time it received
// it minus the row's commit_us. A transactional record is not readable by
// a read_committed consumer until the tailer's EndTxn has been acknowledged
// (the commit marker written and the last stable offset moved past it),
// so the receive time bounds the ack from above, by one fetch round trip
// (FetchMaxWait 10 ms, and the broker answers a waiting fetch as soon as
// new stable records exist). The record's own timestamp (CreateTime, set
// by the tailer's producer when it hands the record over, before the
// transaction commits) bounds it from below; it is kept as
// commit → produce. Both clocks are this host's (commit_us comes from the
// generator in this process), so no skew enters.
type ackProbe struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	seen  []ackSample
	total int    // records received, parsed or not
	first string // the first record's key and value, for the error
	err   error
}

type ackSample struct {
	id        int64
	ackUS     int64 // received − commit_us
	produceUS int64 // record timestamp − commit_us
}

func (e *env) startAckProbe(topic string) (*ackProbe, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bed.Kafka.Brokers()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(10*time.Millisecond), kgo.FetchMaxBytes(16<<20))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &ackProbe{cl: cl, cancel: cancel, done: make(chan struct{})}
	go a.run(ctx)
	return a, nil
}

var (
	commitKey = []byte(`"commit_us":`)
	idKey     = []byte(`"id":`)
	afterKey  = []byte(`"after":{`)
)

func (a *ackProbe) run(ctx context.Context) {
	defer close(a.done)
	for ctx.Err() == nil {
		fetches := a.cl.PollFetches(ctx)
		now := time.Now().UnixMicro()
		var batch []ackSample
		var first string
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			if n++; first == "" {
				first = string(r.Key) + " " + string(r.Value)
			}
			// Byte scans rather than decoding the envelope: this runs on the
			// same two cores as readside at tens of thousands of records/s.
			// The key is {"id":N}.
			id, ok1 := jsonInt(r.Key, idKey)
			cus, ok2 := commitUS(r.Value)
			if ok1 && ok2 {
				batch = append(batch, ackSample{id: id, ackUS: now - cus, produceUS: r.Timestamp.UnixMicro() - cus})
			}
		})
		a.mu.Lock()
		a.seen = append(a.seen, batch...)
		a.total += n
		if a.first == "" {
			a.first = first
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil && a.err == nil {
				a.err = err
			}
		})
		a.mu.Unlock()
	}
}

// commitUS is the after image's commit_us (the schema member names the
// column too, as a type).
func commitUS(value []byte) (int64, bool) {
	i := bytes.Index(value, afterKey)
	if i < 0 {
		return 0, false
	}
	return jsonInt(value[i:], commitKey)
}

// jsonInt reads the integer after key's first occurrence.
func jsonInt(b, key []byte) (int64, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0, false
	}
	b = b[i+len(key):]
	j := 0
	for j < len(b) && (b[j] == '-' || (b[j] >= '0' && b[j] <= '9')) {
		j++
	}
	v, err := strconv.ParseInt(string(b[:j]), 10, 64)
	return v, err == nil
}

// take waits until the probe has seen n records with ids in [lo, hi]
// (up to limit), removes them and returns their latencies in µs.
func (a *ackProbe) take(lo, hi int64, n int, limit time.Duration) (ack, produce []int64, err error) {
	deadline := time.Now().Add(limit)
	for {
		a.mu.Lock()
		cnt := 0
		for _, s := range a.seen {
			if s.id >= lo && s.id <= hi {
				cnt++
			}
		}
		if cnt >= n || time.Now().After(deadline) || a.err != nil {
			rest := a.seen[:0]
			for _, s := range a.seen {
				if s.id >= lo && s.id <= hi {
					ack, produce = append(ack, s.ackUS), append(produce, s.produceUS)
				} else if s.id > hi {
					rest = append(rest, s)
				}
			}
			a.seen = rest
			err = a.err
			a.mu.Unlock()
			if err == nil && cnt < n {
				err = fmt.Errorf("the broker ack probe saw %d of %d records in %v (%d records received in all; the first: %.300s)", cnt, n, limit, a.total, a.first)
			}
			return ack, produce, err
		}
		a.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

func (a *ackProbe) close() {
	a.once.Do(func() {
		a.cancel()
		<-a.done
		a.cl.Close()
	})
}

// percentiles are p50/p95/p99/max of latencies in µs, in ms.
type percentiles struct {
	P50ms float64 `json:"p50_ms"`
	P95ms float64 `json:"p95_ms"`
	P99ms float64 `json:"p99_ms"`
	Maxms float64 `json:"max_ms"`
	N     int     `json:"n"`
}

func percentilesOf(us []int64) percentiles {
	slices.Sort(us)
	pct := func(q float64) float64 {
		if len(us) == 0 {
			return 0
		}
		return float64(us[min(len(us)-1, int(q*float64(len(us))))]) / 1000
	}
	return percentiles{P50ms: pct(0.50), P95ms: pct(0.95), P99ms: pct(0.99), Maxms: pct(1), N: len(us)}
}
