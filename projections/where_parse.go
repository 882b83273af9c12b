package projections

import (
	"fmt"
	"math/big"
	"strings"
	"unicode"
)

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
			t, end, err := lexString(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i = end
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
// lexString scans the string literal opening at s[i] (its quote),
// returning it and the offset after its closing quote.
func lexString(s string, i int) (token, int, error) {
	quote := s[i]
	var b strings.Builder
	j := i + 1
	for ; j < len(s); j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
			b.WriteByte(s[j])
			continue
		}
		if s[j] == quote {
			if j+1 < len(s) && s[j+1] == quote { // '' inside a literal
				b.WriteByte(s[j])
				j++
				continue
			}
			break
		}
		b.WriteByte(s[j])
	}
	if j >= len(s) {
		return token{}, 0, fmt.Errorf("unterminated string starting at offset %d", i)
	}
	return token{tString, b.String(), i}, j + 1, nil
}

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
		return p.inList(inNode{x: x, not: not})
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

// inList parses the parenthesized list after IN into n.
func (p *parser) inList(n inNode) (node, error) {
	if err := p.expect(tOp, "("); err != nil {
		return nil, err
	}
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
