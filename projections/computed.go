package projections

// Computed columns: a `columns` value that is an expression over the
// source row (expr) rather than a source column's name. A plain column
// keeps the fast path (its event text bound as is, bindRaw); a computed
// one converts the values of the columns it reads (expr.FromEvent),
// evaluates, and binds the result as its read column stores it
// (expr.Bind). Its read column's definition is the expression's type,
// worked out against the source columns where the read table's types are
// (SourceColumns), or column_types' override of it. A computed key
// column's value is part of the read key, so an update that changes it
// moves the read row as any key move does (appendWrites).

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/expr"
)

// typedExpr is a computed column's expression checked against the source
// columns: what the projector evaluates. Read-only once made.
type typedExpr struct {
	// copy: the value is a source column's name after all (compileColumn).
	copy bool
	e    *expr.Expr
	typ  expr.Type // what Bind stores: the inferred type, or its override
	// args are the types of e.Columns()' source columns, in order, which
	// expr.FromEventType reads the event values by.
	args []expr.Type
}

// compileColumns makes the projection's read columns from the declaration:
// every key column first (p.Key order), then the rest by name. Each
// value is parsed; a bare column name is a plain copy. Every problem is
// returned, each naming its key.
func compileColumns(p *Projection, d config.Projection, key string) []error {
	var errs []error
	one := func(name string) {
		if _, ok := d.Columns[name]; !ok { // a key column missing from columns: Compile says so
			p.Columns = append(p.Columns, Column{Name: name})
			return
		}
		c, err := compileColumn(name, d.Columns[name], d.ColumnTypes[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.columns.%s %q: %w", key, name, d.Columns[name], err))
		}
		p.Columns = append(p.Columns, c)
	}
	for _, k := range p.Key {
		one(k)
	}
	var rest []string
	for c := range d.Columns {
		if !slices.Contains(p.Key, c) {
			rest = append(rest, c)
		}
	}
	sort.Strings(rest)
	for _, c := range rest {
		one(c)
	}
	overridden := make([]string, 0, len(d.ColumnTypes))
	for c := range d.ColumnTypes {
		overridden = append(overridden, c)
	}
	sort.Strings(overridden)
	for _, c := range overridden {
		text, ok := d.Columns[c]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s.column_types.%s: %s is not in %s.columns: override the type of one of its computed columns", key, c, c, key))
		case p.column(c).typed == nil && p.column(c).Source == "":
			// The value does not parse: reported with the column.
		case p.column(c).typed == nil:
			errs = append(errs, fmt.Errorf("%s.column_types.%s: %s copies source column %s, whose type the read column takes exactly: remove the override, or make the value an expression (e.g. CAST(%s AS CHAR(20)))", key, c, c, text, text))
		case strings.TrimSpace(d.ColumnTypes[c]) == "" || typeProblem(d.ColumnTypes[c]) != "":
			errs = append(errs, fmt.Errorf("%s.column_types.%s %q: %s: give a MySQL column type such as char(7) or bigint unsigned (nullability is inferred)", key, c, d.ColumnTypes[c], cmp.Or(typeProblem(d.ColumnTypes[c]), "empty")))
		}
	}
	return errs
}

// typeProblem is why an override is not a bare column type: readside
// decides nullability, and the text goes into CREATE TABLE.
func typeProblem(t string) string {
	u := strings.ToUpper(t)
	for _, w := range []string{"NULL", "DEFAULT", "PRIMARY", "KEY", ";", "--", "/*", "#", "`"} {
		if strings.Contains(u, w) {
			return fmt.Sprintf("it contains %s", w)
		}
	}
	return ""
}

// compileColumn parses one `columns` value. A bare column reference is a
// plain copy. Anything else is computed, unless the source table has a
// column named exactly as the value (decided by SourceColumns, which
// knows the source: a name wins, so a config naming a column such as
// "i-j" or "a b" as written keeps copying it). override is column_types'
// entry for the column. A value that neither parses nor can be a column
// name (longer than MySQL's 64 characters, or with parentheses: a call)
// is an error here; any other parse error waits for the source's columns.
func compileColumn(name, text, override string) (Column, error) {
	c := Column{Name: name, Type: strings.TrimSpace(override)}
	e, err := expr.Parse(text)
	if err == nil {
		if src, plain := e.Column(); plain {
			c.Source = src
			return c, nil
		}
	} else if utf8.RuneCountInString(text) > 64 || strings.ContainsAny(text, "()") {
		return c, err
	}
	c.Source, c.Expr, c.parseErr = text, e, err
	c.typed = new(atomic.Pointer[typedExpr])
	return c, nil
}

// Computed reports whether the column is an expression rather than a
// copy: before SourceColumns, whether it may be one.
func (c Column) Computed() bool {
	if c.typed == nil {
		return false
	}
	t := c.typed.Load()
	return t == nil || !t.copy
}

// SQL is the column's value as MySQL text over the source row, col
// rendering a source column reference (quoted, qualified): verify and
// humans compute the read table with it.
func (c Column) SQL(col func(name string) string) string {
	if !c.Computed() || c.Expr == nil {
		return col(c.Source)
	}
	if t := c.typed.Load(); t != nil {
		return t.e.SQL(col)
	}
	return c.Expr.SQL(col)
}

// reads reports whether the column's value depends on source column src.
func (c Column) reads(src string) bool {
	if !c.Computed() || c.Expr == nil {
		return c.Source == src
	}
	return slices.Contains(c.Expr.Columns(), src)
}

// typeComputed checks a computed column's expression against the source
// table (nullability as the filter leaves it: a column the where filter
// keeps NULL out of is NOT NULL in the rows that pass) and gives its read
// column definition. The checked expression becomes the one the projector
// evaluates: each call checks a fresh parse, so a projector evaluating the
// previous one is never raced, and a source DDL the projection follows
// (SourceTypes) brings the new definitions in.
func (p *Projection) typeComputed(c Column, src *sourceTable, key bool) (string, error) {
	if _, named := src.types[c.Source]; named {
		c.typed.Store(&typedExpr{copy: true})
		return "", errCopy
	}
	if c.parseErr != nil {
		_, cols := src.has(c.Source)
		return "", fmt.Errorf("neither a source column%s nor an expression: %w", cols, c.parseErr)
	}
	e, err := expr.Parse(c.Source)
	if err != nil {
		return "", err
	}
	typ, err := e.Check(func(name string) (expr.Column, bool) {
		def, ok := src.types[name]
		if !ok {
			return expr.Column{}, false
		}
		return expr.Column{Name: name, Def: def, Nullable: src.nullable[name] && !p.Where.ExcludesNull(name)}, true
	})
	if err != nil {
		if _, cols := src.has(firstMissing(e.Columns(), src)); cols != "" {
			return "", fmt.Errorf("%w%s", err, cols)
		}
		return "", err
	}
	def := typ.Column
	if c.Type != "" {
		def = c.Type
	}
	var nullableCols []string
	for _, name := range e.Columns() {
		if src.nullable[name] && !p.Where.ExcludesNull(name) {
			nullableCols = append(nullableCols, name)
		}
	}
	if key && typ.Nullable && len(nullableCols) > 0 {
		return "", fmt.Errorf("it can be NULL: it reads nullable source column(s) %s, and a read key cannot be NULL: wrap it in COALESCE(…, <default>), or add where: %q (rows with NULL there are then left out of the read table)",
			strings.Join(nullableCols, ", "), nullableCols[0]+" IS NOT NULL")
	}
	t := &typedExpr{e: e, typ: typ}
	t.typ.Column = def
	if t.args, err = src.argTypes(e.Columns()); err != nil {
		return "", err
	}
	c.typed.Store(t)
	// A key over NOT NULL columns that MySQL still types as nullable
	// (DIV, /, %, date functions: NULL for some values) is NOT NULL in
	// the read table; a row it is NULL for is refused (keyText).
	if typ.Nullable && !key {
		return def + " NULL", nil
	}
	return def + " NOT NULL", nil
}

// errCopy: typeComputed found the value to name a source column, which
// the column copies.
var errCopy = errors.New("a source column's name")

// firstMissing is the first of cols that src does not have, or "".
func firstMissing(cols []string, src *sourceTable) string {
	for _, c := range cols {
		if _, ok := src.types[c]; !ok {
			return c
		}
	}
	return ""
}

// computedValue evaluates computed column i on img, reading its columns
// at the positions pos (imagePlan.args).
func (p *Projection) computedValue(img *event.Image, i int, pos []int) (Value, error) {
	c := p.Columns[i]
	t := c.typed.Load()
	if t == nil {
		return Value{}, fmt.Errorf("projections.%s.columns.%s %q has not been typed against the source table: plan the projection (readside plan) before running it", p.Name, c.Name, c.Expr.String())
	}
	row := make([]expr.Datum, len(pos))
	for j, at := range pos {
		raw, ok := img.At(at)
		if !ok {
			return Value{}, fmt.Errorf("projections.%s.columns.%s: %w", p.Name, c.Name, &missingColumn{t.e.Columns()[j]})
		}
		d, err := expr.FromEventType(raw, t.args[j])
		if err != nil {
			return Value{}, fmt.Errorf("projections.%s.columns.%s %q: source column %q: %w", p.Name, c.Name, c.Expr.String(), t.e.Columns()[j], err)
		}
		row[j] = d
	}
	d, err := t.e.Eval(row)
	if err != nil {
		return Value{}, fmt.Errorf("projections.%s.columns.%s %q cannot be computed for this row: %w", p.Name, c.Name, c.Expr.String(), err)
	}
	return bindDatum(d, t.typ), nil
}

// bindDatum is an expression's value d as a parameter for a column of
// type t: a number as its text, binary as bytes, for a BIT column its
// pattern, an unsigned integer (the text 512 would be read as the bits of
// the characters '5', '1', '2'), and for a YEAR four digits.
func bindDatum(d expr.Datum, t expr.Type) Value {
	text, binary, ok := expr.Bind(d, t)
	switch {
	case !ok:
		return Value{}
	case d.Kind == expr.KindUint && strings.HasPrefix(strings.ToLower(t.Column), "bit"):
		return Value{kind: UintValue, u: d.U}
	case d.Kind == expr.KindUint && strings.HasPrefix(strings.ToLower(t.Column), "year"):
		return Value{kind: TextValue, b: YearText(strconv.AppendUint(nil, d.U, 10))}
	case binary:
		return Value{kind: BytesValue, b: text}
	}
	return Value{kind: TextValue, b: text}
}

// appendComputedKey appends computed key column i's value to a read
// key's text: vals[i], or computed from img when vals is nil.
func (p *Projection) appendComputedKey(b *strings.Builder, img *event.Image, pl *imagePlan, i int, vals []Value) error {
	var v Value
	if vals != nil {
		v = vals[i]
	} else {
		var err error
		if v, err = p.computedValue(img, i, pl.args[i]); err != nil {
			return err
		}
	}
	if v.kind == NullValue {
		c := p.Columns[i]
		return fmt.Errorf("key column %q = %s is NULL for this row: a read key cannot be NULL; wrap it in COALESCE(…, <default>) or keep such rows out with where, in projections.%s, and restart", c.Name, c.Expr.String(), p.Name)
	}
	if i > 0 {
		b.WriteByte(0)
	}
	// Quoted: the 0 bytes separating key values cannot occur inside one,
	// and Bind's text is canonical for the type, so equal values give
	// equal text.
	b.WriteString(strconv.Quote(string(v.b)))
	return nil
}

// Computes reports whether the projection has a computed column (or a
// value that may be one until SourceColumns resolves it) or a where
// filter (an expression too): what SourceColumns must type before the
// projection is evaluated or verified.
func (p *Projection) Computes() bool {
	return p.Where != nil || slices.ContainsFunc(p.Columns, Column.Computed)
}

// argTypes are the value types of source columns cols, for
// expr.FromEventType.
func (src *sourceTable) argTypes(cols []string) ([]expr.Type, error) {
	out := make([]expr.Type, len(cols))
	for i, name := range cols {
		t, err := expr.TypeOfColumn(expr.Column{Name: name, Def: src.types[name], Nullable: src.nullable[name]})
		if err != nil {
			return nil, fmt.Errorf("source column %q: %w", name, err)
		}
		out[i] = t
	}
	return out, nil
}
