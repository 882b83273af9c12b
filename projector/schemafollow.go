package projector

// Following the source's schema. A source DDL that widens a projected
// column (VARCHAR(16) → VARCHAR(200), INT → BIGINT, TEXT → MEDIUMTEXT, a
// new ENUM or SET member, latin1 → utf8mb4) leaves the read column as it
// was created, and the first row that needs the new width is refused by
// the sink. That refusal is the trigger: the projector reads the source's
// current column definitions, has the sink run the ALTERs that keep every
// stored value (the ones `readside plan --apply` runs) on every shard,
// and applies the same batch again in a new transaction — the refused one
// was rolled back, so nothing was applied in between, and with on_error:
// dlq nothing was dead-lettered yet. A change the read table cannot follow
// without losing values stops the projection naming the column and the
// rebuild. docs/design/schema-changes.md, "Schema changes", argues the trigger.
//
// A refusal never comes for a change the server stores rounded: more
// decimals (DECIMAL(10,2) → DECIMAL(12,3)), fractional seconds (DATETIME
// → DATETIME(6)), a DOUBLE for a FLOAT, a fraction for an INT — strict
// mode or not, the read column keeps the rounded value with at most a
// note. So a batch that brings a table shape (event schema) the projector
// has not compared its tables with — a DDL since, or the first batches
// after a start — is compared before it is applied: the ALTERs that keep
// every value run, and a read column that would round the new values
// stops the projection (followShapes).
//
// A source column the projection maps that is gone from the events
// (dropped, renamed, excluded) is no bad row to dead-letter: every later
// row lacks it. It stops the projection naming the config key to change.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// follower serializes a projector's schema following: its partition
// groups are applied concurrently and may be refused together.
type follower struct {
	mu sync.Mutex
	// altered counts follows that ran an ALTER: a group refused before
	// another group's ALTER retries without comparing again.
	altered int
	// seen are the table shapes the projection's tables were compared
	// with (followShapes).
	seen map[*event.Schema]bool
}

// maxShapes bounds the shapes a projector remembers (many tables or
// DDLs: it compares again, which is harmless).
const maxShapes = 1024

// maxFollows bounds how often one batch is applied again after ALTERs;
// each round must have run an ALTER, so this only guards against a sink
// that reports ALTERs it did not make.
const maxFollows = 3

// applyFollowing applies b, following the source's schema when the sink
// refuses a value a widened read column would take.
func (pr *Projector) applyFollowing(ctx context.Context, b *projections.Batch) error {
	sf, ok := pr.sink.(projections.SchemaFollower)
	for round := 0; ; round++ {
		pr.follow.mu.Lock()
		seen := pr.follow.altered
		pr.follow.mu.Unlock()
		err := pr.sink.Apply(ctx, pr.p, b)
		if err == nil || !ok || round == maxFollows || !sf.SchemaRejection(err) || ctx.Err() != nil {
			return err
		}
		retry, ferr := pr.followSchema(ctx, sf, seen, err)
		if ferr != nil {
			return ferr
		}
		if !retry {
			return err
		}
	}
}

// followSchema brings the read table to the source's current column
// definitions after the sink refused a value (cause). retry: ALTERs ran
// since the refused attempt (seen), so applying again may pass.
func (pr *Projector) followSchema(ctx context.Context, sf projections.SchemaFollower, seen int, cause error) (retry bool, err error) {
	pr.follow.mu.Lock()
	defer pr.follow.mu.Unlock()
	if pr.follow.altered != seen {
		return true, nil
	}
	if pr.p.SourceTypes == nil {
		return false, nil
	}
	types, err := pr.p.SourceTypes(ctx)
	if err != nil {
		return false, &projections.StopError{Projection: pr.p.Name,
			Reason: fmt.Errorf("the sink refuses a value (%v) and the source's column definitions, which say how to widen the read table, cannot be read: %w", cause, err),
			Fix:    "give this process read access to the source (source.dsn, SELECT on the projected tables), or run `readside plan --apply` where the source is readable; then restart readside"}
	}
	ran, refused, err := pr.alterToFollow(ctx, sf, types)
	if err != nil {
		return false, err
	}
	if len(ran) > 0 {
		return true, nil
	}
	if len(refused) == 0 {
		// The read table matches the source: the value is bad data, for
		// on_error to deal with.
		return false, nil
	}
	var whys []string
	for _, c := range refused {
		whys = append(whys, fmt.Sprintf("%s: %s (%s)", pr.columnKey(c.Column), c.Why, c.Alter))
	}
	return false, &projections.StopError{Projection: pr.p.Name,
		Reason: fmt.Errorf("the sink refuses a value (%v) and read table %s cannot follow the source's schema without losing values: %s", cause, pr.p.Table, strings.Join(whys, "; ")),
		Fix:    pr.rebuildFix()}
}

// alterToFollow has the sink run the ALTERs that bring the projection's
// tables to types, logging and counting each; pr.follow.mu is held.
func (pr *Projector) alterToFollow(ctx context.Context, sf projections.SchemaFollower, types projections.Types) (ran, refused []projections.SchemaChange, err error) {
	ran, refused, err = sf.FollowSchema(ctx, pr.p, types)
	for _, c := range ran {
		pr.log.Info("read table altered to follow the source's schema", "table", pr.p.Table, "column", c.Column, "why", c.Why, "alter", c.Alter)
		pr.o.Metrics.altered(pr.p)
	}
	if len(ran) > 0 {
		pr.follow.altered++
	}
	if err != nil {
		return ran, refused, fmt.Errorf("altering read table %s to follow the source's schema: %w", pr.p.Table, err)
	}
	return ran, refused, nil
}

// unseenShapes are the table shapes of bs the projector has not compared
// its tables with.
func (pr *Projector) unseenShapes(bs ...*projections.Batch) []*event.Schema {
	pr.follow.mu.Lock()
	defer pr.follow.mu.Unlock()
	var out []*event.Schema
	for _, b := range bs {
		for _, sc := range b.Shapes {
			if !pr.follow.seen[sc] && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	return out
}

// followShapes compares the projection's tables with the source's current
// column definitions because a batch brings shapes not compared yet: it
// runs the ALTERs that keep every value, as after a refusal, and stops
// the projection when a read column would store the source's values
// rounded. SourceTypes also types the projection's expressions and
// aggregates afresh, so the caller builds the batch again.
func (pr *Projector) followShapes(ctx context.Context, shapes []*event.Schema) error {
	pr.follow.mu.Lock()
	defer pr.follow.mu.Unlock()
	seen := func() {
		if pr.follow.seen == nil || len(pr.follow.seen) >= maxShapes {
			pr.follow.seen = map[*event.Schema]bool{}
		}
		for _, sc := range shapes {
			pr.follow.seen[sc] = true
		}
	}
	sf, ok := pr.sink.(projections.SchemaFollower)
	if !ok || pr.p.SourceTypes == nil {
		seen()
		return nil
	}
	types, err := pr.p.SourceTypes(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Refusals still lead to the source's definitions; only a
		// rounding change would go unseen until the next shape.
		pr.log.Warn("the source's column definitions cannot be read to compare the read tables with a new table shape: "+
			"a DDL that adds decimals or fractional seconds to a projected column is not followed until they can",
			"projection", pr.p.Name, "err", err)
		seen()
		return nil
	}
	_, refused, err := pr.alterToFollow(ctx, sf, types)
	if err != nil {
		return err
	}
	var whys []string
	for _, c := range refused {
		if c.Silent {
			whys = append(whys, fmt.Sprintf("%s: %s (%s)", pr.columnKey(c.Column), c.Why, c.Alter))
		}
	}
	if len(whys) > 0 {
		return &projections.StopError{Projection: pr.p.Name,
			Reason: fmt.Errorf("the source's schema changed and read table %s would store some of its values otherwise than the source has them, without an error from the server (rounded, or merged with values the source tells apart), and cannot follow without losing stored values: %s",
				pr.p.Table, strings.Join(whys, "; ")),
			Fix: pr.rebuildFix()}
	}
	seen()
	return nil
}

// rebuildFix is the fix for a read table that cannot follow the source's
// schema.
func (pr *Projector) rebuildFix() string {
	return "fill the read table anew under the source's current schema: " + pr.p.RebuildHow() + " (or change the source column back)"
}

// columnKey is the config key that declares read column col.
func (pr *Projector) columnKey(col string) string { return pr.p.ColumnKey(col) }
