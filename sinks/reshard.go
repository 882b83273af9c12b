package sinks

// The sink side of `readside reshard` (package reshard): the reshard's
// state in `_readside_reshards`, the cutover transaction of one server
// (the fence, the merge of the fill's offsets into the projection's, the
// new routing generation) and forgetting a projection on a server it
// left. The design and the argument are in docs/design/resharding.md,
// "Resharding".

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// reshardsDDL creates `_readside_reshards`: one row per projection being
// (or last) resharded, the same on every server of the target sink.
const reshardsDDL = "CREATE TABLE IF NOT EXISTS `_readside_reshards` (projection " + nameCol + " NOT NULL PRIMARY KEY, from_generation BIGINT UNSIGNED NOT NULL, to_sink " + nameCol + " NOT NULL, to_ranges TEXT NOT NULL, phase VARCHAR(20) NOT NULL, progress JSON NOT NULL, started_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))"

// ReshardDDL is the DDL of readside's bookkeeping a reshard needs on a
// server: the tables every sink has, and `_readside_reshards`.
func ReshardDDL() []string { return append(Bookkeeping(), reshardsDDL) }

// ReshardState is a projection's row of `_readside_reshards`.
type ReshardState struct {
	Projection     string
	FromGeneration uint64
	ToSink         string
	ToRanges       string // RangesText
	Phase          string
	Progress       []byte // JSON (package reshard's)
	StartedAt      time.Time
	UpdatedAt      time.Time
}

// Reshard reads projection's reshard row on s (nil: none, or no table).
func (s *MySQL) Reshard(ctx context.Context, projection string) (*ReshardState, error) {
	st := &ReshardState{Projection: projection}
	var started, updated float64
	err := s.db.QueryRowContext(ctx, "SELECT from_generation, to_sink, to_ranges, phase, progress, UNIX_TIMESTAMP(started_at), UNIX_TIMESTAMP(updated_at) FROM `_readside_reshards` WHERE projection = ?", projection).
		Scan(&st.FromGeneration, &st.ToSink, &st.ToRanges, &st.Phase, &st.Progress, &started, &updated)
	var me *driver.MySQLError
	switch {
	case errors.Is(err, sql.ErrNoRows), errors.As(err, &me) && me.Number == 1146:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the reshard of %s: %w", projection, err)
	}
	st.StartedAt = time.UnixMicro(int64(started * 1e6))
	st.UpdatedAt = time.UnixMicro(int64(updated * 1e6))
	return st, nil
}

// SetReshard writes st as projection's reshard row on s.
func (s *MySQL) SetReshard(ctx context.Context, st ReshardState) error {
	d := s.dialect
	_, err := s.db.ExecContext(ctx, "INSERT INTO `_readside_reshards` (projection, from_generation, to_sink, to_ranges, phase, progress) VALUES (?, ?, ?, ?, ?, ?)"+
		d.onDuplicate()+"from_generation = "+d.newRow("from_generation")+", to_sink = "+d.newRow("to_sink")+", to_ranges = "+d.newRow("to_ranges")+
		", phase = "+d.newRow("phase")+", progress = "+d.newRow("progress"),
		st.Projection, st.FromGeneration, st.ToSink, st.ToRanges, st.Phase, string(st.Progress))
	if err != nil {
		return fmt.Errorf("recording the reshard of %s: %w", st.Projection, err)
	}
	return nil
}

// Cutover is one server's cutover transaction (Reshard's phase 3). On a
// server of the sink that serves the projection it holds the fence from
// BeginCutover to Commit: the routing row locked FOR UPDATE, which every
// live apply transaction reads under a share lock first, so applies in
// flight finished before it was granted and new ones wait for it.
type Cutover struct {
	tx         *sql.Tx
	s          *MySQL
	projection string
	// Generation and Sink are the server's routing row when the
	// transaction began (0, "": none).
	Generation uint64
	Sink       string
}

// BeginCutover opens projection's cutover transaction on s with the
// routing row locked FOR UPDATE (created first when missing: generation
// 0). Live applies must already hold share locks on an existing row for
// the lock to wait for them (under READ COMMITTED a read of a missing row
// locks nothing): EnsureRouting creates it well before.
func (s *MySQL) BeginCutover(ctx context.Context, projection string) (*Cutover, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	c := &Cutover{tx: tx, s: s, projection: projection}
	for range 2 {
		err = tx.QueryRowContext(ctx, "SELECT generation, sink FROM `_readside_routing` WHERE projection = ? FOR UPDATE", projection).Scan(&c.Generation, &c.Sink)
		if !errors.Is(err, sql.ErrNoRows) {
			break
		}
		if _, err = tx.ExecContext(ctx, "INSERT IGNORE INTO `_readside_routing` (projection, generation, sink, ranges) VALUES (?, 0, '', '')", projection); err != nil {
			break
		}
	}
	if err != nil {
		_ = tx.Rollback()
		return nil, fmt.Errorf("locking the routing row of %s: %w", projection, err)
	}
	return c, nil
}

// EnsureRouting records, where projection has no routing row on s, that
// sink (with ranges) serves it at generation: from then on every live
// apply share-locks that row, so a cutover's FOR UPDATE waits for the
// applies in flight.
func (s *MySQL) EnsureRouting(ctx context.Context, projection string, generation uint64, sink string, ranges []string) error {
	_, err := s.db.ExecContext(ctx, "INSERT IGNORE INTO `_readside_routing` (projection, generation, sink, ranges) VALUES (?, ?, ?, ?)", projection, generation, sink, keyspace.RangesText(ranges))
	if err != nil {
		return fmt.Errorf("recording the routing of %s: %w", projection, err)
	}
	return nil
}

// Offsets are the projection's offsets on the server, read in the
// transaction (under the fence nothing moves them).
func (c *Cutover) Offsets(ctx context.Context, name string) (event.Offsets, error) {
	return readOffsets(ctx, c.tx, name)
}

// MergeFill makes the fill identity's offsets and watermarks
// (fillName's) the projection's on this server and removes them. served:
// the projection's own live offsets are here too (the server served it):
// then each partition resumes from the lower of the two, and a partition
// only one of them has starts from the beginning; else the fill's are
// taken as they are.
func (c *Cutover) MergeFill(ctx context.Context, fillName string, served bool) error {
	fill, err := c.Offsets(ctx, fillName)
	if err != nil {
		return err
	}
	merged := fill
	if served {
		live, err := c.Offsets(ctx, c.projection)
		if err != nil {
			return err
		}
		merged = live.Min(fill)
		if _, err := c.tx.ExecContext(ctx, "DELETE FROM `_readside_offsets` WHERE projection = ?", c.projection); err != nil {
			return fmt.Errorf("merging offsets of %s: %w", c.projection, err)
		}
	}
	for topic, parts := range merged {
		for part, next := range parts {
			if _, err := c.tx.ExecContext(ctx, "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?)"+c.s.dialect.onDuplicate()+"next_offset = "+c.s.dialect.newRow("next_offset"),
				c.projection, topic, part, next); err != nil {
				return fmt.Errorf("merging offsets of %s: %w", c.projection, err)
			}
		}
	}
	if !served {
		// Where the fill wrote everything, its watermarks are the
		// projection's applied positions.
		if _, err := c.tx.ExecContext(ctx, "REPLACE INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) SELECT ?, topic, part, gtid, version, source_ts FROM `_readside_watermarks` WHERE projection = ?",
			c.projection, fillName); err != nil {
			return fmt.Errorf("taking over the watermarks of %s: %w", fillName, err)
		}
	}
	for _, st := range []string{"DELETE FROM `_readside_offsets` WHERE projection = ?", "DELETE FROM `_readside_watermarks` WHERE projection = ?"} {
		if _, err := c.tx.ExecContext(ctx, st, fillName); err != nil {
			return fmt.Errorf("removing the offsets of %s: %w", fillName, err)
		}
	}
	return nil
}

// Route records the projection's new routing row and commits: from here
// this server says sink (with ranges) serves it at generation, copied to
// every shard (replicated) or split by its shard_by.
func (c *Cutover) Route(ctx context.Context, generation uint64, sink string, ranges []string, replicated bool) error {
	if _, err := c.tx.ExecContext(ctx, "UPDATE `_readside_routing` SET generation = ?, sink = ?, ranges = ?, replicated = ? WHERE projection = ?",
		generation, sink, keyspace.RangesText(ranges), replicated, c.projection); err != nil {
		_ = c.tx.Rollback()
		return fmt.Errorf("recording routing generation %d of %s: %w", generation, c.projection, err)
	}
	if err := c.tx.Commit(); err != nil {
		return fmt.Errorf("committing routing generation %d of %s: %w", generation, c.projection, err)
	}
	return nil
}

// Rollback ends the transaction without a change (and releases the fence).
func (c *Cutover) Rollback() { _ = c.tx.Rollback() }

// ForgetOffsets removes the offsets and watermarks kept under name (a
// fill identity left behind by an interrupted cutover).
func (s *MySQL) ForgetOffsets(ctx context.Context, name string) error {
	for _, st := range []string{"DELETE FROM `_readside_offsets` WHERE projection = ?", "DELETE FROM `_readside_watermarks` WHERE projection = ?"} {
		if _, err := s.db.ExecContext(ctx, st, name); err != nil {
			return fmt.Errorf("removing the offsets of %s: %w", name, err)
		}
	}
	return nil
}

// DropProjection removes p from a server it no longer serves: its read
// table, join state tables and the state tables named after its table,
// and everything kept under its name (Rebuilder.Forget). Its routing row
// stays: it names where p went.
func (s *MySQL) DropProjection(ctx context.Context, p *projections.Projection) error {
	one := &Sharded{Name: "leaving", Shards: []Shard{{MySQL: s}}}
	r := NewRebuilder(one)
	if err := r.Drop(ctx, p, p.Table); err != nil {
		return err
	}
	if err := r.Forget(ctx, p); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, "DELETE FROM `_readside_watermarks` WHERE projection = ?", p.Name)
	return err
}

// SetOffsets makes name's offsets on s exactly offs (a partition offs
// lacks starts from the beginning).
func (s *MySQL) SetOffsets(ctx context.Context, name string, offs event.Offsets) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "DELETE FROM `_readside_offsets` WHERE projection = ?", name); err != nil {
		return fmt.Errorf("setting the offsets of %s: %w", name, err)
	}
	for topic, parts := range offs {
		for part, next := range parts {
			if _, err := tx.ExecContext(ctx, "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?)", name, topic, part, next); err != nil {
				return fmt.Errorf("setting the offsets of %s: %w", name, err)
			}
		}
	}
	return tx.Commit()
}

// TableRows is the server's estimate of table's rows (for progress).
func (s *MySQL) TableRows(ctx context.Context, table string) (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&n)
	return n.Int64, err
}
