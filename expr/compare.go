package expr

import (
	"fmt"
	"strings"
)

// cmpHow is how two operands compare, decided from their types as
// MySQL's Arg_comparator decides it.
type cmpHow uint8

const (
	cmpByInt      cmpHow = iota // both integers (signed or unsigned)
	cmpByDecimal                // exact: decimals and integers
	cmpByDouble                 // a double, or a string against a number
	cmpByString                 // character strings, by a collation
	cmpByBytes                  // a binary string: bytes
	cmpByDatetime               // a date or datetime, against a temporal value or a string
	cmpByTime                   // two times, or a time against a string
)

func isNumeric(k Kind) bool {
	return k == KindInt || k == KindUint || k == KindDecimal || k == KindDouble
}
func isText(k Kind) bool { return k == KindString || k == KindBytes || k == KindJSON }
func isTemporal(k Kind) bool {
	return k == KindDate || k == KindDatetime || k == KindTime
}

// coercible reports whether n's collation gives way to the other
// operand's: a literal's (or a constant's) does, a column's does not.
func coercible(n node) bool { return isConst(n) }

// prepare decides how c compares l and r (of types a and b), and by which
// collation.
func (c *compare) prepare(l, r node, a, b Type, at int) error {
	c.lt, c.rt = a, b
	var err error
	c.how, c.coll, err = comparison(l, r, a, b, at)
	return err
}

// comparison decides how l and r (of types a and b) compare, and by which
// collation.
func comparison(l, r node, a, b Type, at int) (cmpHow, *collation, error) {
	ka, kb := a.Kind, b.Kind
	if ka == KindNull {
		ka = kb
	}
	if kb == KindNull {
		kb = ka
	}
	switch {
	case ka == KindNull:
		return cmpByInt, nil, nil
	case ka == KindJSON || kb == KindJSON:
		// MariaDB's JSON is text, MySQL 8's compares as JSON: no one meaning
		return 0, nil, errAt(at, "comparing a JSON column is not offered (MySQL 8 compares JSON documents, not their text): compare CAST(x AS CHAR) or a value extracted from it")
	case isText(ka) && isText(kb):
		if ka == KindBytes || kb == KindBytes {
			return cmpByBytes, nil, nil
		}
		coll, err := aggregateCollation(l, r, a, b, at)
		return cmpByString, coll, err
	case isTemporal(ka) || isTemporal(kb):
		if ka == KindTime && (kb == KindTime || isText(kb)) || kb == KindTime && isText(ka) {
			return cmpByTime, nil, nil
		}
		if isNumeric(ka) || isNumeric(kb) {
			return cmpByDecimal, nil, nil
		}
		if ka == KindTime || kb == KindTime {
			return 0, nil, errAt(at, "comparing a TIME with a date or datetime is not offered (MySQL mixes in the current date): CAST one side")
		}
		return cmpByDatetime, nil, nil
	case isExact(ka) && isText(kb) || isExact(kb) && isText(ka):
		// MariaDB compares a string with an integer or a DECIMAL exactly,
		// as decimals (MySQL 8: as doubles, but an integer column with a
		// constant converts the constant to the column's type)
		return cmpByDecimal, nil, nil
	case ka == KindDouble || kb == KindDouble || isText(ka) || isText(kb):
		return cmpByDouble, nil, nil
	case ka == KindDecimal || kb == KindDecimal:
		return cmpByDecimal, nil, nil
	}
	return cmpByInt, nil, nil
}

// isExact: integers and decimals compare without a double.
func isExact(k Kind) bool { return k == KindInt || k == KindUint || k == KindDecimal }

// aggregateCollation is the collation two strings compare by (see
// pickCollation).
func aggregateCollation(l, r node, a, b Type, at int) (*collation, error) {
	ca, cb := a.Coll, b.Coll
	if a.Kind == KindJSON {
		ca = "utf8mb4_bin"
	}
	if b.Kind == KindJSON {
		cb = "utf8mb4_bin"
	}
	name, err := pickCollation(ca, cb, coercible(l), coercible(r))
	if err != nil {
		return nil, errAt(at, "%v", err)
	}
	if err := literalConverts(l, ca, name); err != nil {
		return nil, errAt(at, "%v", err)
	}
	if err := literalConverts(r, cb, name); err != nil {
		return nil, errAt(at, "%v", err)
	}
	coll, ok := findCollation(name)
	if !ok {
		return nil, errAt(at, "collation %s is not offered for comparisons (offered: utf8mb4_bin, utf8mb4_general_ci, utf8mb3_bin, utf8mb3_general_ci, latin1_bin, latin1_swedish_ci): compare CAST(column AS CHAR) instead (the column converted to utf8mb4)", name)
	}
	return coll, nil
}

// pickCollation is MySQL's collation aggregation of two strings
// (DTCollation::aggregate): a column's collation wins over a literal's;
// of two columns of one character set a _bin collation wins; of two
// character sets the Unicode one (utf8mb4 over utf8mb3 over latin1 and
// ascii) wins, its value converted; anything else is error 1267.
func pickCollation(ca, cb string, aLit, bLit bool) (string, error) {
	switch {
	case ca == "":
		return cb, nil
	case cb == "" || strings.EqualFold(ca, cb):
		return ca, nil
	case bLit && !aLit:
		return ca, nil
	case aLit && !bLit:
		return cb, nil
	}
	csa, csb := charsetOf(strings.ToLower(ca)), charsetOf(strings.ToLower(cb))
	if csa == csb {
		if strings.HasSuffix(strings.ToLower(ca), "_bin") {
			return ca, nil
		}
		if strings.HasSuffix(strings.ToLower(cb), "_bin") {
			return cb, nil
		}
	} else if ra, rb := unicodeRank[csa], unicodeRank[csb]; ra != rb && max(ra, rb) >= 2 {
		if ra > rb {
			return ca, nil
		}
		return cb, nil
	}
	return "", fmt.Errorf("the strings have collations %s and %s, which MySQL refuses to mix (error 1267): CAST one side or use columns of one collation", ca, cb)
}

// literalConverts refuses a string literal in collation from that gives
// way to collation to (a column's) while holding characters to's
// character set lacks: MySQL converts the literal and refuses the loss
// (error 1267, 'ǅ' against a latin1 column), where converting it would
// compare '?'.
func literalConverts(n node, from, to string) error {
	lit, ok := n.(*literal)
	if !ok || lit.d.Kind != KindString || strings.EqualFold(from, to) {
		return nil
	}
	cs, err := charsetFor(strings.ToLower(to))
	if err != nil {
		return nil // compared by another rule, or refused there
	}
	if c, lacks := cs.lacks(lit.d.S); lacks {
		return fmt.Errorf("the literal %q holds %q, which the %s column's character set %s lacks: MySQL refuses the comparison (error 1267, Illegal mix of collations); compare CAST(column AS CHAR) instead (the column converted to utf8mb4), or a literal the column can hold", lit.d.S, c, to, cs.name)
	}
	return nil
}

// unicodeRank orders character sets by what they can hold, for
// pickCollation.
var unicodeRank = map[string]int{"ascii": 0, "latin1": 1, "utf8mb3": 2, "utf8mb4": 3}

func (c *compare) check(s Schema) (Type, error) {
	a, err := c.l.check(s)
	if err != nil {
		return Type{}, err
	}
	b, err := c.r.check(s)
	if err != nil {
		return Type{}, err
	}
	if err = c.prepare(c.l, c.r, a, b, c.at); err != nil {
		return Type{}, err
	}
	return boolType(c.op != cmpNSEQ && (a.Nullable || b.Nullable)), nil
}

func (c *compare) eval(row []Datum) (Datum, error) {
	a, err := c.l.eval(row)
	if err != nil {
		return Null, err
	}
	b, err := c.r.eval(row)
	if err != nil {
		return Null, err
	}
	return c.apply(a, b), nil
}

func boolDatum(b bool) Datum {
	if b {
		return Datum{Kind: KindInt, I: 1}
	}
	return Datum{Kind: KindInt}
}

// apply compares two values already computed.
func (c *compare) apply(a, b Datum) Datum {
	if a.IsNull() || b.IsNull() {
		if c.op == cmpNSEQ {
			return boolDatum(a.IsNull() && b.IsNull())
		}
		return Null
	}
	r, ok := c.order(a, b)
	if !ok {
		return Null
	}
	switch c.op {
	case cmpEQ, cmpNSEQ:
		return boolDatum(r == 0)
	case cmpNE:
		return boolDatum(r != 0)
	case cmpLT:
		return boolDatum(r < 0)
	case cmpLE:
		return boolDatum(r <= 0)
	case cmpGT:
		return boolDatum(r > 0)
	}
	return boolDatum(r >= 0)
}

// order compares two non-NULL values: -1, 0 or 1 (ok is for orders that
// can be unknown).
func (c *compare) order(a, b Datum) (int, bool) {
	switch c.how {
	case cmpByInt:
		return cmpInts(a, b), true
	case cmpByDecimal:
		// A quotient compares at its type's scale in a comparison operator
		// and NULLIF (MariaDB: x/3 = 0.3333 is 1), with all its digits in
		// IN, BETWEEN and a simple CASE, as arithmetic goes on with them.
		if !c.allDigits {
			a, b = final(a, c.lt), final(b, c.rt)
		}
		if x, ok := smallOf(a); ok {
			if y, ok := smallOf(b); ok {
				if d, ok := x.sub(y); ok {
					return cmp3(d.v < 0, d.v > 0), true
				}
			}
		}
		return toDec(a).cmp(toDec(b)), true
	case cmpByDouble:
		x, y := toDouble(a), toDouble(b)
		return cmp3(x < y, x > y), true
	case cmpByString:
		return c.coll.compare(a.S, b.S), true
	case cmpByBytes:
		return strings.Compare(toText(a), toText(b)), true
	case cmpByDatetime:
		// a string that is not a date compares as the zero date
		x, ok := datetimeKey(a)
		if !ok {
			x = zeroKey
		}
		y, ok := datetimeKey(b)
		if !ok {
			y = zeroKey
		}
		return strings.Compare(x, y), true
	case cmpByTime:
		x, _ := timeMicros(a) // 0 for a string that is not a time
		y, _ := timeMicros(b)
		return cmp3(x < y, x > y), true
	}
	panic(fmt.Sprintf("expr: comparison %d", c.how))
}

func cmpInts(a, b Datum) int {
	switch {
	case a.Kind == KindUint && b.Kind == KindUint:
		return cmp3(a.U < b.U, a.U > b.U)
	case a.Kind == KindUint:
		if b.I < 0 {
			return 1
		}
		return cmp3(a.U < uint64(b.I), a.U > uint64(b.I))
	case b.Kind == KindUint:
		if a.I < 0 {
			return -1
		}
		return cmp3(uint64(a.I) < b.U, uint64(a.I) > b.U)
	}
	return cmp3(a.I < b.I, a.I > b.I)
}

func cmp3(lt, gt bool) int {
	switch {
	case lt:
		return -1
	case gt:
		return 1
	}
	return 0
}

func (n *isNull) check(s Schema) (Type, error) {
	if _, err := n.x.check(s); err != nil {
		return Type{}, err
	}
	return boolType(false), nil
}

func (n *isNull) eval(row []Datum) (Datum, error) {
	v, err := n.x.eval(row)
	if err != nil {
		return Null, err
	}
	return boolDatum(v.IsNull() != n.not), nil
}

func (n *isTruth) check(s Schema) (Type, error) {
	if _, err := n.x.check(s); err != nil {
		return Type{}, err
	}
	return boolType(false), nil
}

func (n *isTruth) eval(row []Datum) (Datum, error) {
	v, err := n.x.eval(row)
	if err != nil {
		return Null, err
	}
	t, known := truth(v)
	var r bool
	switch n.want {
	case truthTrue:
		r = known && t
	case truthFalse:
		r = known && !t
	default:
		r = !known
	}
	return boolDatum(r != n.not), nil
}

func (n *in) check(s Schema) (Type, error) {
	a, err := n.x.check(s)
	if err != nil {
		return Type{}, err
	}
	nullable := a.Nullable
	n.cmps = make([]compare, len(n.list))
	for i, e := range n.list {
		b, err := e.check(s)
		if err != nil {
			return Type{}, err
		}
		nullable = nullable || b.Nullable
		c := &n.cmps[i]
		c.op = cmpEQ
		if err = c.prepare(n.x, e, a, b, n.at); err != nil {
			return Type{}, err
		}
		c.allDigits = true
	}
	return boolType(nullable), nil
}

// eval: TRUE if x equals an element; else NULL if x or an element is
// NULL; else FALSE (NOT IN inverts TRUE and FALSE).
func (n *in) eval(row []Datum) (Datum, error) {
	x, err := n.x.eval(row)
	if err != nil {
		return Null, err
	}
	if x.IsNull() {
		return Null, nil
	}
	sawNull := false
	for i, e := range n.list {
		v, err := e.eval(row)
		if err != nil {
			return Null, err
		}
		if v.IsNull() {
			sawNull = true
			continue
		}
		if r, ok := n.cmps[i].order(x, v); !ok {
			sawNull = true
		} else if r == 0 {
			return boolDatum(!n.not), nil
		}
	}
	if sawNull {
		return Null, nil
	}
	return boolDatum(n.not), nil
}

func (n *between) check(s Schema) (Type, error) {
	a, err := n.x.check(s)
	if err != nil {
		return Type{}, err
	}
	lo, err := n.lo.check(s)
	if err != nil {
		return Type{}, err
	}
	hi, err := n.hi.check(s)
	if err != nil {
		return Type{}, err
	}
	n.ge = compare{op: cmpGE}
	n.le = compare{op: cmpLE}
	if err = n.ge.prepare(n.x, n.lo, a, lo, n.at); err != nil {
		return Type{}, err
	}
	if err = n.le.prepare(n.x, n.hi, a, hi, n.at); err != nil {
		return Type{}, err
	}
	n.ge.allDigits, n.le.allDigits = true, true
	return boolType(a.Nullable || lo.Nullable || hi.Nullable), nil
}

// eval: x >= lo AND x <= hi in three-valued logic.
func (n *between) eval(row []Datum) (Datum, error) {
	x, err := n.x.eval(row)
	if err != nil {
		return Null, err
	}
	lo, err := n.lo.eval(row)
	if err != nil {
		return Null, err
	}
	hi, err := n.hi.eval(row)
	if err != nil {
		return Null, err
	}
	v := and3(n.ge.apply(x, lo), n.le.apply(x, hi))
	if n.not {
		return not3(v), nil
	}
	return v, nil
}
