package sinks

// The sink's half of following the source's schema (see
// projections/schemafollow.go): which refusals a read table that followed
// the source would not make, and running the drift ALTERs that keep every
// stored value, on every shard.

import (
	"context"
	"errors"
	"fmt"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/projections"
)

var _ projections.SchemaFollower = (*Sharded)(nil)

// SchemaRejection reports whether err is the server refusing a value
// because of its column's type: what a source DDL widening the column
// makes the sink refuse until the read column is widened too.
func SchemaRejection(err error) bool {
	var me *driver.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1406, // data too long: a longer VARCHAR, a larger TEXT/BLOB kind
		1264, // out of range: INT → BIGINT, a wider DECIMAL, signed → unsigned
		1265, // data truncated: a new ENUM or SET member
		1366, // incorrect string value: a character the read column's charset lacks
		1292, // incorrect value: a type change (DATETIME → VARCHAR, …)
		1048: // cannot be null: the source column became nullable
		return true
	}
	return false
}

// SchemaRejection is the package's SchemaRejection.
func (s *Sharded) SchemaRejection(err error) bool { return SchemaRejection(err) }

// FollowSchema runs, on every shard, the safe ALTERs of the drifts of
// columns both the plan and the table have (see Follows), in the read
// table and in each join's state table, which holds the parent's copied
// columns with the same types. A transient sink failure (the sink away:
// a new table shape is compared whenever it arrives, not only after the
// sink answered) is retried with backoff, as a batch is.
func (s *Sharded) FollowSchema(ctx context.Context, p *projections.Projection, types projections.Types) (ran, refused []projections.SchemaChange, err error) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		r, refused, err := s.followOnce(ctx, p, types)
		ran = append(ran, r...)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return ran, refused, err
		}
		if log := s.Shards[0].Log; log != nil {
			log.Warn("comparing the read tables with the source's schema failed; retrying", "projection", p.Name, "attempt", attempt, "in", backoff, "err", err)
		}
		select {
		case <-ctx.Done():
			return ran, nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// followOnce is one attempt of FollowSchema.
func (s *Sharded) followOnce(ctx context.Context, p *projections.Projection, types projections.Types) (ran, refused []projections.SchemaChange, err error) {
	drifts, err := s.Drifts(ctx, p, types)
	if err != nil {
		return nil, nil, err
	}
	for i, d := range drifts {
		if d.Table != p.Table {
			// The change names the read column: say which table it is in.
			drifts[i].Why = "state table " + d.Table + ": " + d.Why
		}
	}
	run, refuse := Follows(drifts)
	for _, d := range run {
		if err := s.Shards[d.Shard].Exec(ctx, []string{d.Alter}); err != nil {
			return ran, nil, fmt.Errorf("shard %s: %w", s.Shards[d.Shard].Range.Text, err)
		}
		ran = append(ran, projections.SchemaChange{Column: d.ReadColumn, Why: d.Why, Alter: d.Alter})
	}
	if len(ran) > 0 {
		// A column may have changed its character set or type: p's
		// statements are rendered again from the altered tables
		// (keycharsets.go, floatread.go).
		forgetSinkColumns(p)
		for _, sh := range s.Shards {
			sh.statements.Delete(p.Name)
		}
	}
	for _, d := range refuse {
		refused = append(refused, projections.SchemaChange{Column: d.ReadColumn, Why: d.Why, Alter: d.Alter, Silent: d.Silent})
	}
	return ran, refused, nil
}

// Follows splits drifts into what a running projector alters on its own
// and what it cannot follow. It follows only a column that both the plan
// and the read table have (a type, charset or nullability the source
// changed): a column added to or removed from the declaration is the
// user's change, which `readside plan --apply` makes. Of those, Safe ones
// keep every stored value; the rest could lose some.
func Follows(drifts []Drift) (run, refuse []Drift) {
	for _, d := range drifts {
		switch {
		case d.Planned == "" || d.Existing == "":
		case d.Safe:
			run = append(run, d)
		default:
			refuse = append(refuse, d)
		}
	}
	return run, refuse
}
