package sinks

// Offset resets (`readside replay --from`): the replay requests an operator
// records and a projector takes; the design is in docs/design/replay.md,
// "Replay and rebuild".

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
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
func (s *Sharded) RequestReplay(ctx context.Context, p *projections.Projection, offs event.Offsets) (replaced event.Offsets, err error) {
	replaced = event.Offsets{}
	for _, sh := range s.Shards {
		err := inTx(ctx, sh.db, func(tx *sql.Tx) error {
			if err := removeReplays(ctx, tx, p, replaced); err != nil {
				return err
			}
			for topic, parts := range offs {
				for part, next := range parts {
					if _, err := tx.ExecContext(ctx, "INSERT INTO `_readside_replay_requests` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?)", p.OffsetsName(), topic, part, next); err != nil {
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
func (s *Sharded) CancelReplays(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	removed := event.Offsets{}
	for _, sh := range s.Shards {
		if err := inTx(ctx, sh.db, func(tx *sql.Tx) error { return removeReplays(ctx, tx, p, removed) }); err != nil {
			return nil, fmt.Errorf("shard %s: cancelling replay requests: %w", sh.Range.Text, err)
		}
	}
	return removed, nil
}

// removeReplays deletes p's requests in tx, adding them to removed.
func removeReplays(ctx context.Context, tx *sql.Tx, p *projections.Projection, removed event.Offsets) error {
	pending, err := readReplays(ctx, tx, p, "FOR UPDATE")
	if err != nil {
		return err
	}
	for topic, parts := range pending {
		for part, next := range parts {
			removed.Set(topic, part, next)
		}
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM `_readside_replay_requests` WHERE projection = ?", p.OffsetsName())
	return err
}

// replayQuerier is what readReplays reads through: a shard's pool, or a
// transaction when the rows must stay locked until it ends.
type replayQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readReplays reads p's pending replay requests; lock is "" or a locking
// clause ("FOR UPDATE") for a read inside a transaction.
func readReplays(ctx context.Context, q replayQuerier, p *projections.Projection, lock string) (event.Offsets, error) {
	rows, err := q.QueryContext(ctx, "SELECT topic, part, next_offset FROM `_readside_replay_requests` WHERE projection = ? "+lock, p.OffsetsName())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := event.Offsets{}
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
func (s *Sharded) PendingReplays(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	if s.routed {
		// Asked between polls, idle or not: a projector whose source is
		// quiet learns of a reshard's cutover here, not at its next
		// batch, so a replay requested on the new sink right after the
		// reshard finds it there. Retried like the requests below: a
		// sink briefly away stalls the check, it does not stop the
		// projection.
		var routes []keyspace.Routing
		err := retrying(ctx, func() (err error) {
			routes, err = s.Routing(ctx, p.Name)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, r := range routes {
			if r.Generation != s.generation {
				return nil, &keyspace.RoutingChanged{Projection: p.Name, Want: s.generation, Have: r.Generation}
			}
		}
	}
	out := event.Offsets{}
	for _, sh := range s.Shards {
		var pending event.Offsets
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
func (s *Sharded) TakeReplays(ctx context.Context, p *projections.Projection, assigned map[string][]int32) (event.Offsets, error) {
	taken := event.Offsets{}
	for _, sh := range s.Shards {
		take := func(tx *sql.Tx) error {
			pending, err := readReplays(ctx, tx, p, "FOR UPDATE")
			if err != nil {
				return err
			}
			mine := event.Offsets{}
			for topic, parts := range pending {
				for part, next := range parts {
					if slices.Contains(assigned[topic], part) {
						mine.Set(topic, part, next)
					}
				}
			}
			for topic, parts := range mine {
				for part, next := range parts {
					if _, err := tx.ExecContext(ctx, "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE next_offset = VALUES(next_offset)", p.OffsetsName(), topic, part, next); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, "DELETE FROM `_readside_replay_requests` WHERE projection = ? AND topic = ? AND part = ?", p.OffsetsName(), topic, part); err != nil {
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
