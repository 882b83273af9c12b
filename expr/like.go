package expr

import "unicode/utf8"

// LIKE as MySQL matches it: % any run of characters, _ one character,
// the escape character (\ unless ESCAPE says otherwise) makes the next
// one literal; characters compare by the operands' collation (a _ci one
// ignores case), but trailing spaces count (LIKE does not pad). With a
// binary string a character is a byte.

func (n *like) check(s Schema) (Type, error) {
	a, err := n.x.check(s)
	if err != nil {
		return Type{}, err
	}
	b, err := n.pat.check(s)
	if err != nil {
		return Type{}, err
	}
	n.xt, n.pt = a, b
	nullable := a.Nullable || b.Nullable
	if n.esc != nil {
		if !isConst(n.esc) {
			return Type{}, errAt(n.at, "LIKE's ESCAPE must be a constant character: write ESCAPE '|'")
		}
		if _, err := n.esc.check(s); err != nil {
			return Type{}, err
		}
		e, err := n.esc.eval(nil)
		if err != nil {
			return Type{}, err
		}
		if utf8.RuneCountInString(toText(e)) > 1 || e.IsNull() {
			return Type{}, errAt(n.at, "LIKE's ESCAPE must be one character, not %q", toText(e))
		}
	}
	switch {
	case a.Kind == KindBytes || b.Kind == KindBytes:
		n.coll = nil
	case isText(a.Kind) && isText(b.Kind):
		if n.coll, err = aggregateCollation(n.x, n.pat, a, b, n.at); err != nil {
			return Type{}, err
		}
	case isText(a.Kind) && a.Kind != KindJSON:
		if n.coll, err = aggregateCollation(n.x, n.pat, a, Type{}, n.at); err != nil {
			return Type{}, err
		}
	case isText(b.Kind) && b.Kind != KindJSON:
		if n.coll, err = aggregateCollation(n.x, n.pat, Type{}, b, n.at); err != nil {
			return Type{}, err
		}
	default:
		n.coll, _ = findCollation("utf8mb4_bin")
	}
	return boolType(nullable), nil
}

func (n *like) eval(row []Datum) (Datum, error) {
	x, err := n.x.eval(row)
	if err != nil {
		return Null, err
	}
	p, err := n.pat.eval(row)
	if err != nil {
		return Null, err
	}
	if x.IsNull() || p.IsNull() {
		return Null, nil
	}
	x, p = final(x, n.xt), final(p, n.pt) // as text, a quotient has its type's scale
	esc := '\\'
	if n.esc != nil {
		e, err := n.esc.eval(row)
		if err != nil {
			return Null, err
		}
		esc = -1
		if s := toText(e); s != "" {
			esc, _ = utf8.DecodeRuneInString(s)
		}
	}
	var m bool
	if n.coll == nil {
		m = likeBytes(toText(x), toText(p), esc)
	} else {
		m = likeRunes(toText(x), toText(p), esc, n.coll)
	}
	return boolDatum(m != n.not), nil
}

// likeRunes matches s against pattern p character by character. The
// wildcard algorithm backtracks only to the last %, so it is linear in
// practice and never exponential.
func likeRunes(s, p string, esc rune, c *collation) bool {
	si, pi := 0, 0
	starS, starP := -1, -1
	for si < len(s) {
		if pi < len(p) {
			pr, pn := utf8.DecodeRuneInString(p[pi:])
			escaped := pr == esc && pi+pn < len(p)
			if escaped {
				pr, pn = utf8.DecodeRuneInString(p[pi+pn:])
				pn += utf8.RuneLen(esc)
			}
			switch {
			case pr == '%' && !escaped:
				starP, starS = pi+pn, si
				pi += pn
				continue
			case pr == '_' && !escaped:
				_, sn := utf8.DecodeRuneInString(s[si:])
				si, pi = si+sn, pi+pn
				continue
			}
			sr, sn := utf8.DecodeRuneInString(s[si:])
			if c.equalRune(sr, pr) {
				si, pi = si+sn, pi+pn
				continue
			}
		}
		if starP < 0 {
			return false
		}
		_, sn := utf8.DecodeRuneInString(s[starS:])
		starS += sn
		si, pi = starS, starP
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

func likeBytes(s, p string, esc rune) bool {
	si, pi := 0, 0
	starS, starP := -1, -1
	for si < len(s) {
		if pi < len(p) {
			pc, pn := p[pi], 1
			escaped := rune(pc) == esc && pi+1 < len(p)
			if escaped {
				pc, pn = p[pi+1], 2
			}
			switch {
			case pc == '%' && !escaped:
				starP, starS = pi+1, si
				pi++
				continue
			case pc == '_' && !escaped:
				si, pi = si+1, pi+1
				continue
			}
			if s[si] == pc {
				si, pi = si+1, pi+pn
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		si, pi = starS, starP
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}
