package projections

import (
	"context"
	"errors"
	"time"

	"github.com/readside/readside/event"
)

// Frontier is how far a transaction-consistent sink's shard is: its
// committed read tables are what the projections compute from the source
// at the cut (the tailer's checkpoint) recorded here
// (docs/design/consistent-sinks.md).
type Frontier struct {
	// Checkpoint is the offset of the cut's record in the checkpoint
	// topic; -1 before the first commit. It orders cuts: the frontier
	// only ever moves to a higher one.
	Checkpoint int64
	Flavor     string // mysql or mariadb: how GTID reads
	GTID       string // the source's GTID set at the cut
	File       string
	Pos        uint32
	// SourceTS is the source commit time (Unix seconds) of the last source
	// transaction the cut covers.
	SourceTS int64
	// CutWrittenAt is when the tailer wrote the cut (it had read the
	// source up to it then); AppliedAt when the shard committed it.
	CutWrittenAt, AppliedAt time.Time
	// Transactions is the tailer's count of source transactions up to
	// the cut.
	Transactions uint64
	// Loading: the initial snapshot of some table was not complete at the
	// cut, so some read table holds only part of its rows.
	Loading bool
	// Commits counts the shard's commits.
	Commits uint64
	// Next is, per topic and partition, the next offset to consume: every
	// record below it is applied.
	Next event.Offsets
	// Projections are the projections whose read tables the frontier
	// covers, in name order (`_readside_frontier_projections`): a
	// projection of the sink missing there was added after the sink's
	// first commit and holds none of the source before the frontier. Read
	// always; written by a commit only when set (a session's first).
	// Empty at a frontier of a version that did not record them.
	Projections []string
}

// ConsistentSink is a transaction-consistent sink's side of a commit
// (sinks.Sharded): the applier reads the shards' frontiers, opens a commit
// to a cut, applies batches into it and commits it with the frontier.
type ConsistentSink interface {
	// Frontiers are the shards' frontiers, in shard order.
	Frontiers(ctx context.Context) ([]Frontier, error)
	// BeginCommit opens a commit to the cut at checkpoint offset target
	// on every shard whose frontier (from, as last read) is behind it. It
	// fails with an error wrapping ErrFrontierMoved when a shard's
	// frontier is no longer from.
	BeginCommit(ctx context.Context, from []int64, target int64) (SinkCommit, error)
}

// SinkCommit is one open consistent commit. Nothing of it is visible
// before Commit returns nil; after any error the caller rolls it back and
// starts again from the stored frontiers.
type SinkCommit interface {
	// Apply writes a batch of one projection into the open transactions.
	Apply(p *Projection, b *Batch) error
	// Commit records f as every open shard's frontier and commits them,
	// one shard after another.
	Commit(f Frontier) error
	Rollback()
}

// ErrFrontierMoved: a shard's frontier is not where the commit expected
// it: another applier committed meanwhile (this one is a zombie that lost
// its group membership), so the applier starts again from the stored
// frontiers.
var ErrFrontierMoved = errors.New("the frontier moved: another applier committed to this sink")
