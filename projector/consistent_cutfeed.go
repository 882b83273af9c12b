package projector

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
)

// cutFeed reads the tailer's checkpoints in the background, so that the
// newest cut is at hand the moment a commit may start. A franz-go
// consumer fetches a partition again only once what it buffered was
// polled: polled only between commits, the checkpoint topic handed each
// commit the cuts fetched while the commit before it ran — a cut as old
// as that whole commit, one commit of latency added to every change
// (bench/results/history/consistency-issue42.md, s63).
type cutFeed struct {
	tailerID string
	mu       sync.Mutex
	queued   []fedCut
	// ready has a token when cuts were queued since the last take; room
	// when a take made room in a full queue.
	ready, room chan struct{}
	done        chan struct{}
	// behind: the last fetch left checkpoints in the topic past what it
	// returned (its last stable offset beyond the record after the last
	// one fetched and its transaction marker). Until a fetch says so, a
	// feed is taken to be at the end.
	behind bool
}

// drained reports that every checkpoint the topic held at the last fetch
// was taken: no cut due then means the sink is current, not that the
// feed has not read the backlog yet.
func (f *cutFeed) drained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.behind && len(f.queued) == 0
}

// fedCut is one checkpoint of the tailer, decoded (err: it does not
// decode).
type fedCut struct {
	offset int64
	topic  string
	cut    event.Cut
	err    error
}

// maxQueuedCuts bounds the cuts read ahead of the applier (a checkpoint
// names every partition the tailer wrote to, so a cut can be sizable),
// and maxHeldCuts those a session keeps past its frontier: a backlog
// waits in the topic, not in memory.
const (
	maxQueuedCuts = 1024
	maxHeldCuts   = 4096
)

// newCutFeed starts reading the checkpoints of tailerID from cl until ctx
// ends; wait for done before closing cl.
func newCutFeed(ctx context.Context, cl *kgo.Client, tailerID string) *cutFeed {
	f := &cutFeed{tailerID: tailerID, ready: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
	go f.run(ctx, cl)
	return f
}

func (f *cutFeed) run(ctx context.Context, cl *kgo.Client) {
	defer close(f.done)
	for {
		room := f.waitRoom(ctx)
		if room == 0 {
			return
		}
		fetches := cl.PollRecords(ctx, room)
		if ctx.Err() != nil {
			return
		}
		var got []fedCut
		behind := false
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 && p.LastStableOffset-(p.Records[n-1].Offset+1) > 1 {
				behind = true
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != f.tailerID {
				return
			}
			c, err := event.DecodeCut(r.Value)
			got = append(got, fedCut{offset: r.Offset, topic: r.Topic, cut: c, err: err})
		})
		if fetches.NumRecords() > 0 {
			f.mu.Lock()
			f.behind = behind
			f.mu.Unlock()
		}
		if len(got) == 0 {
			if len(fetches.Errors()) > 0 {
				// Not a retriable fetch error (franz-go retries those
				// itself): not polled again at once.
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
			continue
		}
		f.mu.Lock()
		f.queued = append(f.queued, got...)
		f.mu.Unlock()
		signal(f.ready)
	}
}

// waitRoom waits until the queue has room and says for how many cuts
// (0: ctx ended).
func (f *cutFeed) waitRoom(ctx context.Context) int {
	for {
		f.mu.Lock()
		room := maxQueuedCuts - len(f.queued)
		f.mu.Unlock()
		if ctx.Err() != nil {
			return 0
		}
		if room > 0 {
			return room
		}
		select {
		case <-ctx.Done():
			return 0
		case <-f.room:
		}
	}
}

// take removes and returns up to n of the oldest cuts queued.
func (f *cutFeed) take(n int) []fedCut {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = min(n, len(f.queued))
	out := f.queued[:n:n]
	f.queued = f.queued[n:]
	if n > 0 && len(f.queued) > 0 {
		// What stays is still to be taken once the session has room.
		signal(f.ready)
	}
	signal(f.room)
	return out
}

// signal leaves a token in c unless one is there.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
