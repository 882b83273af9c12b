package sinks

// The sink side of a rebuild and a backfill (package rebuild): the shadow
// table's operations on every shard, the phase kept in _readside_rebuilds
// so a rerun resumes, and forgetting a finished shadow's or backfill's
// identity. The design is in docs/design/replay.md, "Replay and rebuild".

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// Rebuilder is what a rebuild or a backfill does to a sharded sink besides
// applying batches (which Sharded does for it as for a live projector).
type Rebuilder struct{ s *Sharded }

// NewRebuilder is the rebuild side of s. It does no I/O.
func NewRebuilder(s *Sharded) *Rebuilder { return &Rebuilder{s: s} }

// ShardOffsets are p's stored offsets on each shard, in shard order.
func (r *Rebuilder) ShardOffsets(ctx context.Context, p *projections.Projection) ([]event.Offsets, error) {
	out := make([]event.Offsets, len(r.s.Shards))
	for i, sh := range r.s.Shards {
		o, err := sh.Offsets(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		out[i] = o
	}
	return out, nil
}

// Exists reports, per shard in shard order, whether table exists in the
// shard's database (tableExists: the server's own name rule).
func (r *Rebuilder) Exists(ctx context.Context, table string) ([]bool, error) {
	out := make([]bool, len(r.s.Shards))
	for i, sh := range r.s.Shards {
		ok, err := sh.tableExists(ctx, table)
		if err != nil {
			return nil, err
		}
		out[i] = ok
	}
	return out, nil
}

// Create creates p's read table (DDL) with types on every shard.
func (r *Rebuilder) Create(ctx context.Context, p *projections.Projection, types projections.Types) error {
	return r.s.Exec(ctx, DDL(p, types))
}

// Swap renames live to old and shadow to live on shard i in one RENAME
// TABLE, together with the state tables that belong to each read table
// (StateTables): readers see the old table or the new one, never neither,
// and the projector that writes the live name after the swap finds the
// contributions and child state the new table was built from.
func (r *Rebuilder) Swap(ctx context.Context, i int, p *projections.Projection, live, shadow, old string) error {
	sh := r.s.Shards[i]
	pairs := []string{q(live) + " TO " + q(old), q(shadow) + " TO " + q(live)}
	liveState, shadowState, oldState := StateTables(p, live), StateTables(p, shadow), StateTables(p, old)
	for k := range liveState {
		// A live state table is missing when the declaration gained it
		// and no projector has run it yet: the shadow's comes in alone.
		var n int
		if err := sh.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", liveState[k]).Scan(&n); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		if n > 0 {
			pairs = append(pairs, q(liveState[k])+" TO "+q(oldState[k]))
		}
		pairs = append(pairs, q(shadowState[k])+" TO "+q(liveState[k]))
	}
	stmt := "RENAME TABLE " + strings.Join(pairs, ", ")
	if _, err := sh.db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("shard %s: %s: %w", sh.Range.Text, stmt, err)
	}
	return nil
}

// Drop drops table and the state tables that belong to it as p's read
// table (StateTables) on every shard, where they exist.
func (r *Rebuilder) Drop(ctx context.Context, p *projections.Projection, table string) error {
	stmts := []string{"DROP TABLE IF EXISTS " + q(table)}
	for _, st := range StateTables(p, table) {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+q(st))
	}
	return r.s.Exec(ctx, stmts)
}

// Forget removes everything readside keeps for projection p on every
// shard: its offsets, tombstones, truncation floors (and group lock row),
// replay requests and join state and pending tables. A finished rebuild forgets its shadow projection.
// The state tables named after the read table (StateTables) are not
// p's identity but its table's: they go with the table (Swap, Drop).
func (r *Rebuilder) Forget(ctx context.Context, p *projections.Projection) error {
	stmts := []string{}
	for _, j := range p.Joins {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+q(j.StateTable(p)), "DROP TABLE IF EXISTS "+q(j.PendingTable(p)))
	}
	for _, sh := range r.s.Shards {
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
		// The floors of its joins' parents and its children's tables, and
		// the row an aggregate with joined groups locks.
		if _, err := sh.db.ExecContext(ctx, "DELETE FROM `_readside_truncations` WHERE projection IN (?, ?) OR projection LIKE ? ESCAPE '!' OR projection LIKE ? ESCAPE '!'",
			p.Name, joinedLockName(p), sqlquote.LikePrefix(p.Name+"#join"), sqlquote.LikePrefix(p.Name+"#child_")); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return nil
}

// Phase is the recorded phase of the rebuild or backfill name ("" when
// none), kept on the first shard.
func (r *Rebuilder) Phase(ctx context.Context, name string) (string, error) {
	var phase string
	err := r.s.Shards[0].db.QueryRowContext(ctx, "SELECT phase FROM `_readside_rebuilds` WHERE projection = ?", name).Scan(&phase)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return phase, err
}

// SetPhase records name's phase on the first shard ("" removes it).
func (r *Rebuilder) SetPhase(ctx context.Context, name, phase string) error {
	var err error
	if phase == "" {
		_, err = r.s.Shards[0].db.ExecContext(ctx, "DELETE FROM `_readside_rebuilds` WHERE projection = ?", name)
	} else {
		_, err = r.s.Shards[0].db.ExecContext(ctx, "INSERT INTO `_readside_rebuilds` (projection, phase) VALUES (?, ?) ON DUPLICATE KEY UPDATE phase = VALUES(phase)", name, phase)
	}
	return err
}
