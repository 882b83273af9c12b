package sinks

// Offset resets (`readside replay`) and the table operations of a rebuild
// (`readside replay --rebuild`); the design is in docs/ARCHITECTURE.md,
// "Replay and rebuild".

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// RequestReplay asks p's projectors to resume the given partitions at the
// given offsets. The request is a row per partition on every shard; the
// projector assigned a partition consumes it (TakeReplays) when it is
// assigned the partition, and leaves and rejoins its group when it sees a
// request for a partition it holds. A request replaces the whole pending
// request of p (partitions it does not name included: a leftover from an
// older request would otherwise reset them later, unasked); replaced is
// what was pending before, on any shard.
func (s *Sharded) RequestReplay(ctx context.Context, p *projections.Projection, offs projections.Offsets) (replaced projections.Offsets, err error) {
	replaced = projections.Offsets{}
	for _, sh := range s.Shards {
		err := inTx(ctx, sh.db, func(tx *sql.Tx) error {
			if err := removeReplays(ctx, tx, p, replaced); err != nil {
				return err
			}
			for topic, parts := range offs {
				for part, next := range parts {
					if _, err := tx.ExecContext(ctx, "INSERT INTO `_readside_replay_requests` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?)", p.Name, topic, part, next); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("shard %s: recording the replay request: %w", sh.Range.Text, err)
		}
	}
	return replaced, nil
}

// CancelReplays removes p's pending replay requests on every shard and
// returns what was pending. A projector that took a partition's request
// already has reset that partition; cancelling does not undo it.
func (s *Sharded) CancelReplays(ctx context.Context, p *projections.Projection) (projections.Offsets, error) {
	removed := projections.Offsets{}
	for _, sh := range s.Shards {
		if err := inTx(ctx, sh.db, func(tx *sql.Tx) error { return removeReplays(ctx, tx, p, removed) }); err != nil {
			return nil, fmt.Errorf("shard %s: cancelling replay requests: %w", sh.Range.Text, err)
		}
	}
	return removed, nil
}

// removeReplays deletes p's requests in tx, adding them to removed.
func removeReplays(ctx context.Context, tx *sql.Tx, p *projections.Projection, removed projections.Offsets) error {
	pending, err := readReplays(ctx, tx, p, "FOR UPDATE")
	if err != nil {
		return err
	}
	for topic, parts := range pending {
		for part, next := range parts {
			removed.Set(topic, part, next)
		}
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM `_readside_replay_requests` WHERE projection = ?", p.Name)
	return err
}

// replayQuerier is what readReplays reads through: a shard's pool, or a
// transaction when the rows must stay locked until it ends.
type replayQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readReplays reads p's pending replay requests; lock is "" or a locking
// clause ("FOR UPDATE") for a read inside a transaction.
func readReplays(ctx context.Context, q replayQuerier, p *projections.Projection, lock string) (projections.Offsets, error) {
	rows, err := q.QueryContext(ctx, "SELECT topic, part, next_offset FROM `_readside_replay_requests` WHERE projection = ? "+lock, p.Name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := projections.Offsets{}
	for rows.Next() {
		var topic string
		var part int32
		var next int64
		if err := rows.Scan(&topic, &part, &next); err != nil {
			return nil, err
		}
		out.Set(topic, part, next)
	}
	return out, rows.Err()
}

// PendingReplays are the partitions of p with a replay request not yet
// consumed on some shard.
func (s *Sharded) PendingReplays(ctx context.Context, p *projections.Projection) (projections.Offsets, error) {
	out := projections.Offsets{}
	for _, sh := range s.Shards {
		var pending projections.Offsets
		err := retrying(ctx, func() (err error) {
			pending, err = readReplays(ctx, sh.db, p, "")
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("shard %s: reading replay requests: %w", sh.Range.Text, err)
		}
		for topic, parts := range pending {
			for part, next := range parts {
				out.Set(topic, part, next)
			}
		}
	}
	return out, nil
}

// TakeReplays consumes the replay requests of the assigned partitions: on
// every shard, in one transaction, the stored offset of each is set to the
// request's (overwriting, not GREATEST: this is the one place an offset
// moves back) and the request is deleted. The caller is the projector
// that was just assigned the partitions, before it fetches: no batch of
// its own is in flight, and the previous owner's last batch committed
// before the partition was revoked, so nothing moves the offset forward
// again past the reset.
func (s *Sharded) TakeReplays(ctx context.Context, p *projections.Projection, assigned map[string][]int32) (projections.Offsets, error) {
	taken := projections.Offsets{}
	for _, sh := range s.Shards {
		take := func(tx *sql.Tx) error {
			pending, err := readReplays(ctx, tx, p, "FOR UPDATE")
			if err != nil {
				return err
			}
			mine := projections.Offsets{}
			for topic, parts := range pending {
				for part, next := range parts {
					if slices.Contains(assigned[topic], part) {
						mine.Set(topic, part, next)
					}
				}
			}
			for topic, parts := range mine {
				for part, next := range parts {
					if _, err := tx.ExecContext(ctx, "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE next_offset = VALUES(next_offset)", p.Name, topic, part, next); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, "DELETE FROM `_readside_replay_requests` WHERE projection = ? AND topic = ? AND part = ?", p.Name, topic, part); err != nil {
						return err
					}
					taken.Set(topic, part, next)
				}
			}
			return nil
		}
		// Retried, the transaction sets the same offsets again: only its
		// commit deletes the requests.
		err := retrying(ctx, func() error { return inTx(ctx, sh.db, take) })
		if err != nil {
			return nil, fmt.Errorf("shard %s: taking replay requests: %w", sh.Range.Text, err)
		}
	}
	return taken, nil
}

// ShardOffsets are p's stored offsets on each shard, in shard order.
func (s *Sharded) ShardOffsets(ctx context.Context, p *projections.Projection) ([]projections.Offsets, error) {
	out := make([]projections.Offsets, len(s.Shards))
	for i, sh := range s.Shards {
		o, err := sh.Offsets(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		out[i] = o
	}
	return out, nil
}

// TableExists reports whether table exists in shard i's database.
func (s *Sharded) TableExists(ctx context.Context, i int, table string) (bool, error) {
	var n int
	err := s.Shards[i].db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&n)
	return n > 0, err
}

// Swap renames live to old and shadow to live in one RENAME TABLE on
// shard i: readers see the old table or the new one, never neither.
func (s *Sharded) Swap(ctx context.Context, i int, live, shadow, old string) error {
	_, err := s.Shards[i].db.ExecContext(ctx, "RENAME TABLE "+q(live)+" TO "+q(old)+", "+q(shadow)+" TO "+q(live))
	return err
}

// DropTable drops table on every shard (when it exists).
func (s *Sharded) DropTable(ctx context.Context, table string) error {
	return s.Exec(ctx, []string{"DROP TABLE IF EXISTS " + q(table)})
}

// Forget removes everything readside keeps for projection p on every
// shard: its offsets, tombstones, truncation floors, replay requests and
// join state tables. A finished rebuild forgets its shadow projection.
func (s *Sharded) Forget(ctx context.Context, p *projections.Projection) error {
	stmts := []string{}
	for _, j := range p.Joins {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+q(j.StateTable(p)))
	}
	for _, sh := range s.Shards {
		if err := sh.Exec(ctx, stmts); err != nil {
			return err
		}
		for _, st := range []string{
			"DELETE FROM `_readside_offsets` WHERE projection = ?",
			"DELETE FROM `_readside_tombstones` WHERE projection = ?",
			"DELETE FROM `_readside_replay_requests` WHERE projection = ?",
		} {
			if _, err := sh.db.ExecContext(ctx, st, p.Name); err != nil {
				return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
			}
		}
		if _, err := sh.db.ExecContext(ctx, "DELETE FROM `_readside_truncations` WHERE projection = ? OR projection LIKE ? ESCAPE '!'", p.Name, sqlquote.LikePrefix(p.Name+"#join")); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return nil
}

// RebuildPhase is the recorded phase of p's rebuild ("" when none).
func (s *Sharded) RebuildPhase(ctx context.Context, p string) (string, error) {
	var phase string
	err := s.Shards[0].db.QueryRowContext(ctx, "SELECT phase FROM `_readside_rebuilds` WHERE projection = ?", p).Scan(&phase)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return phase, err
}

// SetRebuildPhase records p's rebuild phase on the first shard ("" removes it).
func (s *Sharded) SetRebuildPhase(ctx context.Context, p, phase string) error {
	var err error
	if phase == "" {
		_, err = s.Shards[0].db.ExecContext(ctx, "DELETE FROM `_readside_rebuilds` WHERE projection = ?", p)
	} else {
		_, err = s.Shards[0].db.ExecContext(ctx, "INSERT INTO `_readside_rebuilds` (projection, phase) VALUES (?, ?) ON DUPLICATE KEY UPDATE phase = VALUES(phase)", p, phase)
	}
	return err
}

// CountRows counts table's rows over every shard.
func (s *Sharded) CountRows(ctx context.Context, table string) (int64, error) {
	var total int64
	for _, sh := range s.Shards {
		var n int64
		if err := sh.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q(table)).Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func inTx(ctx context.Context, db *sql.DB, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
