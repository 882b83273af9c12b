package sinks

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// apply runs one batch in one transaction, in an order that makes joins
// race-free (docs/design/joins.md, "Joins"):
//
//  1. per join in declaration order: lock, in sorted order, the state
//     row of every parent key the batch touches — from parent changes,
//     from the children it writes, and, for a join that hangs off another
//     (via), the keys the via join's state carries for its keys —
//     creating version-0 placeholders for parents not seen yet; then
//  2. apply the join's parent truncations and parent state changes
//     (version-guarded);
//     then, per children entry, lock the link row of every parent whose
//     array the batch refreshes (children.go);
//  3. apply the read table's own truncation, upserts and deletes
//     (version-guarded, tombstones), an aggregate's contributions, and
//     the child state changes, refreshing those parents' arrays;
//  4. per join, copy the state into every read row of those parent keys
//     whose join version is older (fan-out for parent changes, fill for
//     new or moved children), after clearing the columns of the joins
//     hanging off it in the rows it moves to another key (joinvia.go);
//  5. record the offsets.
//
// A live projector's transaction (generation set) first reads the
// projection's routing generation under a share lock held to commit, and
// fails with RoutingChanged when it is not *generation (routing.go).
//
// A child write and a parent write of the same key in two concurrent
// transactions meet at step 1's row lock, so whichever commits second
// sees the other's rows: a child can never keep a stale parent copy.
func (s *MySQL) apply(ctx context.Context, p *projections.Projection, b *projections.Batch, generation *uint64) (err error) {
	// READ COMMITTED (every sink connection's level, session): each
	// statement reads the latest committed rows, which step 4 relies on
	// after step 1's locks; no gap locks between batches.
	if p.FanOut == projections.FanOutBackground && b.CaughtUp {
		n := s.batchesInFlight(p.Name)
		n.Add(1)
		defer n.Add(-1)
	}
	a, err := s.beginApplier(ctx, p)
	if err != nil {
		return err
	}
	defer a.rollbackOnError(&err)
	defer func() {
		s.guessFor(p).settle(a.guess, err)
		// The one plain INSERT of a batch: its error may come with a later
		// statement or the commit (pipeline).
		if err != nil && a.firstContributions && isDuplicateKey(err) {
			if a.guess.guessed {
				err = wrongGuess{err}
			}
			err = contention{err}
		}
	}()
	if generation != nil {
		if err := a.checkRouting(*generation); err != nil {
			return err
		}
	}
	if err := s.writeBatch(a, b); err != nil {
		return err
	}
	if err := a.offsets(b.Offsets); err != nil {
		return err
	}
	if err := a.watermarks(b.Marks); err != nil {
		return err
	}
	if err := a.run.commit(ctx); err != nil {
		return fmt.Errorf("writing a batch to %s: %w", p.Table, err)
	}
	if a.stale != nil {
		a.stale.Add(a.skipped)
	}
	if a.noted > 0 {
		s.wakeFanOut(p.Name)
	}
	return nil
}

// writeBatch runs steps 1–4 of apply (every write of b but the offsets and
// watermarks) in a's open transaction.
func (s *MySQL) writeBatch(a *applier, b *projections.Batch) (err error) {
	p := a.p
	zero, err := s.enumZeroColumns(a.ctx, p)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.enumZero.Delete(p.Table)
		}
	}()
	a.stale, a.zero, a.shard = b.Stale, zero, b.Shard

	if err := a.lockJoinedGroups(b); err != nil {
		return err
	}
	keys, err := a.joinState(b)
	if err != nil {
		return err
	}
	if p.FanOut == projections.FanOutBackground {
		a.fanOutLater = true
		if err := a.markPending(keys); err != nil {
			return err
		}
	}
	if err := a.lockChildren(b); err != nil {
		return err
	}
	if err := a.readRows(b.Writes); err != nil {
		return err
	}
	if err := a.contributions(b.Contributions); err != nil {
		return err
	}
	if err := a.children(b); err != nil {
		return err
	}
	if joinedAgg(p) {
		return a.regroup(keys)
	}
	return a.fanOuts(keys, a.writtenRows(b.Writes))
}

type applier struct {
	ctx     context.Context
	run     stmts
	p       *projections.Projection
	st      *statements // p's, in the sink's dialect
	stale   *atomic.Int64
	limit   int   // parameter bytes per statement
	zero    []int // enumZeroColumns
	skipped int64 // counted into stale only when the transaction commits
	// shard is the key range of the shard this transaction writes (nil:
	// the only one), where an aggregate's groups are kept (aggregate.go).
	shard *keyspace.Range
	// childLinks are, per children entry, the links lockChildren locked.
	childLinks []childLinks
	// fanOutLater: the parents the batch changes are copied into their
	// rows in the background (fanout_background.go), not in step 4.
	fanOutLater bool
	noted       int // parent keys noted for the background fan-out
	// firstContributions: the batch inserts contributions of source rows
	// it read as never seen (aggregate.go); a duplicate key is contention.
	firstContributions bool
	// guess is what the batch did with the guess that the First
	// contributions are new (aggregate_guess.go); guessMark is the
	// projection's mark on the sink.
	guess     guessOutcome
	guessMark *firstGuess
	// regroupKeys are the source keys of the contributions the batch
	// wrote without their joined group columns; regroupAll: a parent
	// was truncated, every contribution is regrouped (aggregate_joined.go).
	regroupKeys []string
	regroupAll  bool
	// deltas are the group deltas of the batch's contributions, kept for
	// regroup to write with its own when the groups come from joins.
	deltas *deltas
	// deferred, in a consistent commit, sums the group deltas for the
	// commit's end instead of writing them (aggregate_deferred.go).
	deferred *deferredDeltas
	// deferredChildren, in a consistent commit, notes the arrays to
	// refresh at the commit's end instead of refreshing them
	// (children_deferred.go).
	deferredChildren *deferredChildren
}

// exec runs a statement whose result is not read. Its error may come
// later, from the next query or the commit (pipeline).
func (a *applier) exec(query string, args ...any) error {
	return a.run.exec(a.ctx, a.st.comment+query, args)
}

func (a *applier) query(query string, args ...any) (*sql.Rows, error) {
	return a.run.query(a.ctx, a.st.comment+query, args)
}

// readRows applies the read table's own writes.
func (a *applier) readRows(writes []projections.Write) error {
	var truncateAt uint64
	upserts := make([]projections.Write, 0, len(writes))
	var deletes []projections.Write
	for _, w := range writes {
		switch w.Kind {
		case projections.Truncate:
			truncateAt = max(truncateAt, w.Version)
		case projections.Upsert:
			upserts = append(upserts, w)
		case projections.Delete:
			deletes = append(deletes, w)
		}
	}
	if truncateAt > 0 {
		if err := a.exec(a.st.truncation, a.p.Name, truncateAt); err != nil {
			return err
		}
		if err := a.exec(a.st.truncateRows, truncateAt); err != nil {
			return err
		}
	}
	if len(upserts) > 0 {
		var err error
		if upserts, err = a.dropShadowed(upserts); err != nil {
			return err
		}
		if err := a.upsert(upserts); err != nil {
			return err
		}
	}
	return a.delete(deletes)
}
