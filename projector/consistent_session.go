package projector

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// topicPart names a partition.
type topicPart struct {
	topic string
	part  int32
}

// cutAt is a tailer checkpoint read as a cut, with its offset in the
// checkpoint topic (which orders cuts).
type cutAt struct {
	offset int64
	cut    event.Cut
}

// applySession is what an Applier knows between commits of one session.
type applySession struct {
	a *Applier
	// from is each shard's frontier (checkpoint offset); applied is the
	// lowest shard's, next where its partitions resume.
	from    []int64
	applied projections.Frontier
	next    event.Offsets
	// cuts are the cuts read past the lowest frontier, oldest first.
	cuts []cutAt
	// parts are the partitions read; pos the offset after the last record
	// (commit markers included) read from each.
	parts []topicPart
	pos   map[topicPart]int64
	// pending are records read past the cut being applied, in order,
	// for the next commit; paused the partitions they came from, not
	// fetched until then.
	pending map[topicPart][]*kgo.Record
	paused  map[string][]int32
	// warned is when a recent checkpoint without a cut was last reported.
	warned time.Time
	// covered: every shard's frontier records the projections applied
	// (read at the start, or written by a commit of this session).
	covered bool
	// lastCommit is when the session last committed (zero: not yet).
	lastCommit time.Time
}

func newApplySession(a *Applier, fronts []projections.Frontier) *applySession {
	s := &applySession{a: a, pos: map[topicPart]int64{}, pending: map[topicPart][]*kgo.Record{}, paused: map[string][]int32{}}
	low := 0
	for i, f := range fronts {
		s.from = append(s.from, f.Checkpoint)
		if f.Checkpoint < fronts[low].Checkpoint {
			low = i
		}
	}
	s.applied = fronts[low]
	s.covered = true
	for _, f := range fronts {
		s.covered = s.covered && slices.Equal(f.Projections, a.names)
	}
	s.next = fronts[low].Next
	if s.next == nil {
		s.next = event.Offsets{}
	}
	return s
}

// lowest is the lowest shard's frontier: cuts after it are read.
func (s *applySession) lowest() int64 { return slices.Min(s.from) }

// committed moves the session to f, which every shard now is at or past.
func (s *applySession) committed(f projections.Frontier) {
	s.lastCommit = time.Now()
	for i := range s.from {
		s.from[i] = max(s.from[i], f.Checkpoint)
	}
	s.applied, s.next = f, f.Next
	n := 0
	for n < len(s.cuts) && s.cuts[n].offset <= f.Checkpoint {
		n++
	}
	s.cuts = s.cuts[n:]
}

// nextTarget is the cut the next commit goes to: the newest cut read
// whose records past the frontier stay within CommitRecords, and at least
// the first one (a cut is never split). It waits for one when none is
// past the frontier, after idle (the last commit landing: a failure is
// not left unseen while the source is quiet).
func (s *applySession) nextTarget(ctx context.Context, feed *cutFeed, idle func() error) (cutAt, error) {
	for {
		// Take what has arrived, so a commit reaches the newest cut there
		// is.
		if err := s.read(feed.take(maxHeldCuts - len(s.cuts))); err != nil {
			return cutAt{}, err
		}
		if c, ok := s.due(); ok {
			return c, nil
		}
		if err := idle(); err != nil {
			return cutAt{}, err
		}
		if err := s.waitCut(ctx, feed); err != nil {
			return cutAt{}, err
		}
	}
}

// waitCut waits for the feed to bring cuts or, when the session holds
// only cuts of source transactions the sink's projections do not read,
// for the rest of the interval after which those move the frontier.
func (s *applySession) waitCut(ctx context.Context, feed *cutFeed) error {
	var later <-chan time.Time
	if len(s.cuts) > 0 {
		t := time.NewTimer(time.Until(s.lastCommit.Add(frontierOnlyEvery)))
		defer t.Stop()
		later = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-feed.ready:
	case <-later:
	}
	return nil
}

// frontierOnlyEvery is how often at most a commit moves the frontier over
// source transactions that bring the sink's projections no record. Each
// commit is itself a source transaction when the sink's database is on
// the source server: committed at once, every frontier write would make
// the next cut, a loop of commits as fast as the sink takes them (about
// 80 a second on a test server, each a binlog event).
const frontierOnlyEvery = time.Second

// due is the cut the next commit goes to, if one is due: one that brings
// records, or one that only moves the frontier once frontierOnlyEvery
// passed since the last commit.
func (s *applySession) due() (cutAt, bool) {
	if len(s.cuts) == 0 {
		return cutAt{}, false
	}
	c := s.pick()
	if s.records(c) > 0 || time.Since(s.lastCommit) >= frontierOnlyEvery {
		return c, true
	}
	return cutAt{}, false
}

// read keeps the tailer's cuts past the frontier.
func (s *applySession) read(fed []fedCut) error {
	for _, fc := range fed {
		if fc.offset <= s.lowest() {
			continue
		}
		if fc.err != nil {
			return fmt.Errorf("the checkpoint at offset %d of %s: %w", fc.offset, fc.topic, fc.err)
		}
		c := fc.cut
		if c.Published == nil {
			// Checkpoints written before the tailer wrote cuts are passed
			// over; a tailer that goes on writing none is worth a warning.
			if time.Since(c.WrittenAt) < time.Minute && time.Since(s.warned) > time.Minute {
				s.a.log.Warn("the tailer writes checkpoints without a cut (published offsets), so no commit can end at them: the tailer's config must name this sink with consistency: transaction; restart the tailer with it",
					"tailer", s.a.o.TailerID, "offset", fc.offset)
				s.warned = time.Now()
			}
			continue
		}
		s.cuts = append(s.cuts, cutAt{offset: fc.offset, cut: c})
	}
	return nil
}

// pick is the newest cut within CommitRecords of the frontier (the first
// one whatever its size).
func (s *applySession) pick() cutAt {
	best := s.cuts[0]
	for _, c := range s.cuts[1:] {
		if s.records(c) > s.a.o.CommitRecords {
			break
		}
		best = c
	}
	return best
}

// records is about how many records lie between the frontier and c.
func (s *applySession) records(c cutAt) int64 {
	var n int64
	for t, parts := range c.cut.Published {
		if len(s.a.reads[t]) == 0 {
			continue
		}
		for p, off := range parts {
			n += max(0, off-s.next[t][p])
		}
	}
	return n
}

// admission is what read does with a fetched record.
type admission int

const (
	admitSkip admission = iota // a commit marker: it only moves the position
	admitTake                  // below the cut: into this commit
	admitHold                  // past the cut (or behind a held one): kept for a later commit
)

// admit moves the partition's position past r and decides whether it
// belongs to the commit to the cut below gives: only records below the
// cut do, and once one record of a partition is held every later one is,
// so each partition is applied in order and a commit never takes a record
// of a transaction past its cut.
func (s *applySession) admit(r *kgo.Record, below func(topicPart) int64) admission {
	k := topicPart{r.Topic, r.Partition}
	s.pos[k] = max(s.pos[k], r.Offset+1)
	switch {
	case r.Attrs.IsControl():
		return admitSkip
	case r.Offset < below(k) && len(s.pending[k]) == 0:
		return admitTake
	}
	s.pending[k] = append(s.pending[k], r)
	return admitHold
}

// release hands take the held records below the cut below gives, each
// partition's in order, and returns the partitions that still hold some
// (they stay paused).
func (s *applySession) release(below func(topicPart) int64, take func(*kgo.Record) error) (still []topicPart, err error) {
	for _, k := range slices.SortedFunc(maps.Keys(s.pending), func(a, b topicPart) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.part, b.part))
	}) {
		q := s.pending[k]
		n := 0
		for n < len(q) && q[n].Offset < below(k) {
			if err := take(q[n]); err != nil {
				return nil, err
			}
			n++
		}
		s.pending[k] = q[n:]
		if len(s.pending[k]) > 0 {
			still = append(still, k)
		} else {
			delete(s.pending, k)
		}
	}
	return still, nil
}

// addPart makes k one of the partitions read, from the frontier's next
// offset (its start when the frontier has none), into assign.
func (s *applySession) addPart(assign map[string]map[int32]kgo.Offset, k topicPart) {
	if assign[k.topic] == nil {
		assign[k.topic] = map[int32]kgo.Offset{}
	}
	if next, ok := s.next[k.topic][k.part]; ok {
		assign[k.topic][k.part] = kgo.NewOffset().At(next)
		s.pos[k] = next
	} else {
		assign[k.topic][k.part] = kgo.NewOffset().AtStart()
	}
	s.parts = append(s.parts, k)
}

// cover adds to the partitions read every partition of the sink's topics
// that the cut names and the session does not read yet: partitions added
// to a topic while the session runs, which the tailer's producer writes
// to once it sees them. A commit to that cut without them would apply
// part of the source transactions whose records they hold, and move the
// frontier past records it never read.
func (s *applySession) cover(data *kgo.Client, cut event.Offsets) {
	added := map[string]map[int32]kgo.Offset{}
	for _, t := range s.a.topics {
		for p := range cut[t] {
			if k := (topicPart{t, p}); !slices.Contains(s.parts, k) {
				s.addPart(added, k)
				s.a.log.Info("reading a partition added to a topic of the sink", "topic", t, "partition", p)
			}
		}
	}
	if len(added) > 0 {
		data.AddConsumePartitions(added)
	}
}

// reached reports every partition read up to its offset below the cut.
func (s *applySession) reached(below func(topicPart) int64) bool {
	for _, k := range s.parts {
		if s.pos[k] < below(k) {
			return false
		}
	}
	return true
}

// pause stops fetching k until the next commit: what was read of it past
// the cut waits in pending.
func (s *applySession) pause(data *kgo.Client, k topicPart) {
	if slices.Contains(s.paused[k.topic], k.part) {
		return
	}
	s.paused[k.topic] = append(s.paused[k.topic], k.part)
	data.PauseFetchPartitions(map[string][]int32{k.topic: {k.part}})
}

// partitionsOf is how many partitions each existing topic has.
func partitionsOf(ctx context.Context, brokers []string, topics []string) (map[string]int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("reading the partitions of %v: %w", topics, err)
	}
	out := map[string]int{}
	for _, td := range md.Topics {
		if td.Err == nil && len(td.Partitions) > 0 {
			out[td.Topic] = len(td.Partitions)
		}
	}
	return out, nil
}
