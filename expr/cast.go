package expr

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// CAST as MySQL converts: to SIGNED/UNSIGNED an integer keeps its bits
// (CAST(-1 AS UNSIGNED) is 18446744073709551615), a decimal or double is
// rounded half away from zero, a string takes its integer prefix; to
// DECIMAL(p,s) a value is rounded to s digits and clamped to the
// precision's largest value; CHAR(n) and BINARY(n) cut to n characters
// (BINARY pads with \0); DATE, DATETIME(n) and TIME(n) read strings and
// numbers as MySQL does and are NULL for what is not one (MariaDB
// truncates extra fraction digits; MySQL 8 rounds them).

func (c *cast) check(s Schema) (Type, error) {
	t, err := c.x.check(s)
	if err != nil {
		return Type{}, err
	}
	c.xt = t
	null := t.Nullable
	switch c.to {
	case "SIGNED":
		// shown as wide as the operand's text, at most 20 characters
		c.typ = intTypeWidth(KindInt, 19, min(textLength(t), 20), null)
	case "UNSIGNED":
		c.typ = intType(KindUint, 20, null)
		c.typ.Column = "bigint(20) unsigned"
	case "DECIMAL":
		p, sc := 10, 0
		if c.n >= 0 {
			p = c.n
		}
		if c.s >= 0 {
			sc = c.s
		}
		if p < 1 || p > maxDecimalPrec || sc > maxDecimalScale || sc > p {
			return Type{}, errAt(c.tpos, "DECIMAL(%d,%d) is out of range: precision 1 to 65, scale 0 to 38 and at most the precision", p, sc)
		}
		c.typ = decimalType(p, sc, null)
	case "DOUBLE":
		c.typ = doubleType(null)
	case "CHAR":
		n := c.n
		if n < 0 {
			n = textLength(t)
		}
		c.typ = stringType(n, connCollation, null)
	case "BINARY":
		n := c.n
		if n < 0 {
			n = textLength(t)
		}
		c.typ = bytesType(n, null)
	case "DATE":
		c.typ = temporalType(KindDate, 0, true)
	case "DATETIME", "TIME":
		f := max(c.n, 0)
		if f > 6 {
			return Type{}, errAt(c.tpos, "%s(%d): at most 6 fraction digits", c.to, f)
		}
		k := KindDatetime
		if c.to == "TIME" {
			k = KindTime
		}
		c.typ = temporalType(k, f, true)
	}
	return c.typ, nil
}

func (c *cast) eval(row []Datum) (Datum, error) {
	v, err := c.x.eval(row)
	if err != nil || v.IsNull() {
		return Null, err
	}
	if c.to == "CHAR" || c.to == "BINARY" {
		v = final(v, c.xt) // a decimal as text has its type's scale
	}
	switch c.to {
	case "SIGNED", "UNSIGNED":
		i, u := castInt(v)
		if c.to == "SIGNED" {
			return Datum{Kind: KindInt, I: i}, nil
		}
		return Datum{Kind: KindUint, U: u}, nil
	case "DECIMAL":
		d := toDec(v).rescale(int(c.typ.Frac))
		if d.digits()-d.scale > c.typ.prec-int(c.typ.Frac) {
			limit := dec{scale: d.scale}
			limit.u.Sub(pow10(c.typ.prec), bigOne)
			if d.sign() < 0 {
				limit = limit.neg()
			}
			d = limit
		}
		return d.datum(), nil
	case "DOUBLE":
		return Datum{Kind: KindDouble, F: toDouble(v)}, nil
	case "CHAR":
		s := toText(v)
		if c.n >= 0 && utf8.RuneCountInString(s) > c.n {
			s = cutRunes(s, c.n)
		}
		return Datum{Kind: KindString, S: s, Coll: connCollation}, nil
	case "BINARY":
		s := toText(v)
		if c.n >= 0 {
			if len(s) > c.n {
				s = s[:c.n]
			}
			for len(s) < c.n {
				s += "\x00"
			}
		}
		return Datum{Kind: KindBytes, S: s}, nil
	case "DATE", "DATETIME":
		key, ok := temporalKey(v)
		if !ok {
			return Null, nil
		}
		if c.to == "DATE" {
			return Datum{Kind: KindDate, S: key[:10]}, nil
		}
		if c.typ.Frac == 0 {
			return Datum{Kind: KindDatetime, S: key[:19]}, nil
		}
		return Datum{Kind: KindDatetime, S: key[:20+int(c.typ.Frac)], Frac: c.typ.Frac}, nil
	case "TIME":
		us, ok := timeOf(v)
		if !ok {
			return Null, nil
		}
		us -= us % int64(math.Pow10(6-int(c.typ.Frac)))
		return Datum{Kind: KindTime, S: formatTime(us, int(c.typ.Frac)), Frac: c.typ.Frac}, nil
	}
	return Null, fmt.Errorf("CAST to %s", c.to)
}

// temporalKey reads a value as a datetime: a temporal value, a string, or
// a number YYYYMMDD[HHMMSS].
func temporalKey(v Datum) (string, bool) {
	switch v.Kind {
	case KindInt, KindUint, KindDecimal, KindDouble:
		s := toDec(v).truncate(0).String()
		if len(s) <= 8 {
			s = fmt.Sprintf("%08s", s)
		} else if len(s) <= 14 {
			s = fmt.Sprintf("%014s", s)
		}
		v = Datum{Kind: KindString, S: s}
	case KindTime:
		return "", false
	}
	return datetimeKey(v)
}

func timeOf(v Datum) (int64, bool) {
	switch v.Kind {
	case KindDatetime:
		us, _, ok := parseTime(v.S[11:])
		return us, ok
	case KindDate:
		return 0, true
	}
	return timeMicros(v)
}

var bigOne = pow10(0)

// castInt is v as CAST(… AS SIGNED) and CAST(… AS UNSIGNED) give it: the
// same 64 bits read either way.
func castInt(v Datum) (int64, uint64) {
	switch v.Kind {
	case KindInt:
		return v.I, uint64(v.I)
	case KindUint:
		return int64(v.U), v.U
	case KindString, KindBytes, KindJSON:
		p := numericPrefix(v.S)
		if i, err := strconv.ParseInt(intPart(p), 10, 64); err == nil {
			return i, uint64(i)
		}
		if u, err := strconv.ParseUint(intPart(p), 10, 64); err == nil {
			return int64(u), u
		}
		if len(p) > 0 && p[0] == '-' {
			return math.MinInt64, 1 << 63
		}
		return -1, math.MaxUint64
	}
	if v.Kind == KindDouble {
		// a double rounds half to even, and clamps
		f := math.RoundToEven(v.F)
		i, u := int64(0), uint64(0)
		switch {
		case f >= 9223372036854775807:
			i = math.MaxInt64
		case f <= -9223372036854775808:
			i = math.MinInt64
		default:
			i = int64(f)
		}
		switch {
		case f >= 18446744073709551615:
			u = math.MaxUint64
		case f > 0:
			u = uint64(f)
		}
		return i, u
	}
	// a decimal (or temporal digits) rounds half away from zero, and clamps
	d := toDec(v).rescale(0)
	i, u := int64(math.MaxInt64), uint64(math.MaxUint64)
	if n, ok := d.int64(); ok {
		i = n
	} else if d.sign() < 0 {
		i = math.MinInt64
	}
	if n, ok := d.uint64(); ok {
		u = n
	} else if d.sign() < 0 {
		u = 0
	}
	return i, u
}

// intPart is a numeric prefix's integer digits (with the sign).
func intPart(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '.' || p[i] == 'e' || p[i] == 'E' {
			return p[:i]
		}
	}
	return p
}

func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
