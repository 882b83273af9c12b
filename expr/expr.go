package expr

import (
	"fmt"
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
	// cond: root is the text's tree under IS TRUE (ParseCondition).
	cond bool
}

// node is one operator, function call, column reference or literal of an
// expression tree.
type node interface {
	// eval computes the node on a row (values in Expr.Columns order).
	eval(row []Datum) (Datum, error)
	// sql renders the node as MySQL text; col renders a column reference.
	sql(col func(name string) string) string
	// check types the node and its children, once, before eval.
	check(s Schema) (Type, error)
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
	root, err := parse(text)
	if err != nil {
		return nil, err
	}
	e := &Expr{text: text, root: root}
	walk(root, func(n node) {
		c, ok := n.(*colRef)
		if !ok {
			return
		}
		for i, name := range e.columns {
			if equalNames(name, c.name) {
				c.idx = i
				return
			}
		}
		c.idx = len(e.columns)
		e.columns = append(e.columns, c.name)
	})
	return e, nil
}

// ParseCondition reads a WHERE condition: the expression as written,
// evaluated as `(text) IS TRUE`, so that a row passes exactly when
// MySQL's WHERE would keep it (NULL and zero do not pass) and Eval gives
// 1 or 0, never NULL. Errors are *Error at positions in text as written.
// String is the text as written; SQL renders the condition with its IS
// TRUE, so that its value on the server equals Eval's, as for any
// expression.
func ParseCondition(text string) (*Expr, error) {
	e, err := Parse(text)
	if err != nil {
		return nil, err
	}
	e.cond = true
	e.root = &isTruth{x: e.root, want: truthTrue}
	return e, nil
}

// Check types the expression against the source columns and gives its
// result type. Errors name the position and the fix.
func (e *Expr) Check(s Schema) (Type, error) {
	t, err := e.root.check(s)
	if err != nil {
		return Type{}, err
	}
	e.typ = t
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
	n := e.written()
	for {
		p, ok := n.(*paren)
		if !ok {
			break
		}
		n = p.x
	}
	if c, ok := n.(*colRef); ok {
		return c.name, true
	}
	return "", false
}

// String is the expression as written.
func (e *Expr) String() string { return e.text }

// SQL renders the expression as MySQL text whose value on the source
// equals Eval's; col renders a column reference (quoted, qualified).
func (e *Expr) SQL(col func(name string) string) string { return e.root.sql(col) }

// written is the tree of the text as written.
func (e *Expr) written() node {
	if e.cond {
		return e.root.(*isTruth).x
	}
	return e.root
}

// Eval computes the expression on a row: the values of Columns, in order.
func (e *Expr) Eval(row []Datum) (Datum, error) {
	if !e.checked {
		return Null, fmt.Errorf("expression %q evaluated before Check", e.text)
	}
	d, err := e.root.eval(row)
	return final(d, e.typ), err
}

// final rounds a decimal to its type's scale as MySQL does when a value
// leaves an expression: inside, a division keeps the extra digits it
// computed (see divScale).
func final(d Datum, t Type) Datum {
	if d.Kind == KindDecimal && t.Kind == KindDecimal && d.Frac != t.Frac {
		if s, ok := smallOf(d); ok && int(t.Frac) < s.scale {
			return s.round(int(t.Frac)).datum()
		}
		return toDec(d).rescale(int(t.Frac)).datum()
	}
	return d
}

// equalNames: MySQL column names are case-insensitive.
func equalNames(a, b string) bool { return foldASCII(a) == foldASCII(b) }

func foldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func (c *colRef) check(s Schema) (Type, error) {
	col, ok := s(c.name)
	if !ok {
		return Type{}, errAt(c.at, "column %q is not in the source table: name one of its columns", c.name)
	}
	t, err := typeOfDef(col.Def, col.Nullable)
	if err != nil {
		return Type{}, errAt(c.at, "column %q: %v", c.name, err)
	}
	c.typ = t
	return t, nil
}

func (c *colRef) eval(row []Datum) (Datum, error) { return row[c.idx], nil }

func (p *paren) check(s Schema) (Type, error)    { return p.x.check(s) }
func (p *paren) eval(row []Datum) (Datum, error) { return p.x.eval(row) }
func (l *literal) eval([]Datum) (Datum, error)   { return l.d, nil }
func (l *literal) check(Schema) (Type, error)    { return l.typ, nil }

// isConst reports whether n reads no column.
func isConst(n node) bool {
	c := true
	walk(n, func(x node) {
		if _, ok := x.(*colRef); ok {
			c = false
		}
	})
	return c
}
