package expr

import (
	"strconv"
	"strings"
)

// The expression tree. Parse builds it; Check types every node once (the
// types decide how eval compares, converts and computes, as MySQL decides
// at prepare time); eval then runs on rows without allocating maps or
// reflecting.

// colRef is a source column; idx is its place in Expr.Columns.
type colRef struct {
	name string
	idx  int
	at   int
	typ  Type
}

// literal is a constant as written; text is its MySQL spelling.
type literal struct {
	d    Datum
	text string
	at   int
	typ  Type
}

// paren keeps the parentheses a text wrote, for String-like rendering;
// it is transparent to evaluation.
type paren struct{ x node }

type cmpOp uint8

const (
	cmpEQ cmpOp = iota
	cmpNSEQ
	cmpNE
	cmpLT
	cmpLE
	cmpGT
	cmpGE
)

var cmpText = [...]string{"=", "<=>", "<>", "<", "<=", ">", ">="}

type compare struct {
	op   cmpOp
	l, r node
	at   int
	how  cmpHow // how the operands compare, decided by Check
	coll *collation
	lt   Type // the operands' types
	rt   Type
	// allDigits compares decimals with every digit computed, not at
	// their types' scales (see order)
	allDigits bool
}

type logicOp uint8

const (
	opAnd logicOp = iota
	opOr
	opXor
)

var logicText = [...]string{"AND", "OR", "XOR"}

type logic struct {
	op   logicOp
	l, r node
	at   int
}

type not struct {
	x    node
	at   int
	bang bool // written !x (binds tighter than NOT)
}

type isNull struct {
	x   node
	not bool
	at  int
}

type truthValue uint8

const (
	truthTrue truthValue = iota
	truthFalse
	truthUnknown
)

type isTruth struct {
	x    node
	not  bool
	want truthValue
	at   int
}

type in struct {
	x    node
	list []node
	not  bool
	at   int
	cmps []compare // x compared with each element, typed by Check
}

type between struct {
	x, lo, hi node
	not       bool
	at        int
	ge, le    compare
}

type like struct {
	x, pat, esc node
	not         bool
	at          int
	coll        *collation
	xt, pt      Type // the operand's and the pattern's types
}

type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv
	opIntDiv
	opMod
)

var arithText = [...]string{"+", "-", "*", "/", "DIV", "%"}
var arithOps = map[string]arithOp{"+": opAdd, "-": opSub, "*": opMul, "/": opDiv, "DIV": opIntDiv, "%": opMod, "MOD": opMod}

type arith struct {
	op   arithOp
	l, r node
	at   int
	typ  Type
}

type neg struct {
	x   node
	at  int
	typ Type
}

type call struct {
	f     *Func
	args  []node
	at    int
	types []Type
	typ   Type
}

type caseNode struct {
	operand      node
	whens, thens []node
	els          node
	at           int
	typ          Type
	types        []Type    // the results' types: thens, then the ELSE
	cmps         []compare // simple CASE: operand = when_i
}

type cast struct {
	x    node
	to   string // SIGNED, UNSIGNED, DECIMAL, CHAR, BINARY, DATE, DATETIME, TIME, DOUBLE
	n, s int    // length or precision, and scale; -1 when not written
	at   int
	tpos int
	typ  Type
	xt   Type // the operand's type
}

func (c *colRef) sql(col func(string) string) string { return col(c.name) }
func (l *literal) sql(func(string) string) string    { return l.text }
func (p *paren) sql(col func(string) string) string  { return p.x.sql(col) }
func (c *compare) sql(col func(string) string) string {
	return "(" + c.l.sql(col) + " " + cmpText[c.op] + " " + c.r.sql(col) + ")"
}
func (l *logic) sql(col func(string) string) string {
	return "(" + l.l.sql(col) + " " + logicText[l.op] + " " + l.r.sql(col) + ")"
}
func (n *not) sql(col func(string) string) string { return "(NOT " + n.x.sql(col) + ")" }
func (n *isNull) sql(col func(string) string) string {
	if n.not {
		return "(" + n.x.sql(col) + " IS NOT NULL)"
	}
	return "(" + n.x.sql(col) + " IS NULL)"
}
func (n *isTruth) sql(col func(string) string) string {
	w := [...]string{"TRUE", "FALSE", "UNKNOWN"}[n.want]
	if n.not {
		w = "NOT " + w
	}
	return "(" + n.x.sql(col) + " IS " + w + ")"
}
func (n *in) sql(col func(string) string) string {
	var b strings.Builder
	b.WriteString("(" + n.x.sql(col))
	if n.not {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	for i, e := range n.list {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.sql(col))
	}
	b.WriteString("))")
	return b.String()
}
func (n *between) sql(col func(string) string) string {
	kw := " BETWEEN "
	if n.not {
		kw = " NOT BETWEEN "
	}
	return "(" + n.x.sql(col) + kw + n.lo.sql(col) + " AND " + n.hi.sql(col) + ")"
}
func (n *like) sql(col func(string) string) string {
	kw := " LIKE "
	if n.not {
		kw = " NOT LIKE "
	}
	s := "(" + n.x.sql(col) + kw + n.pat.sql(col)
	if n.esc != nil {
		s += " ESCAPE " + n.esc.sql(col)
	}
	return s + ")"
}
func (a *arith) sql(col func(string) string) string {
	return "(" + a.l.sql(col) + " " + arithText[a.op] + " " + a.r.sql(col) + ")"
}
func (n *neg) sql(col func(string) string) string { return "-(" + n.x.sql(col) + ")" }
func (c *call) sql(col func(string) string) string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = a.sql(col)
	}
	if c.f.SQL != nil {
		return c.f.SQL(args)
	}
	return c.f.Name + "(" + strings.Join(args, ", ") + ")"
}
func (c *caseNode) sql(col func(string) string) string {
	var b strings.Builder
	b.WriteString("CASE")
	if c.operand != nil {
		b.WriteString(" " + c.operand.sql(col))
	}
	for i := range c.whens {
		b.WriteString(" WHEN " + c.whens[i].sql(col) + " THEN " + c.thens[i].sql(col))
	}
	if c.els != nil {
		b.WriteString(" ELSE " + c.els.sql(col))
	}
	b.WriteString(" END")
	return b.String()
}
func (c *cast) sql(col func(string) string) string {
	t := c.to
	switch {
	case c.s >= 0:
		t += "(" + strconv.Itoa(c.n) + "," + strconv.Itoa(c.s) + ")"
	case c.n >= 0:
		t += "(" + strconv.Itoa(c.n) + ")"
	}
	return "CAST(" + c.x.sql(col) + " AS " + t + ")"
}

// quoteString renders s as a MySQL string literal that reads back as s
// with or without NO_BACKSLASH_ESCAPES... except that a backslash is
// doubled, which assumes the default sql_mode (as the sessions readside
// opens have).
func quoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			b.WriteString("''")
		case '\\':
			b.WriteString(`\\`)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 0x1a:
			b.WriteString(`\Z`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// walk visits n and every node under it, parents first.
func walk(n node, f func(node)) {
	if n == nil {
		return
	}
	f(n)
	switch x := n.(type) {
	case *paren:
		walk(x.x, f)
	case *compare:
		walk(x.l, f)
		walk(x.r, f)
	case *logic:
		walk(x.l, f)
		walk(x.r, f)
	case *not:
		walk(x.x, f)
	case *isNull:
		walk(x.x, f)
	case *isTruth:
		walk(x.x, f)
	case *in:
		walk(x.x, f)
		for _, e := range x.list {
			walk(e, f)
		}
	case *between:
		walk(x.x, f)
		walk(x.lo, f)
		walk(x.hi, f)
	case *like:
		walk(x.x, f)
		walk(x.pat, f)
		walk(x.esc, f)
	case *arith:
		walk(x.l, f)
		walk(x.r, f)
	case *neg:
		walk(x.x, f)
	case *call:
		for _, a := range x.args {
			walk(a, f)
		}
	case *caseNode:
		walk(x.operand, f)
		for i := range x.whens {
			walk(x.whens[i], f)
			walk(x.thens[i], f)
		}
		walk(x.els, f)
	case *cast:
		walk(x.x, f)
	case *ctrl:
		for _, a := range x.args {
			walk(a, f)
		}
	}
}
