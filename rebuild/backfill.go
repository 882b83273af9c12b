package rebuild

// readside replay --backfill: read columns added to a projection filled
// into the rows already in its read table, from the topics, while the
// daemon goes on applying live. The design is in docs/design/backfill.md,
// "Backfilling an added column"; the operator's steps in
// docs/operations.md.

import (
	"context"
	"fmt"
	"strings"

	"github.com/readside/readside/projections"
)

// Backfill fills the read columns names into p's existing rows and
// returns them in declaration order: a projector under p's backfill
// identity reads p's topic from where an unfinished backfill of the same
// columns stopped (else from the start) up to the end offsets taken now,
// and sets only those columns, only on rows at the record's version
// (Options.Backfill). What arrives after those offsets is the live
// projector's, which writes every declared column.
func (r *Rebuild) Backfill(ctx context.Context, names []string) ([]string, error) {
	cols, err := r.p.BackfillColumns(names)
	if err != nil {
		return nil, err
	}
	if err := r.checkBackfill(ctx, cols); err != nil {
		return nil, err
	}
	id := r.p.Backfill()
	if err := r.claimBackfill(ctx, id, cols); err != nil {
		return nil, err
	}
	if err := r.warnTrimmed(ctx, id, cols); err != nil {
		return nil, err
	}
	bf, err := r.o.Backfill(r.p, cols)
	if err != nil {
		return nil, err
	}
	ends, err := r.o.Topics.EndOffsets(ctx, id)
	if err != nil {
		return nil, err
	}
	r.o.Log.Info("backfill: filling columns from the topics", "projection", r.p.Name, "columns", strings.Join(cols, ","))
	if err := r.consumeUntil(ctx, id, bf, fixed(ends), 1, "backfilling "+r.p.Table+" ("+strings.Join(cols, ", ")+")"); err != nil {
		return nil, err
	}
	if err := r.sink.Forget(ctx, id); err != nil {
		return nil, err
	}
	if err := r.sink.SetPhase(ctx, id.Name, ""); err != nil {
		return nil, err
	}
	return cols, nil
}

// checkBackfill refuses a backfill while a rebuild of p is unfinished
// (it fills every column) and one into a read table that lacks a column
// on some shard.
func (r *Rebuild) checkBackfill(ctx context.Context, cols []string) error {
	if phase, err := r.sink.Phase(ctx, r.p.Name); err != nil {
		return err
	} else if phase != "" {
		return fmt.Errorf("a rebuild of %s is unfinished (phase %s): it fills every column; finish it with readside replay --projection %s --rebuild instead of a backfill", r.p.Name, phase, r.p.Name)
	}
	missing, err := r.sink.MissingColumns(ctx, r.p, cols)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("read table %s has no column %s on some shard of sink %s: run readside plan --apply (it adds declared columns), restart readside run with this config, then backfill", r.p.Table, strings.Join(missing, ", "), r.p.Sink)
	}
	return nil
}

// claimBackfill records id's tag for cols: a backfill of the same columns
// resumes from its stored offsets, one of other columns is forgotten.
func (r *Rebuild) claimBackfill(ctx context.Context, id *projections.Projection, cols []string) error {
	tag := projections.BackfillTag(cols)
	prev, err := r.sink.Phase(ctx, id.Name)
	if err != nil {
		return err
	}
	switch prev {
	case tag:
		r.o.Log.Info("resuming a backfill from its stored offsets", "projection", r.p.Name, "columns", strings.Join(cols, ","))
	case "":
	default:
		// Its offsets say how far other columns got, not these.
		r.o.Log.Warn("an unfinished backfill of other columns is abandoned: this one starts from the earliest offsets", "projection", r.p.Name)
		if err := r.sink.Forget(ctx, id); err != nil {
			return err
		}
	}
	return r.sink.SetPhase(ctx, id.Name, tag)
}

// warnTrimmed warns, per partition retention trimmed, that rows whose
// newest record was there keep NULL, naming the snapshot that fills them.
func (r *Rebuild) warnTrimmed(ctx context.Context, id *projections.Projection, cols []string) error {
	trimmed, err := r.o.Topics.TrimmedStarts(ctx, id)
	if err != nil {
		return err
	}
	for topic, parts := range trimmed {
		for part, start := range parts {
			fmt.Fprintf(r.o.Progress.Out, "warning: %s partition %d starts at offset %d (retention removed what was before): rows whose newest change was there keep NULL in %s; `readside snapshot --table %s.%s` republishes every row\n", topic, part, start, strings.Join(cols, ", "), r.p.SourceDB, r.p.SourceTbl)
		}
	}
	return nil
}
