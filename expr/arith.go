package expr

import (
	"fmt"
	"math"
	"math/bits"
)

// Arithmetic as MySQL computes it: integers stay integers (BIGINT, or
// BIGINT UNSIGNED when an operand is unsigned) and an overflow is MySQL's
// error 1690; with a DECIMAL operand the result is an exact DECIMAL whose
// precision and scale follow the server's rules (division adds
// div_precision_increment = 4 to the dividend's scale); with a DOUBLE or
// a string operand it is a DOUBLE. Division and MOD by zero are NULL.

// divPrecisionIncrement is the server's default div_precision_increment;
// the sessions computing in SQL must keep it.
const divPrecisionIncrement = 4

// numeric is how an operand of type t takes part in arithmetic: as an
// integer, decimal or double, with its digits and scale.
func numeric(t Type) (k Kind, digits, scale int) {
	switch t.Kind {
	case KindInt, KindUint:
		return t.Kind, t.prec, 0
	case KindDecimal:
		return KindDecimal, t.prec, int(t.Frac)
	case KindDate:
		return KindInt, 8, 0
	case KindDatetime, KindTime:
		d := 14
		if t.Kind == KindTime {
			d = 7
		}
		if t.Frac > 0 {
			return KindDecimal, d + int(t.Frac), int(t.Frac)
		}
		return KindInt, d, 0
	case KindNull:
		return KindNull, 1, 0
	}
	return KindDouble, 0, 0
}

func (a *arith) check(s Schema) (Type, error) {
	lt, err := a.l.check(s)
	if err != nil {
		return Type{}, err
	}
	rt, err := a.r.check(s)
	if err != nil {
		return Type{}, err
	}
	a.typ = arithType(a.op, lt, rt)
	if a.typ.Kind == KindDecimal && !fitsDecimalBuffer(a.op, lt, rt) {
		return Type{}, errAt(a.at, "%s %s %s may need more than 81 digits, where MySQL drops digits (its decimal buffer): CAST an operand to a DECIMAL with fewer digits", lt.Column, arithText[a.op], rt.Column)
	}
	return a.typ, nil
}

// fitsDecimalBuffer reports whether MySQL computes l op r exactly: its
// decimals hold 9 words of 9 digits, and a product or quotient that
// needs more loses digits (decimal.c: decimal_mul, do_div_mod), which Go
// would keep. Worked out from the types, so it holds for every value.
func fitsDecimalBuffer(op arithOp, l, r Type) bool {
	words := func(digits int) int { return (digits + 8) / 9 }
	_, ld, ls := numeric(l)
	_, rd, rs := numeric(r)
	li, ri := ld-ls, rd-rs
	switch op {
	case opMul:
		return words(li+ri)+words(ls)+words(rs) <= 9
	case opDiv:
		return words(li+rs)+1+words(divScale(ls, rs, divPrecisionIncrement)) <= 9
	}
	return true
}

func arithType(op arithOp, lt, rt Type) Type {
	lk, ld, ls := numeric(lt)
	rk, rd, rs := numeric(rt)
	nullable := lt.Nullable || rt.Nullable || op == opDiv || op == opIntDiv || op == opMod
	li, ri := ld-ls, rd-rs
	if op == opIntDiv {
		// MariaDB shows DIV in as many characters as the dividend's integer
		// digits (no sign), at most 21; a double or string dividend has 21.
		k := KindInt
		if lk == KindUint || rk == KindUint {
			k = KindUint
		}
		w := li
		if lk == KindDouble || lk == KindNull {
			w = 21
		}
		w = min(max(w, 1), 21)
		return intTypeWidth(k, min(w, 20), w, nullable)
	}
	switch {
	case lk == KindNull && rk == KindNull, lk == KindDouble || rk == KindDouble:
		return doubleType(nullable)
	case lk == KindNull || rk == KindNull:
		if lk == KindNull {
			lk, ld, ls, li = rk, rd, rs, rd-rs
		} else {
			rk, rd, rs, ri = lk, ld, ls, ld-ls
		}
	}
	if lk == KindDecimal || rk == KindDecimal || op == opDiv {
		switch op {
		case opAdd, opSub:
			sc := max(ls, rs)
			return decimalType(max(li, ri)+1+sc, sc, nullable)
		case opMul:
			return decimalType(ld+rd, ls+rs, nullable)
		case opDiv:
			sc := ls + divPrecisionIncrement
			return decimalType(ld+rs+divPrecisionIncrement, sc, nullable)
		}
		return decimalType(max(ld, rd), max(ls, rs), nullable) // MOD
	}
	k := KindInt
	if lk == KindUint || rk == KindUint && op != opMod {
		k = KindUint
	}
	switch op {
	case opAdd, opSub:
		return intType(k, max(ld, rd)+1, nullable)
	case opMul:
		return intType(k, ld+rd, nullable)
	}
	return intType(k, max(ld, rd), nullable)
}

func (a *arith) eval(row []Datum) (Datum, error) {
	x, err := a.l.eval(row)
	if err != nil || x.IsNull() {
		return Null, err
	}
	y, err := a.r.eval(row)
	if err != nil || y.IsNull() {
		return Null, err
	}
	switch a.typ.Kind {
	case KindDouble:
		return a.double(toDouble(x), toDouble(y))
	case KindDecimal:
		if r, ok := a.small(x, y); ok {
			return r, nil
		}
		return a.decimal(toDec(x), toDec(y))
	}
	if a.op == opIntDiv {
		return a.intDiv(x, y)
	}
	if (x.Kind == KindInt || x.Kind == KindUint) && (y.Kind == KindInt || y.Kind == KindUint) {
		return a.integer(x, y)
	}
	// temporal operands of an integer result: their digits
	return a.integer(intDatum(toDec(x)), intDatum(toDec(y)))
}

func intDatum(d dec) Datum {
	if i, ok := d.int64(); ok {
		return Datum{Kind: KindInt, I: i}
	}
	u, _ := d.uint64()
	return Datum{Kind: KindUint, U: u}
}

func (a *arith) outOfRange() error {
	t := "BIGINT"
	if a.typ.Kind == KindUint {
		t = "BIGINT UNSIGNED"
	}
	return fmt.Errorf("%s value is out of range in '%s' (MySQL error 1690)", t, a.sql(func(n string) string { return "`" + n + "`" }))
}

func (a *arith) double(x, y float64) (Datum, error) {
	var r float64
	switch a.op {
	case opAdd:
		r = x + y
	case opSub:
		r = x - y
	case opMul:
		r = x * y
	case opDiv:
		if y == 0 {
			return Null, nil
		}
		r = x / y
	case opMod:
		if y == 0 {
			return Null, nil
		}
		r = math.Mod(x, y)
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return Null, fmt.Errorf("DOUBLE value is out of range in '%s' (MySQL error 1690)", a.sql(func(n string) string { return "`" + n + "`" }))
	}
	return Datum{Kind: KindDouble, F: r}, nil
}

// small computes a decimal result without math/big when both operands
// fit (see small); ok is false when the exact path must decide.
func (a *arith) small(x, y Datum) (Datum, bool) {
	xs, ok1 := smallOf(x)
	ys, ok2 := smallOf(y)
	if !ok1 || !ok2 {
		return Null, false
	}
	var r small
	ok := false
	switch a.op {
	case opAdd:
		r, ok = xs.add(ys)
	case opSub:
		r, ok = xs.sub(ys)
	case opMul:
		r, ok = xs.mul(ys)
	case opDiv:
		if ys.v == 0 {
			return Null, true
		}
		r, ok = xs.quo(ys, divScale(xs.scale, ys.scale, divPrecisionIncrement))
	case opMod:
		if ys.v == 0 {
			return Null, true
		}
		r, ok = xs.rem(ys)
	}
	if !ok {
		return Null, false
	}
	return r.datum(), true
}

func (a *arith) decimal(x, y dec) (Datum, error) {
	r, null := a.exact(x, y)
	if null {
		return Null, nil
	}
	return r.datum(), nil
}

// exact computes x op y exactly (a quotient at MySQL's division scale);
// null is a division or MOD by zero.
func (a *arith) exact(x, y dec) (r dec, null bool) {
	switch a.op {
	case opAdd:
		return x.add(y), false
	case opSub:
		return x.sub(y), false
	case opMul:
		return x.mul(y), false
	}
	if y.sign() == 0 {
		return dec{}, true
	}
	if a.op == opDiv {
		return x.quoTrunc(y, divScale(x.scale, y.scale, divPrecisionIncrement)), false
	}
	return x.rem(y), false
}

// integer computes + - * % of two integers in 65 bits of range, then
// checks the result fits the result type.
func (a *arith) integer(x, y Datum) (Datum, error) {
	if x.Kind == KindInt && y.Kind == KindInt && a.typ.Kind == KindInt {
		var r int64
		switch a.op {
		case opAdd:
			r = x.I + y.I
			if (r > x.I) != (y.I > 0) {
				return Null, a.outOfRange()
			}
		case opSub:
			r = x.I - y.I
			if (r < x.I) != (y.I > 0) {
				return Null, a.outOfRange()
			}
		case opMul:
			hi, lo := bits.Mul64(abs64(x.I), abs64(y.I))
			limit := uint64(math.MaxInt64)
			if (x.I < 0) != (y.I < 0) {
				limit++
			}
			if hi != 0 || lo > limit {
				return Null, a.outOfRange()
			}
			r = x.I * y.I
		case opMod:
			if y.I == 0 {
				return Null, nil
			}
			if y.I == -1 {
				return Datum{Kind: KindInt}, nil
			}
			r = x.I % y.I
		}
		return Datum{Kind: KindInt, I: r}, nil
	}
	// A mix with unsigned: exact arithmetic, then the range check.
	r, null := a.exact(toDec(x), toDec(y))
	if null {
		return Null, nil
	}
	return a.fit(r)
}

// fit gives an exact integer result as the result type, or error 1690.
func (a *arith) fit(r dec) (Datum, error) {
	if a.typ.Kind == KindUint {
		if u, ok := r.uint64(); ok {
			return Datum{Kind: KindUint, U: u}, nil
		}
		return Null, a.outOfRange()
	}
	if i, ok := r.int64(); ok {
		return Datum{Kind: KindInt, I: i}, nil
	}
	return Null, a.outOfRange()
}

// intDiv is DIV: the quotient truncated toward zero. Non-integer operands
// divide exactly first (a double through its decimal digits).
func (a *arith) intDiv(x, y Datum) (Datum, error) {
	dx, dy := toDec(x), toDec(y)
	if dy.sign() == 0 {
		return Null, nil
	}
	q := dx.quoTrunc(dy, 0)
	return a.fit(q)
}

// abs64 is |i| as an unsigned magnitude (MinInt64 included).
func abs64(i int64) uint64 {
	if i < 0 {
		return uint64(-i)
	}
	return uint64(i)
}

func (n *neg) check(s Schema) (Type, error) {
	t, err := n.x.check(s)
	if err != nil {
		return Type{}, err
	}
	k, d, sc := numeric(t)
	switch {
	case isTemporal(t.Kind) && t.Frac == 0:
		// MariaDB negates a date or time as DECIMAL(10,0), a datetime as DECIMAL(19,0)
		n.typ = decimalType(map[Kind]int{KindDate: 10, KindTime: 10, KindDatetime: 19}[t.Kind], 0, t.Nullable)
		return n.typ, nil
	}
	switch k {
	case KindDouble:
		n.typ = doubleType(t.Nullable)
	case KindDecimal:
		n.typ = decimalType(d, sc, t.Nullable)
	case KindNull:
		n.typ = doubleType(true)
	default:
		// shown a character wider than the operand
		w := d + 1
		if k == KindInt {
			w++
		}
		n.typ = intTypeWidth(KindInt, d+1, w, t.Nullable)
	}
	return n.typ, nil
}

func (n *neg) eval(row []Datum) (Datum, error) {
	x, err := n.x.eval(row)
	if err != nil || x.IsNull() {
		return Null, err
	}
	switch n.typ.Kind {
	case KindDouble:
		return Datum{Kind: KindDouble, F: -toDouble(x)}, nil
	case KindDecimal:
		return toDec(x).neg().datum(), nil
	}
	r := toDec(x).neg()
	if i, ok := r.int64(); ok {
		return Datum{Kind: KindInt, I: i}, nil
	}
	return Null, fmt.Errorf("BIGINT value is out of range in '%s' (MySQL error 1690)", n.sql(func(c string) string { return "`" + c + "`" }))
}
