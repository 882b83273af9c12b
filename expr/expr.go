package expr

import (
	"fmt"
	"strings"
)

// Expr is one parsed expression. Check types it against the source
// columns before Eval or Type is used. Read-only once checked: projector
// goroutines share it.
type Expr struct {
	text    string
	columns []string
	typ     Type
	checked bool
	// root is the expression tree (ast.go).
	root node
}

// node is one operator, function call, column reference or literal of an
// expression tree.
type node interface {
	// eval computes the node on a row (values in Expr.Columns order).
	eval(row []Datum) (Datum, error)
	// sql renders the node as MySQL text; col renders a column reference.
	sql(col func(name string) string) string
}

// Column is a source column an expression may reference.
type Column struct {
	Name string
	// Def is the column's definition as information_schema gives it, with
	// its charset and collation for a character column: "bigint(20)
	// unsigned", "decimal(12,2)", "varchar(64) CHARACTER SET utf8mb4
	// COLLATE utf8mb4_general_ci", "datetime(3)", "json".
	Def      string
	Nullable bool
}

// Schema finds a source column by name.
type Schema func(name string) (Column, bool)

// Error is a problem with an expression's text, at a position.
type Error struct {
	Pos int    // byte offset into the text, 0-based
	Msg string // what is wrong and how to fix it
}

func (e *Error) Error() string { return fmt.Sprintf("at offset %d: %s", e.Pos, e.Msg) }

// Parse reads an expression. Its errors are *Error.
func Parse(text string) (*Expr, error) {
	name := strings.TrimSpace(text)
	if !isIdent(name) {
		return nil, &Error{Pos: 0, Msg: "expressions are not supported yet: name a column"}
	}
	return &Expr{text: text, columns: []string{name}, root: colRef{name: name}}, nil
}

// Check types the expression against the source columns and gives its
// result type. Errors name the position and the fix.
func (e *Expr) Check(s Schema) (Type, error) {
	c, ok := s(e.columns[0])
	if !ok {
		return Type{}, &Error{Pos: 0, Msg: fmt.Sprintf("column %q is not in the source table: name one of its columns", e.columns[0])}
	}
	e.typ = Type{Column: c.Def, Nullable: c.Nullable}
	e.checked = true
	return e.typ, nil
}

// Type is the result type Check gave.
func (e *Expr) Type() Type { return e.typ }

// Columns are the source columns the expression reads, in the order Eval
// takes their values.
func (e *Expr) Columns() []string { return e.columns }

// Column reports whether the expression is a plain column reference, and
// which: such a column is copied as is, without evaluation.
func (e *Expr) Column() (string, bool) {
	c, ok := e.root.(colRef)
	return c.name, ok
}

// String is the expression as written.
func (e *Expr) String() string { return e.text }

// SQL renders the expression as MySQL text whose value on the source
// equals Eval's; col renders a column reference (quoted, qualified).
func (e *Expr) SQL(col func(name string) string) string { return e.root.sql(col) }

// Eval computes the expression on a row: the values of Columns, in order.
func (e *Expr) Eval(row []Datum) (Datum, error) { return e.root.eval(row) }

type colRef struct {
	name string
	idx  int
}

func (c colRef) eval(row []Datum) (Datum, error)         { return row[c.idx], nil }
func (c colRef) sql(col func(name string) string) string { return col(c.name) }

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}
