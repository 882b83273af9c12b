package main

// readside replay --backfill: read columns added to a projection filled
// into the rows already in its read table, from the topics, while the
// daemon goes on applying live. The design is in docs/ARCHITECTURE.md,
// "Backfilling an added column"; the operator's steps in
// docs/operations.md.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// backfill fills cols into p's existing rows: a projector under p's
// backfill identity reads p's topic from where an unfinished backfill of
// the same columns stopped (else from the start) up to the end offsets
// taken now, and sets only those columns, only on rows at the record's
// version (sinks.Backfill). What arrives after those offsets is the live
// projector's, which writes every declared column.
func (r *rebuilder) backfill(ctx context.Context, names []string, stdout io.Writer) error {
	cols, err := r.p.BackfillColumns(names)
	if err != nil {
		return err
	}
	if phase, err := r.sink.RebuildPhase(ctx, r.p.Name); err != nil {
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
	id := r.p.Backfill()
	tag := projections.BackfillTag(cols)
	prev, err := r.sink.RebuildPhase(ctx, id.Name)
	if err != nil {
		return err
	}
	switch prev {
	case tag:
		r.log.Info("resuming a backfill from its stored offsets", "projection", r.p.Name, "columns", strings.Join(cols, ","))
	case "":
	default:
		// Its offsets say how far other columns got, not these.
		r.log.Warn("an unfinished backfill of other columns is abandoned: this one starts from the earliest offsets", "projection", r.p.Name)
		if err := r.sink.Forget(ctx, id); err != nil {
			return err
		}
	}
	if err := r.sink.SetRebuildPhase(ctx, id.Name, tag); err != nil {
		return err
	}
	trimmed, err := projections.TrimmedStarts(ctx, r.cfg.Kafka.Brokers, id)
	if err != nil {
		return err
	}
	for topic, parts := range trimmed {
		for part, start := range parts {
			fmt.Fprintf(r.out, "warning: %s partition %d starts at offset %d (retention removed what was before): rows whose newest change was there keep NULL in %s; `readside snapshot --table %s.%s` republishes every row\n", topic, part, start, strings.Join(cols, ", "), r.p.SourceDB, r.p.SourceTbl)
		}
	}
	bf, err := sinks.NewBackfill(r.sink, r.p, cols)
	if err != nil {
		return err
	}
	ends, err := projections.EndOffsets(ctx, r.cfg.Kafka.Brokers, id)
	if err != nil {
		return err
	}
	r.log.Info("backfill: filling columns from the topics", "projection", r.p.Name, "columns", strings.Join(cols, ","))
	if err := r.consumeUntil(ctx, id, bf, fixed(ends), 1, "backfilling "+r.p.Table+" ("+strings.Join(cols, ", ")+")"); err != nil {
		return err
	}
	if err := r.sink.Forget(ctx, id); err != nil {
		return err
	}
	if err := r.sink.SetRebuildPhase(ctx, id.Name, ""); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backfilled %s of %s: every row has the value of the record it was written from\n", strings.Join(cols, ", "), r.p.Table)
	return nil
}
