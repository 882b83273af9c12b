package projections

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/expr"
)

// Aggregation makes a projection an aggregate one (config `group_by` and
// `aggregates`): its read table holds one row per group, keyed by the
// group columns (Projection.Key), with one column per Aggregate. Each
// source row's last contribution — its version, group and the values it
// adds — is kept on the sink, so a change applies new − old exactly once
// whatever the order and repetition of events (docs/ARCHITECTURE.md,
// "Aggregates").
type Aggregation struct {
	// GroupBy are the read columns of the group key, in declaration order
	// (each one a Column of Projection.Columns: a copy or an expression).
	GroupBy []string
	// Aggregates are the aggregate read columns, in read table order.
	Aggregates []Aggregate
}

// AggFunc is an aggregate function.
type AggFunc string

const (
	AggCount   AggFunc = "count"    // count(*) (Arg nil) or count(col)
	AggSum     AggFunc = "sum"      // sum(col)
	AggMin     AggFunc = "min"      // min(col)
	AggMax     AggFunc = "max"      // max(col)
	AggCountIf AggFunc = "count_if" // count_if(cond)
	AggSumIf   AggFunc = "sum_if"   // sum_if(cond, col)
	AggAvg     AggFunc = "avg"      // avg(col): sum / count of the non-NULL values
)

// Aggregate is one `aggregates` entry.
type Aggregate struct {
	Column string // read column
	Func   AggFunc
	Arg    *expr.Expr // the value aggregated; nil for count(*) and count_if
	Cond   *expr.Expr // count_if's and sum_if's condition; nil otherwise
	Text   string     // as declared, for messages
}

// Contribution is what one source row change does to an aggregate
// projection: the row's new contribution under its source key, applied
// by the sink only when Version is newer than the stored one.
type Contribution struct {
	SourceKey string // canonical text of the source primary key
	Version   uint64
	// Truncate: every contribution older than Version is withdrawn.
	Truncate bool
	From     *kgo.Record
}

// compileAggregate compiles group_by and aggregates (nil errors when the
// projection has neither).
func compileAggregate(p *Projection, d config.Projection, key string) []error { return nil }

// collectContribution adds e's contribution to b.
func (p *Projection) collectContribution(b *Batch, r *kgo.Record, e Event, ps *plans) error {
	return nil
}
