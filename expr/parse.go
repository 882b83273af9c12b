package expr

import (
	"fmt"
	"strings"
)

// The parser follows MySQL's grammar (sql_yacc.yy) for the subset it
// offers, so that precedence and associativity are the server's:
//
//	expr      := expr OR expr | expr XOR expr | expr AND expr | NOT expr | boolPri
//	boolPri   := boolPri IS [NOT] {NULL|TRUE|FALSE|UNKNOWN} | boolPri cmp predicate | predicate
//	predicate := bitExpr [NOT] IN (expr, …) | bitExpr [NOT] BETWEEN bitExpr AND predicate
//	           | bitExpr [NOT] LIKE simple [ESCAPE simple] | bitExpr
//	bitExpr   := bitExpr {+|-} bitExpr | bitExpr {*|/|DIV|MOD|%} bitExpr | simple
//	simple    := literal | column | call | (expr) | -simple | +simple | !simple | CASE … END | CAST(expr AS type)

type parser struct {
	text string
	toks []token
	i    int
}

// reserved are the words that are keywords here, never column names
// unless backquoted (all are reserved in MySQL too).
var reserved = map[string]bool{"NULL": true, "TRUE": true, "FALSE": true, "NOT": true, "AND": true, "OR": true,
	"XOR": true, "IS": true, "IN": true, "BETWEEN": true, "LIKE": true, "ESCAPE": false, "DIV": true, "MOD": true,
	"CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": false, "CAST": false, "AS": true,
	"UNKNOWN": false, "INTERVAL": true, "COLLATE": true, "BINARY": true, "REGEXP": true, "RLIKE": true}

func errAt(pos int, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

// isKw reports whether the next token is the keyword kw (an unquoted name).
func (p *parser) isKw(kw string) bool {
	t := p.peek()
	return t.kind == tIdent && !t.quoted && strings.EqualFold(t.text, kw)
}

func (p *parser) isKwAt(i int, kw string) bool {
	t := p.toks[i]
	return t.kind == tIdent && !t.quoted && strings.EqualFold(t.text, kw)
}

func (p *parser) isOp(op string) bool { t := p.peek(); return t.kind == tOp && t.text == op }

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "the end of the expression"
	case tString:
		return "a string"
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) expectKw(kw, fix string) error {
	if !p.isKw(kw) {
		t := p.peek()
		return errAt(t.pos, "expected %s, found %s: %s", kw, describe(t), fix)
	}
	p.next()
	return nil
}

func (p *parser) expectOp(op, fix string) error {
	if !p.isOp(op) {
		t := p.peek()
		return errAt(t.pos, "expected %q, found %s: %s", op, describe(t), fix)
	}
	p.next()
	return nil
}

// parse reads a whole expression text.
func parse(text string) (node, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{text: text, toks: toks}
	if p.peek().kind == tEOF {
		return nil, errAt(0, "empty expression: write a column name or an expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, errAt(t.pos, "unexpected %s after a complete expression: join expressions with an operator, or check the parentheses", describe(t))
	}
	return n, nil
}

func (p *parser) expr() (node, error) {
	l, err := p.xorExpr()
	for err == nil && (p.isKw("OR") || p.isOp("||")) {
		pos := p.next().pos
		var r node
		if r, err = p.xorExpr(); err == nil {
			l = &logic{op: opOr, l: l, r: r, at: pos}
		}
	}
	return l, err
}

func (p *parser) xorExpr() (node, error) {
	l, err := p.andExpr()
	for err == nil && p.isKw("XOR") {
		pos := p.next().pos
		var r node
		if r, err = p.andExpr(); err == nil {
			l = &logic{op: opXor, l: l, r: r, at: pos}
		}
	}
	return l, err
}

func (p *parser) andExpr() (node, error) {
	l, err := p.notExpr()
	for err == nil && (p.isKw("AND") || p.isOp("&&")) {
		pos := p.next().pos
		var r node
		if r, err = p.notExpr(); err == nil {
			l = &logic{op: opAnd, l: l, r: r, at: pos}
		}
	}
	return l, err
}

func (p *parser) notExpr() (node, error) {
	if p.isKw("NOT") {
		pos := p.next().pos
		x, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &not{x: x, at: pos}, nil
	}
	return p.boolPri()
}

var cmpOps = map[string]cmpOp{"=": cmpEQ, "<=>": cmpNSEQ, "<>": cmpNE, "!=": cmpNE, "<": cmpLT, "<=": cmpLE, ">": cmpGT, ">=": cmpGE}

func (p *parser) boolPri() (node, error) {
	l, err := p.predicate()
	for err == nil {
		t := p.peek()
		if op, ok := cmpOps[t.text]; ok && t.kind == tOp {
			p.next()
			var r node
			if r, err = p.predicate(); err == nil {
				l = &compare{op: op, l: l, r: r, at: t.pos}
			}
			continue
		}
		if !p.isKw("IS") {
			break
		}
		p.next()
		neg := false
		if p.isKw("NOT") {
			p.next()
			neg = true
		}
		w := p.next()
		switch {
		case w.kind == tIdent && !w.quoted && strings.EqualFold(w.text, "NULL"):
			l = &isNull{x: l, not: neg, at: t.pos}
		case w.kind == tIdent && !w.quoted && strings.EqualFold(w.text, "TRUE"):
			l = &isTruth{x: l, not: neg, want: truthTrue, at: t.pos}
		case w.kind == tIdent && !w.quoted && strings.EqualFold(w.text, "FALSE"):
			l = &isTruth{x: l, not: neg, want: truthFalse, at: t.pos}
		case w.kind == tIdent && !w.quoted && strings.EqualFold(w.text, "UNKNOWN"):
			l = &isTruth{x: l, not: neg, want: truthUnknown, at: t.pos}
		default:
			return nil, errAt(w.pos, "expected NULL, TRUE, FALSE or UNKNOWN after IS, found %s", describe(w))
		}
	}
	return l, err
}

func (p *parser) predicate() (node, error) {
	x, err := p.bitExpr(0)
	if err != nil {
		return nil, err
	}
	neg := false
	if p.isKw("NOT") && (p.isKwAt(p.i+1, "IN") || p.isKwAt(p.i+1, "BETWEEN") || p.isKwAt(p.i+1, "LIKE")) {
		p.next()
		neg = true
	}
	switch t := p.peek(); {
	case p.isKw("IN"):
		p.next()
		if err := p.expectOp("(", "IN takes a parenthesized list: x IN (1, 2)"); err != nil {
			return nil, err
		}
		n := &in{x: x, not: neg, at: t.pos}
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			n.list = append(n.list, e)
			if p.isOp(",") {
				p.next()
				continue
			}
			if err := p.expectOp(")", "separate the list's values with commas and close it"); err != nil {
				return nil, err
			}
			return n, nil
		}
	case p.isKw("BETWEEN"):
		p.next()
		lo, err := p.bitExpr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND", "write x BETWEEN low AND high"); err != nil {
			return nil, err
		}
		hi, err := p.predicate()
		if err != nil {
			return nil, err
		}
		return &between{x: x, lo: lo, hi: hi, not: neg, at: t.pos}, nil
	case p.isKw("LIKE"):
		p.next()
		pat, err := p.simple()
		if err != nil {
			return nil, err
		}
		n := &like{x: x, pat: pat, not: neg, at: t.pos}
		if p.isKw("ESCAPE") {
			p.next()
			if n.esc, err = p.simple(); err != nil {
				return nil, err
			}
		}
		return n, nil
	case p.isKw("REGEXP") || p.isKw("RLIKE"):
		return nil, errAt(t.pos, "REGEXP is not offered (its Go and MySQL engines differ): use LIKE")
	}
	return x, nil
}

// Binary arithmetic precedence levels, lowest first, as MySQL's bit_expr.
var arithLevels = [][]string{{"|"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%", "DIV", "MOD"}, {"^"}}

func (p *parser) arithOp(level int) (string, bool) {
	t := p.peek()
	for _, o := range arithLevels[level] {
		if t.kind == tOp && t.text == o || (o == "DIV" || o == "MOD") && p.isKw(o) {
			return o, true
		}
	}
	return "", false
}

func (p *parser) bitExpr(level int) (node, error) {
	if level == len(arithLevels) {
		return p.simple()
	}
	l, err := p.bitExpr(level + 1)
	for err == nil {
		o, ok := p.arithOp(level)
		if !ok {
			break
		}
		t := p.next()
		op, known := arithOps[o]
		if !known {
			return nil, errAt(t.pos, "the bitwise operator %s is not offered: use arithmetic (+ - * / DIV MOD)", o)
		}
		var r node
		if r, err = p.bitExpr(level + 1); err == nil {
			l = &arith{op: op, l: l, r: r, at: t.pos}
		}
	}
	return l, err
}

func (p *parser) simple() (node, error) {
	t := p.next()
	switch t.kind {
	case tEOF:
		return nil, errAt(t.pos, "the expression ends too early: an operand is missing")
	case tString:
		return stringLit(t.text, t.pos), nil
	case tInt, tDec, tFloat:
		return numberLit(t)
	case tOp:
		switch t.text {
		case "(":
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				return nil, errAt(p.peek().pos, "row values (a, b) are not offered: compare one value at a time")
			}
			if err := p.expectOp(")", "close the parenthesis"); err != nil {
				return nil, err
			}
			return &paren{x: x}, nil
		case "-":
			x, err := p.simple()
			if err != nil {
				return nil, err
			}
			return negate(x, t.pos), nil
		case "+":
			return p.simple()
		case "!":
			x, err := p.simple()
			if err != nil {
				return nil, err
			}
			return &not{x: x, at: t.pos, bang: true}, nil
		case "~":
			return nil, errAt(t.pos, "the bitwise operator ~ is not offered: use arithmetic")
		}
		return nil, errAt(t.pos, "unexpected %q where a value should be: write a column, a literal, a function call or a parenthesis", t.text)
	}
	// A name: keyword, function call or column.
	if t.quoted {
		return p.column(t)
	}
	up := strings.ToUpper(t.text)
	switch up {
	case "NULL":
		return nullLit(t.pos), nil
	case "TRUE":
		return boolLit(true, t.pos), nil
	case "FALSE":
		return boolLit(false, t.pos), nil
	case "CASE":
		return p.caseExpr(t)
	case "CAST":
		if p.isOp("(") {
			return p.castExpr(t)
		}
	case "INTERVAL":
		return nil, errAt(t.pos, "INTERVAL is not offered")
	case "BINARY":
		return nil, errAt(t.pos, "the BINARY operator is not offered: use CAST(x AS BINARY)")
	}
	if p.isOp("(") {
		return p.call(t)
	}
	if reserved[up] {
		return nil, errAt(t.pos, "%s is a reserved word, not a value: backquote a column of that name (`%s`)", up, t.text)
	}
	return p.column(t)
}

func (p *parser) column(t token) (node, error) {
	if p.isOp(".") {
		return nil, errAt(p.peek().pos, "qualified names are not offered: name a column of the source table alone")
	}
	return &colRef{name: t.text, at: t.pos}, nil
}

func (p *parser) args() ([]node, error) {
	if err := p.expectOp("(", "a call takes a parenthesized argument list"); err != nil {
		return nil, err
	}
	var out []node
	if p.isOp(")") {
		p.next()
		return out, nil
	}
	for {
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		if p.isOp(",") {
			p.next()
			continue
		}
		return out, p.expectOp(")", "separate arguments with commas and close the call")
	}
}

func (p *parser) call(name token) (node, error) {
	up := strings.ToUpper(name.text)
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	if b, ok := builtins[up]; ok {
		if len(args) < b.min || b.max >= 0 && len(args) > b.max {
			return nil, errAt(name.pos, "%s takes %s, not %d", up, argCount(b.min, b.max), len(args))
		}
		return b.make(args, name.pos), nil
	}
	if why, ok := unreproducible[up]; ok && (up != "UNIX_TIMESTAMP" || len(args) == 0) {
		return nil, errAt(name.pos, "%s() is not offered: it reads %s, not the source row, so the projector, a replay, a rebuild and verify would each compute another value; a read column must follow from the source row alone (for the time of a change, copy a column the source sets, e.g. one with DEFAULT CURRENT_TIMESTAMP or ON UPDATE CURRENT_TIMESTAMP)", up, why)
	}
	f, ok := lookup(up)
	if !ok {
		if s := suggest(up); s != "" {
			return nil, errAt(name.pos, "unknown function %s: did you mean %s?", up, s)
		}
		return nil, errAt(name.pos, "unknown function %s: the functions offered are listed in docs/expressions.md", up)
	}
	if len(args) < f.MinArgs || f.MaxArgs >= 0 && len(args) > f.MaxArgs {
		return nil, errAt(name.pos, "%s takes %s, not %d", up, argCount(f.MinArgs, f.MaxArgs), len(args))
	}
	return &call{f: f, args: args, at: name.pos}, nil
}

func argCount(lo, hi int) string {
	switch {
	case lo == hi && lo == 1:
		return "1 argument"
	case lo == hi:
		return fmt.Sprintf("%d arguments", lo)
	case hi < 0:
		return fmt.Sprintf("at least %d arguments", lo)
	}
	return fmt.Sprintf("%d to %d arguments", lo, hi)
}

func (p *parser) caseExpr(kw token) (node, error) {
	n := &caseNode{at: kw.pos}
	if !p.isKw("WHEN") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.operand = x
	}
	for p.isKw("WHEN") {
		p.next()
		w, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("THEN", "write CASE WHEN condition THEN value … END"); err != nil {
			return nil, err
		}
		th, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.whens = append(n.whens, w)
		n.thens = append(n.thens, th)
	}
	if len(n.whens) == 0 {
		return nil, errAt(p.peek().pos, "CASE needs at least one WHEN … THEN …")
	}
	if p.isKw("ELSE") {
		p.next()
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.els = e
	}
	if err := p.expectKw("END", "close CASE with END"); err != nil {
		return nil, err
	}
	return n, nil
}

func (p *parser) castExpr(kw token) (node, error) {
	p.next() // (
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectKw("AS", "write CAST(x AS type)"); err != nil {
		return nil, err
	}
	tt := p.next()
	if tt.kind != tIdent || tt.quoted {
		return nil, errAt(tt.pos, "expected a type after AS: SIGNED, UNSIGNED, DECIMAL(p,s), CHAR(n), BINARY(n), DATE, DATETIME(n), TIME(n) or DOUBLE")
	}
	c := &cast{x: x, at: kw.pos, to: strings.ToUpper(tt.text), tpos: tt.pos, n: -1, s: -1}
	switch c.to {
	case "SIGNED", "UNSIGNED":
		if p.isKw("INTEGER") || p.isKw("INT") {
			p.next()
		}
	case "DOUBLE":
		if p.isKw("PRECISION") {
			p.next()
		}
	case "DECIMAL", "CHAR", "BINARY", "DATETIME", "TIME":
		if p.isOp("(") {
			p.next()
			if c.n, err = p.smallInt(); err != nil {
				return nil, err
			}
			if c.to == "DECIMAL" && p.isOp(",") {
				p.next()
				if c.s, err = p.smallInt(); err != nil {
					return nil, err
				}
			}
			if err := p.expectOp(")", "close the type's parenthesis"); err != nil {
				return nil, err
			}
		}
	case "DATE":
	default:
		return nil, errAt(tt.pos, "CAST to %s is not offered: use SIGNED, UNSIGNED, DECIMAL(p,s), CHAR(n), BINARY(n), DATE, DATETIME(n), TIME(n) or DOUBLE", c.to)
	}
	if p.isKw("CHARACTER") || p.isKw("CHARSET") || p.isKw("COLLATE") {
		return nil, errAt(p.peek().pos, "a CAST's character set is not offered: the result is utf8mb4")
	}
	if err := p.expectOp(")", "close CAST's parenthesis"); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *parser) smallInt() (int, error) {
	t := p.next()
	if t.kind != tInt || len(t.text) > 4 {
		return 0, errAt(t.pos, "expected a small whole number, found %s", describe(t))
	}
	n := 0
	for _, c := range t.text {
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// suggest finds the offered function nearest to name, for a typo.
// unreproducible are MySQL functions whose value is not a function of
// their arguments (the clock, the session, chance): named for what they
// read, so the refusal says why rather than suggesting a near name.
var unreproducible = map[string]string{
	"NOW": "the clock", "SYSDATE": "the clock", "CURRENT_TIMESTAMP": "the clock", "LOCALTIME": "the clock",
	"LOCALTIMESTAMP": "the clock", "CURDATE": "the clock", "CURRENT_DATE": "the clock", "CURTIME": "the clock",
	"CURRENT_TIME": "the clock", "UTC_TIMESTAMP": "the clock", "UTC_DATE": "the clock", "UTC_TIME": "the clock",
	"UNIX_TIMESTAMP": "the clock (with no argument)",
	"RAND":           "a random number", "UUID": "a random number", "UUID_SHORT": "a counter of the server", "SYS_GUID": "a random number",
	"CONNECTION_ID": "the session", "USER": "the session", "CURRENT_USER": "the session", "SESSION_USER": "the session",
	"SYSTEM_USER": "the session", "DATABASE": "the session", "SCHEMA": "the session", "LAST_INSERT_ID": "the session",
	"ROW_COUNT": "the session", "FOUND_ROWS": "the session", "VERSION": "the server",
}

func suggest(name string) string {
	best, bestD := "", 3
	names := Functions()
	for n := range builtins {
		names = append(names, n)
	}
	for _, n := range names {
		if d := editDistance(name, n); d < bestD || d == bestD && best != "" && n < best {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
