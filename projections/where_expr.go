package projections

// where on the expression language: every `where:` is an expression of
// expr, typed against the source columns with the computed columns
// (SourceColumns) and evaluated as MySQL's WHERE does: a row passes when
// the value IS TRUE, strings compared by their column's collation. The
// classic grammar (where.go: comparisons, IS NULL, IN, BETWEEN, LIKE,
// AND/OR/NOT over columns and literals) is read first: it gives a
// classic text's parse errors, the NULL analysis of key columns
// (ExcludesNull) and the evaluation of a filter that has not been typed
// (a projection compiled without a source: tests). A text it does not
// read is an expression filter (arithmetic, CASE, every function).

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
	f := &Filter{text: text}
	if err := f.parseExpr(); err != nil {
		return nil, err
	}
	f.columns = f.e.Columns()
	return f, nil
}

// parseExpr reads the filter's text as an expression.
func (f *Filter) parseExpr() error {
	e, err := expr.Parse(f.text)
	if err != nil {
		return err
	}
	// Parenthesized, a text that parses alone means the same; IS TRUE
	// gives WHERE's truth (NULL and zero fail) as a value of its own.
	if _, err := expr.Parse("(" + f.text + ") IS TRUE"); err != nil {
		return fmt.Errorf("as a condition: %w", err)
	}
	f.e, f.typed = e, new(atomic.Pointer[typedExpr])
	return nil
}

// compileWhere reads a `where:` value: the classic grammar first, then an
// expression. When neither reads it, the error of the parser that read
// further says why: a classic condition's typo gets the classic message,
// an expression's the expression language's.
func compileWhere(text string) (*Filter, error) {
	f, err := ParseFilter(text)
	if err == nil {
		if xerr := f.parseExpr(); xerr != nil {
			return nil, fmt.Errorf("the expression language does not read it (%w): report it as a bug; meanwhile write the condition another way", xerr)
		}
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

// Expression reports whether the filter is an expression filter: one
// the classic grammar does not read, which needs typing against the
// source before Match.
func (f *Filter) Expression() bool { return f != nil && f.root == nil }

// Typed reports whether the filter has been typed against the source
// (SourceColumns): then Match and SQL compute the same, and verify
// computes it in SQL.
func (f *Filter) Typed() bool { return f != nil && f.typed != nil && f.typed.Load() != nil }

// SQL is the filter as MySQL text; col renders a column reference.
func (f *Filter) SQL(col func(name string) string) string {
	if f.e == nil {
		return f.text
	}
	return f.e.SQL(col)
}

// typeExpr checks the filter against the source table.
func (f *Filter) typeExpr(src *sourceTable) error {
	if f == nil || f.e == nil || firstMissing(f.columns, src) != "" { // a missing column: SourceColumns says so
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
