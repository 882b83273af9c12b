package projections

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

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
