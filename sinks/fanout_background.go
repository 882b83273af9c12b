package sinks

// Fan-out in the background (config `fan_out: background`;
// docs/design/joins.md, "Fan-out in the background"). A batch's
// transaction applies the parents' state and the rows it writes, filled
// from that state, as in_batch does, and instead of copying each changed
// parent into its other rows it notes the parent's key in the join's
// pending table. RunFanOuts then copies the noted parents, a few keys per
// transaction: it locks their state rows exclusively, runs the fan-out
// the batch would have run (detach, fan-out, fills by the root's keys),
// and drops the notes. A note is written and dropped under the parent's
// exclusive state-row lock, so a change the copy has not seen commits
// its note after the copy's drop: nothing is dropped unseen. Notes are
// rows, so a crash loses none; copying a parent twice changes nothing
// (the copies are version-guarded).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// fanOutGap is the least time between the starts of two rounds of
// copies: every change of a parent within it costs one copy.
const fanOutGap = 100 * time.Millisecond

// fanOutIdle is how often RunFanOuts looks for notes no batch of this
// process told it about (another process's, or left by a crash).
const fanOutIdle = time.Second

// idleShare is how long the copies pause after each transaction, as a
// share of its length, while more are waiting and a caught-up batch of
// the projection is being applied (Batch.CaughtUp: readers wait for its
// rows): at 1 they then take at most half of their connection's time and
// leave the rest of the server to the batch. With no such batch in flight
// (idle, or draining a backlog, whose rows are late anyway) they run back
// to back.
const idleShare = 1.0

// pendingRead is how many noted keys of a join one look reads.
const pendingRead = 10_000

// maxKeysPerCopy bounds the keys one copying transaction takes; it starts
// at one and grows while transactions stay short (they hold the rows they
// copy into, which the batches may be waiting for).
const maxKeysPerCopy = 256

// pendingStatements are the statements of one join's pending table.
type pendingStatements struct {
	// mark notes the parent keys a batch changes. IGNORE keeps an older
	// note and its time, which /wait reads as the oldest change not
	// copied yet.
	mark multiRow
	// next reads the first noted keys in key order, up to ? of them.
	next string
	// unmark drops the notes of keys just copied.
	unmark multiRow
}

func pendingStatementsOf(p *projections.Projection, j *projections.Join) pendingStatements {
	t := q(j.PendingTable(p))
	var keys []string
	for _, on := range j.On {
		keys = append(keys, q(stateKey(on.Parent)))
	}
	cols := strings.Join(keys, ", ")
	return pendingStatements{
		mark:   multiRow{head: "INSERT IGNORE INTO " + t + " (" + cols + ") VALUES ", row: "(" + strings.TrimSuffix(strings.Repeat("?, ", len(keys)), ", ") + ")", sep: ", "},
		next:   "SELECT " + cols + " FROM " + t + " ORDER BY " + cols + " LIMIT ?",
		unmark: keyIn(p, "DELETE FROM "+t+" WHERE ", keys, ""),
	}
}

// pendingDDL creates join j's pending table, keyed like its state table
// (keyTypes: the parent key columns' definitions).
func pendingDDL(p *projections.Projection, j *projections.Join, keyTypes map[string]string) string {
	defs, key := stateKeyDefs(j, keyTypes)
	defs = append(defs, "`marked_at` TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) COMMENT 'readside: when the oldest change not copied yet was applied'",
		"PRIMARY KEY ("+strings.Join(key, ", ")+")")
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s", q(j.PendingTable(p)), strings.Join(defs, ",\n  "),
		sqlquote.Literal(fmt.Sprintf("readside background fan-out: %s.%s rows changed and not yet copied into %s", j.ParentDB, j.ParentTbl, p.Table)))
}

// markPending notes, per join, the parent keys the batch changes (under
// their exclusive state-row locks, taken in step 1).
func (a *applier) markPending(keys [][]parentKey) error {
	for i, ks := range keys {
		changed := changedKeys(ks)
		a.noted += len(changed)
		if err := a.execKeys(&a.st.joins[i].pending.mark, changed); err != nil {
			j := a.p.Joins[i]
			return fmt.Errorf("noting the changed %s.%s rows for the background fan-out: %w", j.ParentDB, j.ParentTbl, err)
		}
	}
	return nil
}

// withoutChanges is keys with no key marked changed: what a batch fans
// out over when the fan-out runs in the background.
func withoutChanges(keys [][]parentKey) [][]parentKey {
	out := make([][]parentKey, len(keys))
	for i, ks := range keys {
		out[i] = slices.Clone(ks)
		for k := range out[i] {
			out[i][k].changed = false
		}
	}
	return out
}

// RunFanOuts copies the noted parents of p into their read rows until
// ctx ends (nil then): a round as soon as a batch of this process notes a
// parent, at most every fanOutGap, else every fanOutIdle. It returns the error of a copy
// that cannot succeed (transient ones are retried), which stops the
// projector as a failing batch would.
func (s *MySQL) RunFanOuts(ctx context.Context, p *projections.Projection, observe func(pending int64, oldest time.Duration)) error {
	wake := s.fanOutWake(p.Name)
	idle := time.NewTicker(fanOutIdle)
	defer idle.Stop()
	sizes := make([]int, len(p.Joins))
	var last time.Time
	for {
		if wait := time.Until(last.Add(fanOutGap)); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		last = time.Now()
		// Taken before the notes are read: a batch that notes a parent
		// after the read wakes the next round.
		select {
		case <-wake:
		default:
		}
		if observe != nil {
			n, oldest, err := s.PendingFanOuts(ctx, p)
			if err == nil {
				observe(n, oldest)
			}
		}
		if _, err := s.fanOutPending(ctx, p, sizes, true); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("projection %s: background fan-out: %w", p.Name, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-idle.C:
		}
	}
}

// fanOutWake is the channel a batch of projection that noted a parent
// wakes RunFanOuts with.
func (s *MySQL) fanOutWake(projection string) chan struct{} {
	if c, ok := s.fanOutWakes.Load(projection); ok {
		return c.(chan struct{})
	}
	c, _ := s.fanOutWakes.LoadOrStore(projection, make(chan struct{}, 1))
	return c.(chan struct{})
}

// batchesInFlight counts the caught-up batch transactions of projection
// being applied through s (apply), which the copies pause for.
func (s *MySQL) batchesInFlight(projection string) *atomic.Int32 {
	if c, ok := s.inFlight.Load(projection); ok {
		return c.(*atomic.Int32)
	}
	c, _ := s.inFlight.LoadOrStore(projection, new(atomic.Int32))
	return c.(*atomic.Int32)
}

// wakeFanOut tells RunFanOuts that a committed batch noted parents.
func (s *MySQL) wakeFanOut(projection string) {
	select {
	case s.fanOutWake(projection) <- struct{}{}:
	default:
	}
}

// PendingFanOuts counts the noted parents of p's joins and the age of the
// oldest note.
func (s *MySQL) PendingFanOuts(ctx context.Context, p *projections.Projection) (n int64, oldest time.Duration, err error) {
	for _, j := range p.Joins {
		var c, us int64
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(`marked_at`), NOW(6)), 0) FROM "+q(j.PendingTable(p))).Scan(&c, &us); err != nil {
			return 0, 0, err
		}
		n, oldest = n+c, max(oldest, time.Duration(us)*time.Microsecond)
	}
	return n, oldest, nil
}

// DrainFanOuts copies every noted parent of p now, until none is left.
func (s *MySQL) DrainFanOuts(ctx context.Context, p *projections.Projection) error {
	sizes := make([]int, len(p.Joins))
	for {
		n, err := s.fanOutPending(ctx, p, sizes, false)
		if err != nil || n == 0 {
			return err
		}
	}
}

// fanOutPending copies the noted parents of every join of p, in join
// order, up to pendingRead of each, and returns how many it copied.
// sizes are the keys per transaction of each join, adapted as it goes;
// yield: pause between transactions while batches are applied
// (idleShare).
func (s *MySQL) fanOutPending(ctx context.Context, p *projections.Projection, sizes []int, yield bool) (int, error) {
	copied := 0
	for ji := range p.Joins {
		keys, err := s.pendingKeys(ctx, p, ji)
		if err != nil {
			return copied, err
		}
		for start := 0; start < len(keys); {
			n := min(max(sizes[ji], 1), len(keys)-start)
			group := keys[start : start+n]
			began := time.Now()
			if err := retrying(ctx, func() error { return s.fanOutKeys(ctx, p, ji, group) }); err != nil {
				return copied, err
			}
			took := time.Since(began)
			switch {
			case took < 5*time.Millisecond:
				sizes[ji] = min(2*max(sizes[ji], 1), maxKeysPerCopy)
			case took > 20*time.Millisecond:
				sizes[ji] = max(sizes[ji]/2, 1)
			}
			start += n
			copied += n
			if yield && start < len(keys) && s.batchesInFlight(p.Name).Load() > 0 {
				select {
				case <-ctx.Done():
					return copied, ctx.Err()
				case <-time.After(time.Duration(float64(took) * idleShare)):
				}
			}
		}
	}
	return copied, nil
}

// pendingKeys reads the first noted keys of join ji, in key order.
func (s *MySQL) pendingKeys(ctx context.Context, p *projections.Projection, ji int) ([]parentKey, error) {
	st, err := s.statementsFor(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, st.comment+st.joins[ji].pending.next, pendingRead)
	if err != nil {
		j := p.Joins[ji]
		return nil, fmt.Errorf("reading the %s.%s rows waiting for their fan-out: %w", j.ParentDB, j.ParentTbl, err)
	}
	keys, err := scanKeys(rows, map[string]bool{}, nil)
	for i := range keys {
		keys[i].changed = true
	}
	return keys, err
}

// fanOutKeys copies join ji's parents of keys into their read rows in one
// transaction, as a batch changing them would (step 1's locks, step 4),
// and drops their notes.
func (s *MySQL) fanOutKeys(ctx context.Context, p *projections.Projection, ji int, keys []parentKey) (err error) {
	a, err := s.beginApplier(ctx, p)
	if err != nil {
		return err
	}
	defer a.rollbackOnError(&err)
	all := make([][]parentKey, len(p.Joins))
	all[ji] = keys
	// Locked as a batch locks them, in join order: ji's keys exclusively,
	// then the keys the joins hanging off it read (through their via
	// join's state) shared.
	for i, j := range p.Joins {
		if i > ji && j.Via != nil {
			if via := all[slices.Index(p.Joins, j.Via)]; len(via) > 0 {
				if all[i], err = a.viaKeys(i, via, nil); err != nil {
					return err
				}
			}
		}
		if len(all[i]) > 0 {
			if err := a.lockParents(i, all[i]); err != nil {
				return err
			}
		}
	}
	if err := a.fanOuts(all, nil); err != nil {
		return err
	}
	if err := a.execKeys(&a.st.joins[ji].pending.unmark, keys); err != nil {
		return err
	}
	return a.run.commit(ctx)
}

// RunFanOuts runs every shard's (MySQL.RunFanOuts) until ctx ends or one
// fails.
// observe gets the noted parents summed over the shards and the oldest
// note's age, the largest over them (each shard's as of its last round).
func (s *Sharded) RunFanOuts(ctx context.Context, p *projections.Projection, observe func(pending int64, oldest time.Duration)) error {
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	counts := make([]int64, len(s.Shards))
	ages := make([]time.Duration, len(s.Shards))
	for i, sh := range s.Shards {
		shardObserve := func(n int64, oldest time.Duration) {
			if observe == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			counts[i], ages[i] = n, oldest
			var sum int64
			var most time.Duration
			for k := range counts {
				sum, most = sum+counts[k], max(most, ages[k])
			}
			observe(sum, most)
		}
		g.Go(func() error {
			if err := sh.RunFanOuts(gctx, p, shardObserve); err != nil {
				return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// DrainFanOuts drains every shard (MySQL.DrainFanOuts).
func (s *Sharded) DrainFanOuts(ctx context.Context, p *projections.Projection) error {
	for _, sh := range s.Shards {
		if err := sh.DrainFanOuts(ctx, p); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return nil
}
