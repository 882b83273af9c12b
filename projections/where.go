package projections

import (
	"fmt"
	"sync/atomic"

	"github.com/readside/readside/expr"
)

// Filter is a compiled `where:` row filter, evaluated on a source row
// image in the projector. It is a small SQL subset — comparisons, IS
// [NOT] NULL, [NOT] IN, [NOT] BETWEEN, [NOT] LIKE, AND, OR, NOT and
// parentheses over columns and literals — with SQL's three-valued logic:
// only rows for which it is TRUE pass, so a comparison with NULL drops the
// row as a WHERE clause would.
//
// Strings compare the way MySQL's default *_ci PAD SPACE collations do for
// the common cases: case-insensitively and ignoring trailing spaces.
// Numbers compare exactly (as decimals, never floats). A string compared
// with a number is converted to a number as MySQL does when it looks like
// one.
type Filter struct {
	text    string
	root    node
	columns []string
	// e is the filter as an expression (where_expr.go), typed its IS
	// TRUE form checked against the source; root is nil for a text only
	// the expression language reads.
	e     *expr.Expr
	typed *atomic.Pointer[typedExpr]
}

// Columns are the source columns the filter reads.
func (f *Filter) Columns() []string { return f.columns }

func (f *Filter) String() string { return f.text }

// Match evaluates the filter on a row image.
func (f *Filter) Match(img *Image) (bool, error) {
	if f.root == nil || f.Typed() {
		return f.matchExpr(img)
	}
	v, err := f.root.eval(img)
	if err != nil {
		return false, err
	}
	t, known := truth(v)
	return known && t, nil
}

// ParseFilter compiles a where expression.
func ParseFilter(text string) (*Filter, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, fmt.Errorf("unexpected %q at offset %d", p.peek().text, p.peek().pos)
	}
	f := &Filter{text: text, root: root}
	seen := map[string]bool{}
	walk(root, func(n node) {
		if c, ok := n.(colRef); ok && !seen[string(c)] {
			seen[string(c)] = true
			f.columns = append(f.columns, string(c))
		}
	})
	return f, nil
}

// ---- AST ----

type node interface {
	eval(img *Image) (value, error)
}

type colRef string
type literal value
type cmpNode struct {
	op   string
	l, r node
}
type logicNode struct {
	op   string // AND, OR
	l, r node
}
type notNode struct{ x node }
type isNullNode struct {
	x   node
	not bool
}
type inNode struct {
	x    node
	list []node
	not  bool
}
type betweenNode struct {
	x, lo, hi node
	not       bool
}
type likeNode struct {
	x       node
	pattern string
	not     bool
}

func walk(n node, fn func(node)) {
	fn(n)
	switch t := n.(type) {
	case cmpNode:
		walk(t.l, fn)
		walk(t.r, fn)
	case logicNode:
		walk(t.l, fn)
		walk(t.r, fn)
	case notNode:
		walk(t.x, fn)
	case isNullNode:
		walk(t.x, fn)
	case inNode:
		walk(t.x, fn)
		for _, e := range t.list {
			walk(e, fn)
		}
	case betweenNode:
		walk(t.x, fn)
		walk(t.lo, fn)
		walk(t.hi, fn)
	case likeNode:
		walk(t.x, fn)
	}
}
