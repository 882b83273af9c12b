package projections

// A `where:` filter is an expression of the expression language (expr),
// the same one computed columns use: parsed once by expr.ParseCondition,
// typed against the source columns by SourceColumns (typeExpr) and
// evaluated as MySQL's WHERE does: a row passes when the condition IS
// TRUE, strings compared by their column's collation, numbers exactly.
// Its Go value equals the source's by expr's differential tests, so
// verify and shards compute the same filter in SQL (SQL).

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/readside/readside/event"
	"github.com/readside/readside/expr"
)

// Filter is a compiled `where:` row filter.
type Filter struct {
	text string
	// e is the text as written, untyped: the columns it reads, its SQL
	// and the NULL analysis of key columns (ExcludesNull).
	e *expr.Expr
	// typed is the condition checked against the source; each typing
	// parses afresh, so that a DDL's re-typing never changes a tree a
	// projector goroutine is evaluating.
	typed *atomic.Pointer[typedExpr]
}

// compileWhere reads a `where:` value. Its errors are *expr.Error: the
// position in the text and the fix.
func compileWhere(text string) (*Filter, error) {
	e, err := expr.Parse(text)
	if err != nil {
		return nil, err
	}
	return &Filter{text: text, e: e, typed: new(atomic.Pointer[typedExpr])}, nil
}

// Columns are the source columns the filter reads.
func (f *Filter) Columns() []string { return f.e.Columns() }

func (f *Filter) String() string { return f.text }

// Typed reports whether the filter has been typed against the source
// (SourceColumns): then Match and SQL compute the same, and verify
// computes it in SQL.
func (f *Filter) Typed() bool { return f != nil && f.typed.Load() != nil }

// SQL is the filter as MySQL text, as written: a row passes where it
// IS TRUE, as in a WHERE clause (verify and shards wrap it so); col
// renders a column reference.
func (f *Filter) SQL(col func(name string) string) string { return f.e.SQL(col) }

// ExcludesNull reports whether the filter is never TRUE for a row whose
// column col is NULL, whatever the row's other columns hold: then a
// nullable source column may be a read key (NullableKeys). The forms it
// understands are listed in docs/config.md.
func (f *Filter) ExcludesNull(col string) bool { return f != nil && f.e.ExcludesNull(col) }

// typeExpr checks the filter against the source table.
func (f *Filter) typeExpr(src *sourceTable) error {
	if f == nil || firstMissing(f.Columns(), src) != "" { // a missing column: SourceColumns says so
		return nil
	}
	e, err := expr.ParseCondition(f.text)
	if err != nil {
		return err
	}
	typ, err := e.Check(func(name string) (expr.Column, bool) {
		def, ok := src.types[name]
		return expr.Column{Name: name, Def: def, Nullable: src.nullable[name]}, ok
	})
	if err != nil {
		return err
	}
	t := &typedExpr{e: e, typ: typ}
	if t.args, err = src.argTypes(e.Columns()); err != nil {
		return err
	}
	f.typed.Store(t)
	return nil
}

// errUntyped: Match before SourceColumns, which every command that runs
// a projection calls first.
var errUntyped = errors.New("has not been typed against the source table: plan the projection (readside plan) before running it")

// Match evaluates the filter on a row image.
func (f *Filter) Match(img *event.Image) (bool, error) {
	t := f.typed.Load()
	if t == nil {
		return false, fmt.Errorf("where %q %w", f.text, errUntyped)
	}
	row := make([]expr.Datum, len(t.args))
	for i, name := range t.e.Columns() {
		raw, ok := img.Get(name)
		if !ok {
			return false, &missingColumn{name}
		}
		d, err := expr.FromEventType(raw, t.args[i])
		if err != nil {
			return false, fmt.Errorf("source column %q: %w", name, err)
		}
		row[i] = d
	}
	d, err := t.e.Eval(row)
	if err != nil {
		return false, fmt.Errorf("%q cannot be computed for this row: %w", f.text, err)
	}
	return d.True(), nil
}
