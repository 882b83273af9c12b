package projections

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/readside/readside/event"
	"github.com/readside/readside/expr"
)

// Aggregation makes a projection an aggregate one (config `group_by` and
// `aggregates`): its read table holds one row per group, keyed by the
// group columns (Projection.Key), with one column per Aggregate. Each
// source row's last contribution — its version, group and the values it
// adds — is kept on the sink, so a change applies new − old exactly once
// whatever the order and repetition of events (docs/design/aggregates.md,
// "Aggregates").
type Aggregation struct {
	// GroupBy are the read columns of the group key, in declaration order
	// (each one a Column of Projection.Columns: a copy or an expression).
	GroupBy []string
	// Aggregates are the aggregate read columns, in read table order.
	Aggregates []Aggregate
	// typed is Aggregates checked against the source (typeAggregates).
	typed *atomic.Pointer[aggTyped]
	// joinedFrom maps each group column that is a joined parent's column
	// to the index of the join declaring it (aggregate_joined.go).
	joinedFrom map[string]int
	// joinedExpr are those that are expressions over one join's columns.
	joinedExpr map[string]*expr.Expr
	// Joined are those group columns, resolved once the joins compiled.
	Joined []JoinedGroup
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
	// AggCountDistinct is count(distinct expr): the number of distinct
	// non-NULL values, compared as the server compares them (a string
	// under its column's collation). Kept exact by a reference count per
	// group and value (DistinctTable).
	AggCountDistinct AggFunc = "count_distinct"
	// AggSumDistinct is sum(distinct expr): the sum of those values,
	// kept with the same reference counts.
	AggSumDistinct AggFunc = "sum_distinct"
)

// Aggregate is one `aggregates` entry.
type Aggregate struct {
	Column string // read column
	Func   AggFunc
	Arg    *expr.Expr // the value aggregated; nil for count(*) and count_if
	Cond   *expr.Expr // count_if's and sum_if's condition; nil otherwise
	Text   string     // as declared, for messages
}

// Stored reports whether the aggregate keeps a contribution column: every
// one but count(*), whose contribution is the row itself.
func (a Aggregate) Stored() bool { return a.Func != AggCount || a.Arg != nil }

// Counts reports whether the read value is a count of rows (COUNT,
// count_if) whose contribution is "1" or "0": an integer that is never
// NULL. count(distinct) is not one: its contribution is the value.
func (a Aggregate) Counts() bool { return a.Func == AggCount || a.Func == AggCountIf }

// Distinct reports count(distinct expr) and sum(distinct expr): the
// aggregates of the distinct values, kept by reference counts.
func (a Aggregate) Distinct() bool { return a.Func == AggCountDistinct || a.Func == AggSumDistinct }

// SQL is the aggregate as MySQL computes it over the source rows, col
// rendering a source column reference: what verify and tests compare the
// read table with (`SELECT <group>, <SQL>… FROM src WHERE … GROUP BY`).
func (a Aggregate) SQL(col func(name string) string) string {
	switch a.Func {
	case AggCount:
		if a.Arg == nil {
			return "COUNT(*)"
		}
		return "COUNT(" + a.Arg.SQL(col) + ")"
	case AggCountDistinct:
		return "COUNT(DISTINCT " + a.Arg.SQL(col) + ")"
	case AggSumDistinct:
		return "SUM(DISTINCT " + a.Arg.SQL(col) + ")"
	case AggCountIf:
		return "COUNT(CASE WHEN " + a.Cond.SQL(col) + " THEN 1 END)"
	case AggSumIf:
		return "SUM(CASE WHEN " + a.Cond.SQL(col) + " THEN " + a.Arg.SQL(col) + " END)"
	}
	return map[AggFunc]string{AggSum: "SUM", AggMin: "MIN", AggMax: "MAX", AggAvg: "AVG"}[a.Func] + "(" + a.Arg.SQL(col) + ")"
}

// ValueOrder is how the sink may order an aggregate's values by their
// text alone, without asking the server (a MIN or MAX that only gains
// values is then kept without reading the group's contributions).
type ValueOrder uint8

const (
	OrderUnknown ValueOrder = iota // only the server orders them (strings by collation, doubles, times, JSON)
	OrderNumeric                   // integers and decimals, by value
	// OrderText: dates and datetimes, whose text is "YYYY-MM-DD[ HH:MM:SS[.f]]":
	// a value before another in byte order is not after it in time (a
	// shorter fraction may equal a longer one, never exceed it).
	OrderText
)

// Order is how the values of Aggregates[i] may be ordered by their text.
func (ag *Aggregation) Order(i int) ValueOrder {
	if ag.typed == nil {
		return OrderUnknown
	}
	t := ag.typed.Load()
	if t == nil || i >= len(t.aggs) || t.aggs[i].arg == nil {
		return OrderUnknown
	}
	switch t.aggs[i].argT.Kind {
	case expr.KindInt, expr.KindUint, expr.KindDecimal:
		return OrderNumeric
	case expr.KindDate, expr.KindDatetime:
		return OrderText
	}
	return OrderUnknown
}

// Contribution is what one source row change does to an aggregate
// projection: the row's new contribution under its source key, applied
// by the sink only when Version is newer than the stored one.
type Contribution struct {
	SourceKey string // canonical text of the source primary key
	Version   uint64
	// Truncate: every contribution older than Version is withdrawn.
	Truncate bool
	// Group is the row's group (Projection.Key order); nil when the row
	// contributes nothing as of Version: deleted, or kept out by where.
	Group []Value
	// KeyspaceID routes the group to a shard (its shard_by value's, 0
	// without shard_by).
	KeyspaceID uint64
	// Values are, per Aggregation.Aggregates, what the row adds: "1" or
	// "0" for counts, else the value (NULL when it adds none).
	Values []Value
	// Parents is, per join (Projection.Joins order), the group's parent:
	// the join key read from the group's columns ("" when NULL).
	Parents []ParentRef
	// First: the event inserted the source row, so the sink most likely
	// holds no contribution of it and writes this one without reading
	// (a replay or a reused key proves it wrong: the sink's insert fails
	// on the duplicate key and the batch is applied again reading every
	// key; sinks/aggregate_guess.go).
	First bool
	From  *Record
}

// MaxSourceKeyBytes bounds a source key's text (the contributions table's
// primary key, an InnoDB index of at most 3072 bytes).
const MaxSourceKeyBytes = 3072

// ContributionsTable is the sink table of an aggregate projection's
// contributions (one row per source row), named from the read table so a
// rebuild's shadow table has its own.
func (p *Projection) ContributionsTable() string {
	name := "_readside_agg_" + p.Table
	if len(name) > 64 {
		name = fmt.Sprintf("_readside_agg_%x", xxhashString(p.Table))
	}
	return name
}

// DistinctTable is the sink table of count(distinct) aggregate col's
// reference counts: one row per group and value, with the number of
// source rows whose stored contribution holds that value. Named from the
// read table, as ContributionsTable.
func (p *Projection) DistinctTable(col string) string {
	name := "_readside_dst_" + p.Table + "_" + col
	if len(name) > 64 {
		name = fmt.Sprintf("_readside_dst_%x", xxhashString(p.Table+"\x00"+col))
	}
	return name
}

// DistinctValueColumn is the value column of a DistinctTable.
const DistinctValueColumn = "v"

// ContributionColumn names aggregate col's column in the contributions
// table; the group columns keep their read names there, prefixed so no
// two collide.
func ContributionColumn(col string) string { return "v_" + col }

// GroupColumn names group column col in the contributions table.
func GroupColumn(col string) string { return "g_" + col }

var one, zero = Value{kind: TextValue, b: []byte("1")}, Value{kind: TextValue, b: []byte("0")}

// collectContribution adds e's contribution to b: the after image's group
// and values when the row exists and passes the filter, else none (a
// delete, or a row that left the filter, withdraws what it added).
func (p *Projection) collectContribution(b *Batch, r *Record, e event.Event, ps *plans) error {
	if e.Op == event.OpTruncate {
		b.Contributions = append(b.Contributions, Contribution{Truncate: true, Version: e.Version, From: r})
		return nil
	}
	if len(r.Key) == 0 {
		return fmt.Errorf("%s event without a record key (the source primary key)", e.Op)
	}
	if len(r.Key) > MaxSourceKeyBytes {
		return fmt.Errorf("source primary key is %d bytes encoded, over the %d bytes an aggregate's contributions table can hold", len(r.Key), MaxSourceKeyBytes)
	}
	c := Contribution{SourceKey: string(r.Key), Version: e.Version, First: e.Op == event.OpCreate, From: r}
	if e.Op != event.OpDelete {
		in, err := p.passes(e.After, "after")
		if err != nil {
			return err
		}
		if in {
			if e.After == nil {
				return fmt.Errorf("%s event without an after image", e.Op)
			}
			if err := p.contribute(&c, e, ps); err != nil {
				return err
			}
		}
	}
	b.Contributions = append(b.Contributions, c)
	return nil
}

// contribute fills c's group and values from e's after image.
func (p *Projection) contribute(c *Contribution, e event.Event, ps *plans) error {
	img := e.After
	t := p.Aggregation.typed.Load()
	if t == nil {
		return fmt.Errorf("projections.%s.aggregates have not been typed against the source table: plan the projection (readside plan) before running it", p.Name)
	}
	pl := p.plan(ps, img, e.Schema)
	c.Group = make([]Value, len(p.Columns))
	if len(p.Aggregation.Joined) > 0 {
		if err := p.contributeJoined(c, e, pl); err != nil {
			return err
		}
		return p.contributeValues(c, img, t)
	}
	for i := range p.Columns {
		v, err := p.value(img, pl, i)
		if err != nil {
			return err
		}
		c.Group[i] = v
	}
	if _, err := p.keyText(img, pl, c.Group); err != nil { // refuses a NULL group value
		return err
	}
	c.KeyspaceID = p.keyspaceID(c.Group, e.Schema)
	for _, j := range p.Joins {
		ref, err := groupParent(img, j, e)
		if err != nil {
			return err
		}
		c.Parents = append(c.Parents, ref)
	}
	return p.contributeValues(c, img, t)
}

// contributeValues fills c's values, per aggregate, from img.
func (p *Projection) contributeValues(c *Contribution, img *event.Image, t *aggTyped) error {
	c.Values = make([]Value, len(p.Aggregation.Aggregates))
	for i, a := range p.Aggregation.Aggregates {
		x := t.aggs[i]
		if x.cond != nil {
			d, err := evalOn(img, x.cond, x.condArgs)
			if err != nil {
				return fmt.Errorf("projections.%s.aggregates.%s %q cannot be computed for this row: %w", p.Name, a.Column, a.Text, err)
			}
			if !d.True() {
				if a.Func == AggCountIf {
					c.Values[i] = zero
				}
				continue // sum_if: NULL
			}
			if a.Func == AggCountIf {
				c.Values[i] = one
				continue
			}
		}
		if x.arg == nil { // count(*)
			c.Values[i] = one
			continue
		}
		d, err := evalOn(img, x.arg, x.argArgs)
		if err != nil {
			return fmt.Errorf("projections.%s.aggregates.%s %q cannot be computed for this row: %w", p.Name, a.Column, a.Text, err)
		}
		if a.Func == AggCount {
			c.Values[i] = zero
			if !d.IsNull() {
				c.Values[i] = one
			}
			continue
		}
		c.Values[i] = bindDatum(d, x.argT)
	}
	return nil
}

// groupParent is join j's key for the group of img, whose on columns are
// group columns (compileAggregate), as an upsert's ParentRef has it.
func groupParent(img *event.Image, j *Join, e event.Event) (ParentRef, error) {
	var ref ParentRef
	var b strings.Builder
	for i, on := range j.On {
		raw, ok := img.Get(on.Child)
		if !ok || string(raw) == "null" {
			return ParentRef{}, nil // no parent, as in a LEFT JOIN
		}
		if i > 0 {
			b.WriteByte(0)
		}
		b.Write(raw)
		v, err := bindValue(img, on.Child, e)
		if err != nil {
			return ParentRef{}, err
		}
		ref.Values = append(ref.Values, v)
	}
	ref.Key = b.String()
	return ref, nil
}

// evalOn evaluates e over img's columns, read as the types args.
func evalOn(img *event.Image, e *expr.Expr, args []expr.Type) (expr.Datum, error) {
	row := make([]expr.Datum, len(args))
	for j, name := range e.Columns() {
		raw, ok := img.Get(name)
		if !ok {
			return expr.Datum{}, &missingColumn{name}
		}
		d, err := expr.FromEventType(raw, args[j])
		if err != nil {
			return expr.Datum{}, fmt.Errorf("source column %q: %w", name, err)
		}
		row[j] = d
	}
	return e.Eval(row)
}

// CoalesceContributions keeps the newest contribution per source key
// (and every truncation), in place: what the sink's version check would
// make of the whole sequence anyway. The one kept is First when any of
// the key's was: a row inserted and then updated in one batch is as new
// to the sink as one only inserted.
func CoalesceContributions(cs []Contribution) []Contribution {
	out := coalesceNewestMerged(cs, cs[:0], func(c Contribution) (string, bool) { return c.SourceKey, c.Truncate },
		func(c Contribution) uint64 { return c.Version },
		func(newest, other Contribution) Contribution {
			newest.First = newest.First || other.First
			return newest
		})
	clear(cs[len(out):])
	return out
}
