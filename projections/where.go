package projections

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"unicode"
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
}

// Columns are the source columns the filter reads.
func (f *Filter) Columns() []string { return f.columns }

func (f *Filter) String() string { return f.text }

// Match evaluates the filter on a row image.
func (f *Filter) Match(img *Image) (bool, error) {
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

// ---- values ----

type vkind uint8

const (
	vNull vkind = iota
	vBool
	vNum
	vStr
)

type value struct {
	kind vkind
	b    bool
	num  *big.Rat
	str  string
}

var null = value{kind: vNull}

func boolean(b bool) value { return value{kind: vBool, b: b} }

// fromJSON turns an event value (docs/events.md encoding) into a value.
func fromJSON(raw json.RawMessage) (value, error) {
	s := string(raw)
	switch {
	case s == "null":
		return null, nil
	case s == "true":
		return boolean(true), nil
	case s == "false":
		return boolean(false), nil
	case len(s) > 0 && s[0] == '"':
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return null, err
		}
		return value{kind: vStr, str: str}, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return null, fmt.Errorf("value %s is neither a string nor a number", s)
	}
	return value{kind: vNum, num: r}, nil
}

// asNumber converts for a numeric comparison (MySQL converts a string
// compared with a number; a non-numeric string is not comparable here,
// which we refuse to guess about and treat as unknown).
func (v value) asNumber() (*big.Rat, bool) {
	switch v.kind {
	case vNum:
		return v.num, true
	case vBool:
		if v.b {
			return big.NewRat(1, 1), true
		}
		return new(big.Rat), true
	case vStr:
		return new(big.Rat).SetString(strings.TrimSpace(v.str))
	}
	return nil, false
}

func collate(s string) string { return strings.ToLower(strings.TrimRight(s, " ")) }

// compare returns -1, 0, 1, or ok=false when either side is NULL or they
// cannot be compared.
func compare(a, b value) (int, bool) {
	if a.kind == vNull || b.kind == vNull {
		return 0, false
	}
	if a.kind == vStr && b.kind == vStr {
		return strings.Compare(collate(a.str), collate(b.str)), true
	}
	x, ok1 := a.asNumber()
	y, ok2 := b.asNumber()
	if !ok1 || !ok2 {
		return 0, false
	}
	return x.Cmp(y), true
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

func (c colRef) eval(img *Image) (value, error) {
	raw, ok := img.Get(string(c))
	if !ok {
		return null, fmt.Errorf("where: column %q is not in the event (excluded by source.exclude_columns, or dropped by DDL?)", string(c))
	}
	return fromJSON(raw)
}

func (l literal) eval(*Image) (value, error) { return value(l), nil }

func (c cmpNode) eval(img *Image) (value, error) {
	a, err := c.l.eval(img)
	if err != nil {
		return null, err
	}
	b, err := c.r.eval(img)
	if err != nil {
		return null, err
	}
	if c.op == "<=>" {
		if a.kind == vNull || b.kind == vNull {
			return boolean(a.kind == b.kind), nil
		}
	}
	r, ok := compare(a, b)
	if !ok {
		return null, nil
	}
	switch c.op {
	case "=", "<=>":
		return boolean(r == 0), nil
	case "<>", "!=":
		return boolean(r != 0), nil
	case "<":
		return boolean(r < 0), nil
	case "<=":
		return boolean(r <= 0), nil
	case ">":
		return boolean(r > 0), nil
	case ">=":
		return boolean(r >= 0), nil
	}
	return null, fmt.Errorf("where: unknown operator %s", c.op)
}

// truth maps a value to SQL's TRUE/FALSE/UNKNOWN (unknown = !known).
func truth(v value) (t, known bool) {
	switch v.kind {
	case vNull:
		return false, false
	case vBool:
		return v.b, true
	}
	n, ok := v.asNumber()
	if !ok {
		return false, true // a non-numeric string is 0, i.e. false, in MySQL
	}
	return n.Sign() != 0, true
}

func (l logicNode) eval(img *Image) (value, error) {
	a, err := l.l.eval(img)
	if err != nil {
		return null, err
	}
	b, err := l.r.eval(img)
	if err != nil {
		return null, err
	}
	at, ak := truth(a)
	bt, bk := truth(b)
	if l.op == "AND" {
		if (ak && !at) || (bk && !bt) {
			return boolean(false), nil
		}
		if ak && bk {
			return boolean(true), nil
		}
		return null, nil
	}
	if (ak && at) || (bk && bt) {
		return boolean(true), nil
	}
	if ak && bk {
		return boolean(false), nil
	}
	return null, nil
}

func (n notNode) eval(img *Image) (value, error) {
	v, err := n.x.eval(img)
	if err != nil {
		return null, err
	}
	t, known := truth(v)
	if !known {
		return null, nil
	}
	return boolean(!t), nil
}

func (n isNullNode) eval(img *Image) (value, error) {
	v, err := n.x.eval(img)
	if err != nil {
		return null, err
	}
	return boolean((v.kind == vNull) != n.not), nil
}

func (n inNode) eval(img *Image) (value, error) {
	x, err := n.x.eval(img)
	if err != nil {
		return null, err
	}
	sawNull := x.kind == vNull
	for _, e := range n.list {
		v, err := e.eval(img)
		if err != nil {
			return null, err
		}
		r, ok := compare(x, v)
		if !ok {
			sawNull = true
			continue
		}
		if r == 0 {
			return boolean(!n.not), nil
		}
	}
	if sawNull {
		return null, nil
	}
	return boolean(n.not), nil
}

func (n betweenNode) eval(img *Image) (value, error) {
	ge, err := cmpNode{op: ">=", l: n.x, r: n.lo}.eval(img)
	if err != nil {
		return null, err
	}
	le, err := cmpNode{op: "<=", l: n.x, r: n.hi}.eval(img)
	if err != nil {
		return null, err
	}
	v, _ := logicNode{op: "AND", l: literal(ge), r: literal(le)}.eval(img)
	if n.not {
		return notNode{x: literal(v)}.eval(img)
	}
	return v, nil
}

func (n likeNode) eval(img *Image) (value, error) {
	x, err := n.x.eval(img)
	if err != nil {
		return null, err
	}
	if x.kind == vNull {
		return null, nil
	}
	s := x.str
	if x.kind != vStr {
		s = x.num.FloatString(0)
		if x.kind == vNum && !x.num.IsInt() {
			s = strings.TrimRight(x.num.FloatString(30), "0")
		}
	}
	return boolean(like([]rune(strings.ToLower(s)), []rune(strings.ToLower(n.pattern))) != n.not), nil
}

// like matches SQL LIKE: % any run, _ one character, \ escapes.
func like(s, p []rune) bool {
	for len(p) > 0 {
		switch p[0] {
		case '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if like(s[i:], p) {
					return true
				}
			}
			return false
		case '_':
			if len(s) == 0 {
				return false
			}
		case '\\':
			if len(p) > 1 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
		}
		s, p = s[1:], p[1:]
	}
	return len(s) == 0
}

// ---- lexer and parser ----

type tkind uint8

const (
	tEOF tkind = iota
	tIdent
	tKeyword
	tString
	tNumber
	tOp
)

type token struct {
	kind tkind
	text string
	pos  int
}

var keywords = map[string]bool{"AND": true, "OR": true, "NOT": true, "IS": true, "NULL": true, "IN": true,
	"BETWEEN": true, "LIKE": true, "TRUE": true, "FALSE": true}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					b.WriteByte(s[j])
					continue
				}
				if s[j] == byte(c) {
					if j+1 < len(s) && s[j+1] == byte(c) { // '' inside a literal
						b.WriteByte(s[j])
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string starting at offset %d", i)
			}
			out = append(out, token{tString, b.String(), i})
			i = j + 1
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return nil, fmt.Errorf("unterminated `identifier` at offset %d", i)
			}
			out = append(out, token{tIdent, s[i+1 : i+1+j], i})
			i += j + 2
		case c >= '0' && c <= '9' || c == '.' || (c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && prevAllowsSign(out)):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				((s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E'))) {
				j++
			}
			out = append(out, token{tNumber, s[i:j], i})
			i = j
		case c == '_' || unicode.IsLetter(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '$' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			w := s[i:j]
			if keywords[strings.ToUpper(w)] {
				out = append(out, token{tKeyword, strings.ToUpper(w), i})
			} else {
				out = append(out, token{tIdent, w, i})
			}
			i = j
		default:
			for _, op := range []string{"<=>", "<=", ">=", "<>", "!=", "=", "<", ">", "(", ")", ","} {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, token{tOp, op, i})
					i += len(op)
					goto next
				}
			}
			return nil, fmt.Errorf("unexpected character %q at offset %d (supported: comparisons, IS NULL, IN, BETWEEN, LIKE, AND, OR, NOT, parentheses)", c, i)
		next:
		}
	}
	return append(out, token{tEOF, "end of expression", len(s)}), nil
}

// prevAllowsSign: a '-' starts a negative number only where an operand
// may begin (there is no arithmetic in filters).
func prevAllowsSign(prev []token) bool {
	if len(prev) == 0 {
		return true
	}
	t := prev[len(prev)-1]
	return t.kind == tOp && t.text != ")" || t.kind == tKeyword
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }
func (p *parser) isKw(k string) bool {
	return p.peek().kind == tKeyword && p.peek().text == k
}
func (p *parser) isOp(o string) bool { return p.peek().kind == tOp && p.peek().text == o }

func (p *parser) expect(kind tkind, text string) error {
	t := p.next()
	if t.kind != kind || t.text != text {
		return fmt.Errorf("expected %s at offset %d, found %q", text, t.pos, t.text)
	}
	return nil
}

func (p *parser) or() (node, error) {
	l, err := p.and()
	for err == nil && p.isKw("OR") {
		p.next()
		var r node
		if r, err = p.and(); err == nil {
			l = logicNode{op: "OR", l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) and() (node, error) {
	l, err := p.not()
	for err == nil && p.isKw("AND") {
		p.next()
		var r node
		if r, err = p.not(); err == nil {
			l = logicNode{op: "AND", l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) not() (node, error) {
	if p.isKw("NOT") {
		p.next()
		x, err := p.not()
		return notNode{x: x}, err
	}
	return p.predicate()
}

func (p *parser) predicate() (node, error) {
	x, err := p.operand()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tOp && t.text != "(" && t.text != ")" && t.text != "," {
		p.next()
		r, err := p.operand()
		return cmpNode{op: t.text, l: x, r: r}, err
	}
	if p.isKw("IS") {
		p.next()
		not := false
		if p.isKw("NOT") {
			p.next()
			not = true
		}
		return isNullNode{x: x, not: not}, p.expect(tKeyword, "NULL")
	}
	not := false
	if p.isKw("NOT") {
		p.next()
		not = true
	}
	switch {
	case p.isKw("IN"):
		p.next()
		if err := p.expect(tOp, "("); err != nil {
			return nil, err
		}
		n := inNode{x: x, not: not}
		for {
			e, err := p.operand()
			if err != nil {
				return nil, err
			}
			n.list = append(n.list, e)
			if p.isOp(",") {
				p.next()
				continue
			}
			return n, p.expect(tOp, ")")
		}
	case p.isKw("BETWEEN"):
		p.next()
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tKeyword, "AND"); err != nil {
			return nil, err
		}
		hi, err := p.operand()
		return betweenNode{x: x, lo: lo, hi: hi, not: not}, err
	case p.isKw("LIKE"):
		p.next()
		t := p.next()
		if t.kind != tString {
			return nil, fmt.Errorf("LIKE wants a string pattern at offset %d", t.pos)
		}
		return likeNode{x: x, pattern: t.text, not: not}, nil
	}
	if not {
		return nil, fmt.Errorf("expected IN, BETWEEN or LIKE after NOT at offset %d", p.peek().pos)
	}
	return x, nil // a bare operand: true when non-zero, as in SQL
}

func (p *parser) operand() (node, error) {
	t := p.next()
	switch t.kind {
	case tIdent:
		return colRef(t.text), nil
	case tString:
		return literal(value{kind: vStr, str: t.text}), nil
	case tNumber:
		r, ok := new(big.Rat).SetString(t.text)
		if !ok {
			return nil, fmt.Errorf("bad number %q at offset %d", t.text, t.pos)
		}
		return literal(value{kind: vNum, num: r}), nil
	case tKeyword:
		switch t.text {
		case "NULL":
			return literal(null), nil
		case "TRUE":
			return literal(boolean(true)), nil
		case "FALSE":
			return literal(boolean(false)), nil
		}
	case tOp:
		if t.text == "(" {
			x, err := p.or()
			if err != nil {
				return nil, err
			}
			return x, p.expect(tOp, ")")
		}
	}
	return nil, fmt.Errorf("unexpected %q at offset %d (want a column, a literal or a parenthesis)", t.text, t.pos)
}
