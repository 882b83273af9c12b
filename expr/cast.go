package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
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
		// shown as wide as the operand's text, at most 21 characters (20
		// for a double)
		w := min(textLength(t), 21)
		if t.Kind == KindDouble {
			w = 20
		}
		c.typ = intTypeWidth(KindInt, 19, w, null)
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
		// n characters of a string's character set (MariaDB cuts there, so
		// BINARY(2) of '😀' is 4 bytes, which its own varbinary(2) cuts)
		n := c.n
		if n < 0 {
			n = textLength(t)
		}
		if t.Kind == KindString {
			n *= maxBytesPerChar(t.Coll)
		}
		if t.Kind == KindString && maxBytesPerChar(t.Coll) == 0 {
			return Type{}, errAt(c.at, "CAST of a %s string to BINARY is not offered: its bytes are not kept", charsetOf(t.Coll))
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
		if v.Kind == KindBytes {
			s = validUTF8(s)
		}
		if c.n >= 0 && utf8.RuneCountInString(s) > c.n {
			s = cutRunes(s, c.n)
		}
		return Datum{Kind: KindString, S: s, Coll: connCollation}, nil
	case "BINARY":
		s := toText(v)
		switch {
		case c.n < 0:
		case v.Kind == KindString:
			s = cutRunes(s, c.n) // n characters of the operand's character set
		case len(s) > c.n:
			s = s[:c.n]
		}
		if v.Kind == KindString && charsetOf(strings.ToLower(v.Coll)) == "latin1" {
			s, _ = charmap.Windows1252.NewEncoder().String(s)
		}
		if c.n >= 0 {
			for len(s) < c.n { // pads to n bytes
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
// a number as MySQL's number_to_datetime reads one: YYMMDD, YYYYMMDD,
// YYMMDDhhmmss or YYYYMMDDhhmmss (two-digit years 70-99 are 19xx, 00-69
// 20xx), 0 the zero date, anything else not a date.
func temporalKey(v Datum) (string, bool) {
	switch v.Kind {
	case KindInt, KindUint, KindDecimal, KindDouble:
		d := toDec(v).truncate(0)
		n, ok := d.int64()
		if !ok || n < 0 {
			return "", false
		}
		var s string
		switch {
		case n == 0:
			return zeroKey, true
		case n < 101:
			return "", false
		case n <= 991231:
			s = yearPrefix(n/10000) + fmt.Sprintf("%06d", n)
		case n < 10000101:
			return "", false
		case n <= 99991231:
			s = fmt.Sprintf("%08d", n)
		case n < 101000000:
			return "", false
		case n <= 991231235959:
			s = yearPrefix(n/10000000000) + fmt.Sprintf("%012d", n)
		case n < 10000101000000:
			return "", false
		case n <= 99991231235959:
			s = fmt.Sprintf("%014d", n)
		default:
			return "", false
		}
		v = Datum{Kind: KindString, S: s}
	case KindTime:
		return "", false
	}
	return datetimeKey(v)
}

func yearPrefix(yy int64) string {
	if yy < 70 {
		return "20"
	}
	return "19"
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

// maxBytesPerChar is a character set's longest character in bytes; 0 for
// one whose bytes expressions cannot give back.
func maxBytesPerChar(coll string) int {
	switch charsetOf(strings.ToLower(coll)) {
	case "utf8mb4":
		return 4
	case "utf8mb3":
		return 3
	case "latin1", "ascii":
		return 1
	}
	return 0
}

// validUTF8 is bytes read as utf8mb4, as MySQL converts them: each byte
// that does not start a valid character becomes '?'.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte('?')
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

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
		if p == "" {
			return 0, 0
		}
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
