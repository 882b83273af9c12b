package sinks

// Guessing first contributions (docs/design/aggregates.md, "Contributions
// of inserted rows"): most contributions of an insert-heavy source come
// from rows the sink has never held, and reading their keys FOR UPDATE
// finds nothing. A contribution from an insert event (Contribution.First)
// is therefore not read: it goes to the plain INSERT of first
// contributions. When the guess is wrong (a duplicate delivery, a replay
// after a crash, a key reused after its delete's tombstone) that INSERT
// fails on the duplicate key, the transaction is rolled back, and the
// projection's batches read every key until a transaction that did
// commits without finding any First contribution stored. Until that
// commit nothing clears the projection's mark, so the batch that failed,
// or in a consistent commit the whole cut it was part of, is applied
// again reading every key: a wrong guess costs one rolled-back attempt,
// never an endless retry.

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/readside/readside/projections"
)

// firstGuess is a projection's choice on one sink: wrong set, its batches
// read every key.
type firstGuess struct{ wrong atomic.Bool }

// guessFor is p's firstGuess on s.
func (s *MySQL) guessFor(p *projections.Projection) *firstGuess {
	if g, ok := s.guesses.Load(p.Name); ok {
		return g.(*firstGuess)
	}
	g, _ := s.guesses.LoadOrStore(p.Name, &firstGuess{})
	return g.(*firstGuess)
}

// guessOutcome is what one transaction's batches of a projection did
// with the guess.
type guessOutcome struct {
	// readAll: the batches read every key (the guess was wrong when they
	// began).
	readAll bool
	// guessed: they inserted First contributions without reading them.
	guessed bool
	// firstStored: they read every key and found a First one stored.
	firstStored bool
}

// merge adds the outcome of one more batch of the same transaction.
func (o guessOutcome) merge(n guessOutcome) guessOutcome {
	return guessOutcome{readAll: o.readAll && n.readAll, guessed: o.guessed || n.guessed, firstStored: o.firstStored || n.firstStored}
}

// settle records on g how the transaction of outcome o ended (err nil:
// committed). A duplicate key after a guess marks the guess wrong; only a
// commit that read every key and found no First contribution stored
// clears the mark.
func (g *firstGuess) settle(o guessOutcome, err error) {
	switch {
	case err != nil:
		if o.guessed && isDuplicateKey(err) {
			g.wrong.Store(true)
		}
	case o.readAll && !o.firstStored:
		g.wrong.Store(false)
	}
}

// unreadFirst reports whether a's batch inserts c without reading it.
func (a *applier) unreadFirst(c projections.Contribution) bool {
	return c.First && !a.guess.readAll
}

// readEveryKeyAfterTruncation: a truncated table's keys come back as
// inserts (ids counted from 1 again), and each one's withdrawn
// contribution is still stored, so the guess would be wrong for them —
// a rolled-back attempt of the batch, or of a consistent commit of
// millions of rows. The batch and the projection's later ones (the later
// chunks of the same commit too) read every key instead, until a commit
// finds no First contribution stored.
func (a *applier) readEveryKeyAfterTruncation() {
	a.guess.readAll = true
	if a.guessMark != nil {
		a.guessMark.wrong.Store(true)
	}
}

// noteStoredFirst records, for a batch that read every key, whether a
// First contribution was stored after all.
func (a *applier) noteStoredFirst(kept []projections.Contribution, stored map[string]storedContribution) {
	if !a.guess.readAll {
		return
	}
	for _, c := range kept {
		if _, ok := stored[c.SourceKey]; ok && c.First {
			a.guess.firstStored = true
			return
		}
	}
}

// readAll is the outcome a transaction of p starts from: every key read
// while p's guess is wrong, or when ctx is a batch's attempt after its own
// wrong guess (retryReadingEveryKey).
func (s *MySQL) readAll(ctx context.Context, p *projections.Projection) guessOutcome {
	return guessOutcome{readAll: s.guessFor(p).wrong.Load() || ctx.Value(readEveryKey{}) != nil}
}

// wrongGuess is the duplicate key of a first contribution a batch wrote
// unread (it comes wrapped in contention, so the batch is retried).
type wrongGuess struct{ err error }

func (w wrongGuess) Error() string { return w.err.Error() }
func (w wrongGuess) Unwrap() error { return w.err }

// readEveryKey marks the context of a batch's attempts after its own
// wrong guess.
type readEveryKey struct{}

// retryReadingEveryKey is ctx for the next attempt of a batch that failed
// with err: after its own wrong guess it reads every key whatever the
// projection's mark says by then. Several batches of one projection run
// at once in row mode (one per partition), and another one's commit that
// read every key and found no insert's key stored clears the mark; were
// the failed batch to guess again, it could fail and be retried without
// end while the others keep clearing it.
func retryReadingEveryKey(ctx context.Context, err error) context.Context {
	if errors.As(err, new(wrongGuess)) {
		return context.WithValue(ctx, readEveryKey{}, true)
	}
	return ctx
}
