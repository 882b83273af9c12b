package sinks

import (
	"context"
	"database/sql"

	"github.com/readside/readside/projections"
)

// BatchDB is the pool batches are applied through (nil when they go one
// statement per round trip), for tests.
func (s *MySQL) BatchDB() *sql.DB { return s.pipe }

// PretendMySQL makes every shard of s answer as a MySQL server would
// (a test cannot start one here) for the checks that depend on it.
func (s *Sharded) PretendMySQL() {
	for _, sh := range s.Shards {
		sh.mariadb = false
	}
}

// ReadsEveryKey reports whether p's batches on s read every contribution's
// key, First ones included (aggregate_guess.go), for tests.
func (s *MySQL) ReadsEveryKey(p *projections.Projection) bool { return s.guessFor(p).wrong.Load() }

// SetMaxDeferredGroups sets how many summed group deltas a consistent
// commit keeps before writing them, and returns the one before, for tests.
func SetMaxDeferredGroups(n int) (was int) {
	was, maxDeferredGroups = maxDeferredGroups, n
	return was
}

// SetMaxPendingContributions sets how many contributions a consistent
// commit holds per projection before writing them, and returns the one
// before, for tests.
func SetMaxPendingContributions(n int) (was int) {
	was, maxPendingContributions = maxPendingContributions, n
	return was
}

// KeyMatchText is the text of a key match of rows keys of p's tables as
// its statements render it (keyIn), the sink's columns learned first,
// for tests.
func (s *MySQL) KeyMatchText(ctx context.Context, p *projections.Projection, head string, cols []string, rows int) (string, error) {
	if err := s.learnSinkColumns(ctx, p); err != nil {
		return "", err
	}
	m := keyIn(p, head, cols, "")
	return m.text(rows), nil
}

// SetMaxDeferredLinks sets how many arrays a consistent commit notes per
// children entry before refreshing them, and returns the one before, for
// tests.
func SetMaxDeferredLinks(n int) (was int) {
	was, maxDeferredLinks = maxDeferredLinks, n
	return was
}

// SetAfterFloorRead sets a function every batch runs once it has read its
// truncation floor, before it writes its rows (nil: none), for tests.
func SetAfterFloorRead(f func()) { afterFloorRead = f }

// OwnerMark is the SQL expression naming a sink's frontier owner mark
// (frontier_owner.go), for tests.
const OwnerMark = ownerMark
