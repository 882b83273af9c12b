package sinks

// Transaction-consistent commits (docs/design/consistent-sinks.md): one
// transaction per shard holds every projection's writes up to a cut of
// the source, applied chunk by chunk, and commits with the frontier row
// that names the cut. The open transaction is where a source transaction
// of any size waits: nothing of it is visible until the commit, and the
// process holds two chunks at a time (one mapped while the other is
// written).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// frontierDDL creates `_readside_frontier`: per transaction-consistent
// sink, the cut its committed read tables are at, and where each
// partition resumes.
const frontierDDL = "CREATE TABLE IF NOT EXISTS `_readside_frontier` (sink " + nameCol + " NOT NULL PRIMARY KEY," +
	" checkpoint_offset BIGINT NOT NULL COMMENT 'readside: offset of the applied cut in the checkpoint topic; -1: none yet'," +
	" flavor VARCHAR(10) NOT NULL DEFAULT '', gtid TEXT NOT NULL, file VARCHAR(255) NOT NULL DEFAULT '', pos BIGINT UNSIGNED NOT NULL DEFAULT 0," +
	" source_ts BIGINT NOT NULL DEFAULT 0 COMMENT 'readside: source commit time (Unix seconds) of the last transaction applied'," +
	" cut_written_at TIMESTAMP(6) NULL, applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)," +
	" transactions BIGINT UNSIGNED NOT NULL DEFAULT 0, loading BOOLEAN NOT NULL DEFAULT FALSE," +
	" commits BIGINT UNSIGNED NOT NULL DEFAULT 0, next_offsets LONGTEXT NOT NULL)"

// frontierProjectionsDDL creates `_readside_frontier_projections`: per
// transaction-consistent sink, the projections its frontier covers
// (projections.Frontier.Projections).
const frontierProjectionsDDL = "CREATE TABLE IF NOT EXISTS `_readside_frontier_projections` (sink " + nameCol + " NOT NULL," +
	" projection " + nameCol + " NOT NULL, PRIMARY KEY (sink, projection))"

// Retryable reports an error a consistent commit is started again for: a
// transient sink failure (as for a batch) or a frontier another applier
// moved.
func Retryable(err error) bool { return retryable(err) || errors.Is(err, projections.ErrFrontierMoved) }

// RetryAtOnce reports a consistent commit that failed on a wrong guess (an
// inserted row's key was stored already: a key reused after its delete, a
// replay): its projection's next attempts read every key, so the commit
// starts again without waiting (aggregate_guess.go).
func RetryAtOnce(err error) bool { return errors.As(err, new(wrongGuess)) }

// Frontier reads the frontier of sink on s (Checkpoint -1 and no offsets
// when it has none).
func (s *MySQL) Frontier(ctx context.Context, sink string) (projections.Frontier, error) {
	return ReadFrontier(ctx, s.db, sink)
}

// ReadFrontier reads the frontier of sink from a sink database (status
// and /wait read it through connections of their own). A database without
// the table has no frontier yet.
func ReadFrontier(ctx context.Context, db *sql.DB, sink string) (projections.Frontier, error) {
	f := projections.Frontier{Checkpoint: -1, Next: event.Offsets{}}
	var next string
	var cutAt sql.NullFloat64
	var appliedAt float64
	// Times as Unix seconds: the sink DSN decides whether the driver
	// parses DATETIMEs, and the session's time_zone how TIMESTAMPs read.
	err := db.QueryRowContext(ctx, "SELECT checkpoint_offset, flavor, gtid, file, pos, source_ts, UNIX_TIMESTAMP(cut_written_at), UNIX_TIMESTAMP(applied_at),"+
		" transactions, loading, commits, next_offsets FROM `_readside_frontier` WHERE sink = ?", sink).Scan(&f.Checkpoint, &f.Flavor, &f.GTID, &f.File, &f.Pos,
		&f.SourceTS, &cutAt, &appliedAt, &f.Transactions, &f.Loading, &f.Commits, &next)
	if errors.Is(err, sql.ErrNoRows) || isNoSuchTable(err) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("reading the frontier of sink %s: %w", sink, err)
	}
	if cutAt.Valid {
		f.CutWrittenAt = unixTime(cutAt.Float64)
	}
	f.AppliedAt = unixTime(appliedAt)
	if err := json.Unmarshal([]byte(next), &f.Next); err != nil {
		return f, fmt.Errorf("the frontier of sink %s holds offsets that do not decode (%v): restore the row or rebuild the sink", sink, err)
	}
	rows, err := db.QueryContext(ctx, "SELECT projection FROM `_readside_frontier_projections` WHERE sink = ?", sink)
	if isNoSuchTable(err) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("reading the projections the frontier of sink %s covers: %w", sink, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return f, err
		}
		f.Projections = append(f.Projections, name)
	}
	// In Go's order, which the applier searches and compares in: a table
	// created with the server's default collation orders by it, where
	// "posts" sorts before "post_x".
	slices.Sort(f.Projections)
	return f, rows.Err()
}

// ShardCommit is one shard's open transaction of a consistent commit.
type ShardCommit struct {
	s    *MySQL
	ctx  context.Context
	run  stmts
	sink string
	// guesses are, per aggregate projection, what its batches did with
	// the guess that First contributions are new (aggregate_guess.go),
	// settled when the transaction ends.
	guesses map[*projections.Projection]guessOutcome
	// deferred are, per aggregate projection, its group deltas summed
	// over the commit's batches, written before the frontier
	// (aggregate_deferred.go); written in the order first applied.
	deferred      map[*projections.Projection]*deferredDeltas
	deferredOrder []*projections.Projection
	// arrays are, per projection with children, the arrays its batches
	// touched, refreshed before the frontier (children_deferred.go), in
	// the order first applied.
	arrays      map[*projections.Projection]*deferredChildren
	arraysOrder []*projections.Projection
}

// BeginCommit opens a transaction on s for sink and locks its frontier
// row, which must still be at checkpoint from: an applier that lost its
// group membership blocks here behind the one that took over, then finds
// the frontier moved (ErrFrontierMoved) and never commits.
func (s *MySQL) BeginCommit(ctx context.Context, sink string, from int64) (*ShardCommit, error) {
	if from < 0 {
		// The first commit: the row the lock below needs.
		if _, err := s.db.ExecContext(ctx, "INSERT IGNORE INTO `_readside_frontier` (sink, checkpoint_offset, gtid, next_offsets) VALUES (?, -1, '', '{}')", sink); err != nil {
			return nil, fmt.Errorf("creating the frontier row of sink %s: %w", sink, err)
		}
	}
	run, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	c := &ShardCommit{s: s, ctx: ctx, run: run, sink: sink}
	at, err := c.lockFrontier()
	if err != nil {
		run.rollback()
		if lockWaitTimeout(err) {
			// Still the lock wait's error, retried: the next attempt takes
			// the row, or waits again if the mark's holder stays.
			if did := s.endFrozenOwner(ctx, sink); did != "" {
				err = fmt.Errorf("%w; %s", err, did)
			}
		}
		return nil, err
	}
	if at != from {
		run.rollback()
		return nil, fmt.Errorf("%w (checkpoint offset %d, expected %d)", projections.ErrFrontierMoved, at, from)
	}
	return c, nil
}

// lockFrontier locks the frontier row and takes the owner mark with it
// (frontier_owner.go). A mark another connection holds while this one
// holds the row is one a commit kept past its end; this commit goes on
// without it.
func (c *ShardCommit) lockFrontier() (int64, error) {
	c.run.endReleasesLocks()
	rows, err := c.run.query(c.ctx, "SELECT checkpoint_offset, GET_LOCK("+ownerMark+", 0) FROM `_readside_frontier` WHERE sink = ? FOR UPDATE", []any{c.sink, c.sink})
	if err != nil {
		return 0, fmt.Errorf("locking the frontier of sink %s: %w", c.sink, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("the frontier row of sink %s is gone", c.sink)
	}
	var at int64
	var marked sql.NullInt64
	if err := rows.Scan(&at, &marked); err != nil {
		return 0, err
	}
	return at, rows.Close()
}

// Apply writes b's rows, state and fan-outs for p into the open
// transaction, and its offsets and watermarks when it carries any.
func (c *ShardCommit) Apply(p *projections.Projection, b *projections.Batch) error {
	a, err := c.applier(p)
	if err != nil {
		return err
	}
	a.guess, a.deferred, a.deferredChildren = c.s.readAll(c.ctx, p), c.deferredFor(p, b.Shard), c.arraysFor(p)
	err = c.s.writeBatch(a, b)
	c.noteGuess(p, a.guess)
	if err == nil {
		err = a.offsets(b.Offsets)
	}
	if err == nil {
		err = a.watermarks(b.Marks)
	}
	if err != nil {
		// An earlier batch's statement may fail here (pipeline).
		return fmt.Errorf("projection %s: %w", p.Name, c.settle(err))
	}
	if a.stale != nil {
		// Counted now, not at the commit: a failed commit starts the whole
		// cut again, which counts them again — a gauge of work, not of rows.
		a.stale.Add(a.skipped)
	}
	return nil
}

// applier writes p's statements into the transaction.
func (c *ShardCommit) applier(p *projections.Projection) (*applier, error) {
	st, err := c.s.statementsFor(c.ctx, p)
	if err != nil {
		return nil, err
	}
	return &applier{ctx: c.ctx, run: c.run, p: p, st: st, limit: c.s.stmtLimit(), guessMark: c.s.guessFor(p)}, nil
}

// deferredFor is p's summed group deltas in the transaction (nil when p
// writes its groups batch by batch).
func (c *ShardCommit) deferredFor(p *projections.Projection, shard *keyspace.Range) *deferredDeltas {
	if !defers(p) {
		return nil
	}
	if c.deferred == nil {
		c.deferred = map[*projections.Projection]*deferredDeltas{}
	}
	d := c.deferred[p]
	if d == nil {
		d = &deferredDeltas{ds: newDeltas(p.Aggregation), shard: shard}
		c.deferred[p] = d
		c.deferredOrder = append(c.deferredOrder, p)
	}
	return d
}

// arraysFor are p's arrays noted in the transaction (nil when p has no
// children).
func (c *ShardCommit) arraysFor(p *projections.Projection) *deferredChildren {
	if len(p.Children) == 0 {
		return nil
	}
	if c.arrays == nil {
		c.arrays = map[*projections.Projection]*deferredChildren{}
	}
	d := c.arrays[p]
	if d == nil {
		d = newDeferredChildren(p)
		c.arrays[p] = d
		c.arraysOrder = append(c.arraysOrder, p)
	}
	return d
}

// refreshArrays refreshes every array the commit's batches noted.
func (c *ShardCommit) refreshArrays() error {
	for _, p := range c.arraysOrder {
		a, err := c.applier(p)
		if err != nil {
			return fmt.Errorf("projection %s: %w", p.Name, err)
		}
		a.deferredChildren = c.arrays[p]
		if err := a.refreshDeferred(); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name, err)
		}
	}
	c.arrays, c.arraysOrder = nil, nil
	return nil
}

// writeDeferred writes every projection's summed group deltas.
func (c *ShardCommit) writeDeferred() error {
	for _, p := range c.deferredOrder {
		d := c.deferred[p]
		a, err := c.applier(p)
		if err != nil {
			return fmt.Errorf("projection %s: %w", p.Name, err)
		}
		a.shard, a.deferred = d.shard, d
		if err := a.writeDeferred(); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name, err)
		}
	}
	c.deferred, c.deferredOrder = nil, nil
	return nil
}

// noteGuess adds a batch's outcome to p's in the transaction.
func (c *ShardCommit) noteGuess(p *projections.Projection, o guessOutcome) {
	if c.guesses == nil {
		c.guesses = map[*projections.Projection]guessOutcome{}
	}
	if prev, ok := c.guesses[p]; ok {
		o = prev.merge(o)
	}
	c.guesses[p] = o
}

// settle records how the transaction ended (err nil: committed) on the
// guesses of its projections, and returns err, as contention when it is
// the duplicate key of a first contribution (the cut is started again).
func (c *ShardCommit) settle(err error) error {
	guessed := false
	for p, o := range c.guesses {
		c.s.guessFor(p).settle(o, err)
		guessed = guessed || o.guessed
	}
	c.guesses = nil
	if err != nil && guessed && isDuplicateKey(err) {
		return contention{wrongGuess{err}}
	}
	return err
}

// Commit records f as the shard's frontier and commits.
func (c *ShardCommit) Commit(f projections.Frontier) error {
	next, err := json.Marshal(f.Next)
	if err != nil {
		return err
	}
	var cutAt any // Unix seconds with microseconds
	if !f.CutWrittenAt.IsZero() {
		cutAt = fmt.Sprintf("%d.%06d", f.CutWrittenAt.Unix(), f.CutWrittenAt.Nanosecond()/1000)
	}
	if err := c.writeDeferred(); err != nil {
		c.run.rollback()
		return c.settle(err)
	}
	if err := c.refreshArrays(); err != nil {
		c.run.rollback()
		return c.settle(err)
	}
	err = c.run.exec(c.ctx, "UPDATE `_readside_frontier` SET checkpoint_offset = ?, flavor = ?, gtid = ?, file = ?, pos = ?, source_ts = ?, cut_written_at = FROM_UNIXTIME(?),"+
		" applied_at = CURRENT_TIMESTAMP(6), transactions = ?, loading = ?, commits = commits + 1, next_offsets = ? WHERE sink = ?",
		[]any{f.Checkpoint, f.Flavor, f.GTID, f.File, f.Pos, f.SourceTS, cutAt, f.Transactions, f.Loading, string(next), c.sink})
	if err != nil {
		c.run.rollback()
		return c.settle(err)
	}
	if f.Projections != nil {
		if err := c.coverProjections(f.Projections); err != nil {
			c.run.rollback()
			return c.settle(err)
		}
	}
	if err := c.run.commit(c.ctx); err != nil {
		c.run.rollback()
		return fmt.Errorf("committing sink %s at checkpoint offset %d: %w", c.sink, f.Checkpoint, c.settle(err))
	}
	return c.settle(nil)
}

// coverProjections records names as the projections the frontier covers,
// in the commit's transaction.
func (c *ShardCommit) coverProjections(names []string) error {
	if err := c.run.exec(c.ctx, "DELETE FROM `_readside_frontier_projections` WHERE sink = ?", []any{c.sink}); err != nil {
		return err
	}
	q := "INSERT INTO `_readside_frontier_projections` (sink, projection) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?), ", len(names)), ", ")
	args := make([]any, 0, 2*len(names))
	for _, n := range names {
		args = append(args, c.sink, n)
	}
	return c.run.exec(c.ctx, q, args)
}

// Rollback ends the transaction without a trace.
func (c *ShardCommit) Rollback() { c.run.rollback() }

// Frontiers reads every shard's frontier of the sink, in shard order.
func (s *Sharded) Frontiers(ctx context.Context) ([]projections.Frontier, error) {
	out := make([]projections.Frontier, len(s.Shards))
	for i, sh := range s.Shards {
		f, err := sh.Frontier(ctx, s.Name)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		out[i] = f
	}
	return out, nil
}

var _ projections.ConsistentSink = (*Sharded)(nil)

// Commit is a consistent commit over the shards of a sink: one open
// transaction per shard that is behind the target cut.
type Commit struct {
	s      *Sharded
	shards []*ShardCommit // nil: the shard is at or past the target already
}

// BeginCommit opens the transactions of a commit to the cut at checkpoint
// offset target. from is each shard's frontier as last read; a shard
// already at or past target takes no part (its frontier never moves back).
func (s *Sharded) BeginCommit(ctx context.Context, from []int64, target int64) (projections.SinkCommit, error) {
	c := &Commit{s: s, shards: make([]*ShardCommit, len(s.Shards))}
	for i, sh := range s.Shards {
		if from[i] >= target {
			continue
		}
		sc, err := sh.BeginCommit(ctx, s.Name, from[i])
		if err != nil {
			c.Rollback()
			return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		c.shards[i] = sc
	}
	return c, nil
}

// Apply routes b's writes to the shards as Apply does and writes each
// part into its shard's transaction.
func (c *Commit) Apply(p *projections.Projection, b *projections.Batch) error {
	parts := c.s.split(p, b)
	for i, part := range parts {
		if c.shards[i] == nil {
			continue
		}
		if err := c.shards[i].Apply(p, part); err != nil {
			return fmt.Errorf("shard %s: %w", c.s.Shards[i].Range.Text, err)
		}
	}
	return nil
}

// Commit commits every shard's transaction with f as its frontier, one
// shard after another: a crash in between leaves shards at different cuts,
// each of them a state the source had (the guarantee is per shard).
func (c *Commit) Commit(f projections.Frontier) error {
	for i, sc := range c.shards {
		if sc == nil {
			continue
		}
		if err := sc.Commit(f); err != nil {
			c.shards[i] = nil
			c.Rollback()
			return fmt.Errorf("shard %s: %w", c.s.Shards[i].Range.Text, err)
		}
		c.shards[i] = nil
	}
	return nil
}

// Rollback rolls back every transaction still open.
func (c *Commit) Rollback() {
	for i, sc := range c.shards {
		if sc != nil {
			sc.Rollback()
			c.shards[i] = nil
		}
	}
}

// isNoSuchTable reports MySQL's "table doesn't exist" (1146).
func isNoSuchTable(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// unixTime is Unix seconds (with a fraction) as a time.
func unixTime(s float64) time.Time {
	sec := int64(s)
	return time.Unix(sec, int64((s-float64(sec))*1e6)*1000).UTC()
}
