package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

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
