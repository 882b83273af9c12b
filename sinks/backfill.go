package sinks

// The sink side of a backfill (`readside replay --backfill`): read columns
// added to a projection filled into the rows already there, from the
// records of the projection's topic. The argument is in
// docs/design/backfill.md, "Backfilling an added column".

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// Backfill is a projections.Sink that sets only some columns of rows that
// already exist, and only on the row whose version is the record's: an
// upsert of version v sets the columns of the read row at its key whose
// _rs_version is v, and nothing else. So it never brings back a deleted
// row (there is none to update), never writes an older record's value
// over a newer one (the versions differ), leaves every other column and
// the version as the live projector wrote them, and applying a record
// twice changes nothing. Deletes, truncations and parent changes are the
// live projector's: they are skipped here. Offsets are stored under the
// consuming projection's name (Projection.Backfill), with the rows.
type Backfill struct {
	sink  *Sharded
	stmt  string // the UPDATE of one row, with placeholders
	cols  []int  // indexes of the filled columns in Projection.Columns
	nkeys int
}

var _ projections.Sink = (*Backfill)(nil)

// NewBackfill makes the backfill of cols (checked by
// Projection.BackfillColumns) into live's read table. It does no I/O.
func NewBackfill(sink *Sharded, live *projections.Projection, cols []string) (*Backfill, error) {
	b := &Backfill{sink: sink, nkeys: len(live.Key)}
	var sets, where []string
	for _, name := range cols {
		i := -1
		for j, c := range live.Columns {
			if c.Name == name {
				i = j
			}
		}
		if i < len(live.Key) {
			return nil, fmt.Errorf("backfill of %s: %s is not a non-key read column of projections.%s", live.Table, name, live.Name)
		}
		b.cols = append(b.cols, i)
		sets = append(sets, q(name)+" = ?")
	}
	if len(sets) == 0 {
		return nil, errors.New("backfill: no columns to fill")
	}
	for _, k := range live.Key {
		where = append(where, q(k)+" = ?")
	}
	b.stmt = BackfillStatement(live.Table, sets, where)
	return b, nil
}

// BackfillStatement is the UPDATE a backfill runs per record: the version
// condition is what makes it safe beside the live projector.
func BackfillStatement(table string, sets, where []string) string {
	return "UPDATE " + q(table) + " SET " + strings.Join(sets, ", ") + " WHERE " + strings.Join(where, " AND ") + " AND `_rs_version` = ?"
}

// Offsets are where the backfill resumes (Sharded.Offsets).
func (b *Backfill) Offsets(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	return b.sink.Offsets(ctx, p)
}

// Apply sets the columns from the batch's upserts, per shard in one
// transaction with the batch's offsets (every shard records them, rows or
// not, so the lowest over the shards moves on), retried as a batch is.
func (b *Backfill) Apply(ctx context.Context, p *projections.Projection, batch *projections.Batch) error {
	parts := make([][]projections.Write, len(b.sink.Shards))
	for _, w := range batch.Writes {
		if w.Kind != projections.Upsert {
			continue
		}
		for _, i := range b.sink.Route(p, w) {
			parts[i] = append(parts[i], w)
		}
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, ws := range parts {
		wg.Go(func() {
			sh := b.sink.Shards[i].MySQL
			part := &projections.Batch{Writes: ws, Offsets: batch.Offsets}
			if err := sh.retried(ctx, p, part, b.apply(sh)); err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", b.sink.Shards[i].Range.Text, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// apply is one shard's transaction of a batch.
func (b *Backfill) apply(s *MySQL) func(context.Context, *projections.Projection, *projections.Batch) error {
	return func(ctx context.Context, p *projections.Projection, batch *projections.Batch) (err error) {
		a, err := s.beginApplier(ctx, p)
		if err != nil {
			return err
		}
		defer a.rollbackOnError(&err)
		args := make([]any, 0, len(b.cols)+b.nkeys+1)
		for i := range batch.Writes {
			w := &batch.Writes[i]
			args = args[:0]
			for _, c := range b.cols {
				args = append(args, &w.Values[c])
			}
			args = appendValues(args, w.Values[:b.nkeys])
			args = append(args, w.Version)
			if err := a.exec(b.stmt, args...); err != nil {
				return fmt.Errorf("backfilling %s: %w", p.Table, err)
			}
		}
		if err := a.offsets(batch.Offsets); err != nil {
			return err
		}
		if err := a.run.commit(ctx); err != nil {
			return fmt.Errorf("backfilling %s: %w", p.Table, err)
		}
		return nil
	}
}

// MissingColumns are the columns of cols that p's read table lacks on
// some shard (the ALTER of `readside plan --apply` has not run there).
func (r *Rebuilder) MissingColumns(ctx context.Context, p *projections.Projection, cols []string) ([]string, error) {
	var missing []string
	for _, sh := range r.s.Shards {
		for _, c := range cols {
			var n int
			if err := sh.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", p.Table, c).Scan(&n); err != nil {
				return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
			}
			if n == 0 && !slices.Contains(missing, c) {
				missing = append(missing, c)
			}
		}
	}
	return missing, nil
}
