package expr

import (
	"math"
	"strconv"
	"strings"
)

// Conversions between value classes, as MySQL converts an operand for an
// operator: a string read as a number takes its longest numeric prefix
// (MySQL warns and goes on), a temporal value as a number is its digits
// (2020-01-02 is 20200102).

// numericPrefix is the longest prefix of s (after leading spaces) that
// reads as a number, as MySQL's string-to-number conversion takes it.
func numericPrefix(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			digits++
		}
		if digits > 0 {
			i = j
		}
	}
	if digits == 0 {
		return ""
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	return s[start:i]
}

func strToDouble(s string) float64 {
	p := numericPrefix(s)
	if p == "" {
		return 0
	}
	f, err := strconv.ParseFloat(p, 64)
	if err != nil {
		// out of range: ParseFloat gives ±Inf; MySQL clamps to ±DBL_MAX
		if f > 0 {
			return math.MaxFloat64
		}
		if f < 0 {
			return -math.MaxFloat64
		}
	}
	return f
}

func strToDec(s string) dec {
	p := numericPrefix(s)
	if p == "" {
		return dec{}
	}
	if d, ok := parseDec(p); ok {
		return d
	}
	// an exponent: go through big.Float exactly
	mant, exp, _ := strings.Cut(strings.ToLower(p), "e")
	d, _ := parseDec(mant)
	e, _ := strconv.Atoi(exp)
	if e >= 0 {
		if e > 2*maxDecimalPrec {
			e = 2 * maxDecimalPrec
		}
		var r dec
		r.u.Mul(&d.u, pow10(e))
		r.scale = d.scale
		return r.rescale(max(0, d.scale-e))
	}
	r := d
	r.scale = d.scale - e
	if r.scale > maxDecimalScale {
		r = r.rescale(maxDecimalScale)
	}
	return r
}

// temporalNumber is a temporal value's digits as a decimal:
// 2020-01-02 → 20200102, 2020-01-02 03:04:05.5 → 20200102030405.5,
// -12:34:56 → -123456.
func temporalNumber(d Datum) dec {
	var b strings.Builder
	for i := 0; i < len(d.S); i++ {
		c := d.S[i]
		if c >= '0' && c <= '9' || c == '.' || c == '-' && i == 0 && d.Kind == KindTime {
			b.WriteByte(c)
		}
	}
	r, _ := parseDec(b.String())
	return r
}

func toDouble(d Datum) float64 {
	switch d.Kind {
	case KindInt:
		return float64(d.I)
	case KindUint:
		return float64(d.U)
	case KindDouble:
		return d.F
	case KindDecimal:
		f, _ := strconv.ParseFloat(d.S, 64)
		return f
	case KindDate, KindDatetime, KindTime:
		return temporalNumber(d).float()
	case KindString, KindBytes, KindJSON:
		return strToDouble(d.S)
	}
	return 0
}

func toDec(d Datum) dec {
	switch d.Kind {
	case KindInt:
		return decFromInt(d.I)
	case KindUint:
		return decFromUint(d.U)
	case KindDecimal:
		r, _ := parseDec(d.S)
		return r
	case KindDouble:
		return strToDec(strconv.FormatFloat(d.F, 'g', 17, 64))
	case KindDate, KindDatetime, KindTime:
		return temporalNumber(d)
	case KindString, KindBytes, KindJSON:
		return strToDec(d.S)
	}
	return dec{}
}

// toText is a value as MySQL renders it as a string.
func toText(d Datum) string {
	switch d.Kind {
	case KindInt:
		return strconv.FormatInt(d.I, 10)
	case KindUint:
		if d.S != "" {
			return d.S // a YEAR's four digits
		}
		return strconv.FormatUint(d.U, 10)
	case KindDouble:
		return doubleString(d.F)
	}
	return d.S
}

// doubleString is a double converted to a string inside an expression
// (CAST(x AS CHAR), a string operand): the shortest digits, plain from
// 1e-15 up to below 1e15, else 1.5e-16 / 1e15 (no '+', no padding). The
// text protocol shows the same double differently (formatDouble).
func doubleString(f float64) string {
	mant, e, plain := shortest(f, -15, 15)
	if plain {
		return mant
	}
	return mant + "e" + strconv.Itoa(e)
}

// formatDouble renders a double as MariaDB's text protocol does: the
// shortest digits that read back as the same double, in plain notation
// when the decimal exponent is from -4 to 5 and as 1.2345678e+07 or
// 1e-05 beyond (as C's %g with precision 6 decides). MySQL 8 keeps plain
// notation up to 15 integer digits (12345678, not 1.2345678e+07): there
// a double's SQL text differs, so a double result column compares by
// value, not by text.
func formatDouble(f float64) string {
	mant, e, plain := shortest(f, -4, 6)
	if plain {
		return mant
	}
	sign := "+"
	if e < 0 {
		sign, e = "-", -e
	}
	if e < 10 {
		return mant + "e" + sign + "0" + strconv.Itoa(e)
	}
	return mant + "e" + sign + strconv.Itoa(e)
}

// shortest gives f's shortest round-trip digits: in plain notation when
// its decimal exponent is in [lo, hi), else the mantissa and exponent.
func shortest(f float64, lo, hi int) (text string, exp int, plain bool) {
	if f == 0 {
		return "0", 0, true
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, es, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(es)
	if e < lo || e >= hi {
		return mant, e, false
	}
	return strconv.FormatFloat(f, 'f', -1, 64), 0, true
}

// Text is the value as MySQL's text protocol shows it (a binary string's
// bytes as they are); "" for NULL.
func (d Datum) Text() string {
	if d.Kind == KindDouble {
		return formatDouble(d.F)
	}
	return toText(d)
}
