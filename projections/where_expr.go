package projections

// Expression filters: a `where:` the classic filter grammar (where.go:
// comparisons, IS NULL, IN, BETWEEN, LIKE, AND/OR/NOT over columns and
// literals) does not accept is read as an expression of the expression
// language (expr): arithmetic, CASE, every function. It is typed against
// the source columns with the computed columns (SourceColumns) and
// evaluated as MySQL's WHERE does: a row passes when the value IS TRUE.
// A classic filter keeps its own evaluator, so every where accepted
// before means what it meant.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"

	"github.com/readside/readside/expr"
)

// parseExprFilter reads text as an expression filter.
func parseExprFilter(text string) (*Filter, error) {
	e, err := expr.Parse(text)
	if err != nil {
		return nil, err
	}
	// Parenthesized, a text that parses alone means the same; IS TRUE
	// gives WHERE's truth (NULL and zero fail) as a value of its own.
	if _, err := expr.Parse("(" + text + ") IS TRUE"); err != nil {
		return nil, fmt.Errorf("as a condition: %w", err)
	}
	return &Filter{text: text, columns: e.Columns(), e: e, typed: new(atomic.Pointer[typedExpr])}, nil
}

// compileWhere reads a `where:` value: the classic grammar first, then an
// expression. When neither reads it, the error of the parser that read
// further says why: a classic condition's typo gets the classic message,
// an expression's the expression language's.
func compileWhere(text string) (*Filter, error) {
	f, err := ParseFilter(text)
	if err == nil {
		return f, nil
	}
	f, xerr := parseExprFilter(text)
	if xerr == nil {
		return f, nil
	}
	var pe *expr.Error
	if m := classicOffset.FindStringSubmatch(err.Error()); m != nil && errors.As(xerr, &pe) {
		if at, _ := strconv.Atoi(m[1]); pe.Pos > at {
			return nil, xerr
		}
	}
	return nil, err
}

// classicOffset finds the position in a classic filter's parse error.
var classicOffset = regexp.MustCompile(`offset (\d+)`)

// Expression reports whether the filter is an expression filter, which
// verify computes in SQL (SQL) rather than with Match.
func (f *Filter) Expression() bool { return f != nil && f.e != nil }

// SQL is the filter as MySQL text; col renders a column reference.
func (f *Filter) SQL(col func(name string) string) string {
	if f.e == nil {
		return f.text
	}
	return f.e.SQL(col)
}

// typeExpr checks an expression filter against the source table.
func (f *Filter) typeExpr(src *sourceTable) error {
	if !f.Expression() || firstMissing(f.columns, src) != "" { // a missing column: SourceColumns says so
		return nil
	}
	e, err := expr.Parse("(" + f.text + ") IS TRUE")
	if err != nil {
		return err
	}
	typ, err := e.Check(func(name string) (expr.Column, bool) {
		def, ok := src.types[name]
		return expr.Column{Name: name, Def: def, Nullable: src.nullable[name]}, ok
	})
	if err != nil {
		var pe *expr.Error
		if errors.As(err, &pe) && pe.Pos > 0 {
			return &expr.Error{Pos: pe.Pos - 1, Msg: pe.Msg} // the text as written starts after "("
		}
		return err
	}
	t := &typedExpr{e: e, typ: typ}
	if t.args, err = src.argTypes(e.Columns()); err != nil {
		return err
	}
	f.typed.Store(t)
	return nil
}

// matchExpr evaluates an expression filter on img.
func (f *Filter) matchExpr(img *Image) (bool, error) {
	t := f.typed.Load()
	if t == nil {
		return false, fmt.Errorf("where %q has not been typed against the source table: plan the projection (readside plan) before running it", f.text)
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
	return d.Kind == expr.KindInt && d.I != 0, nil
}
