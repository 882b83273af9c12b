package expr

// The number functions FLOOR, CEIL (CEILING) and ABS, equal to MariaDB
// 10.11's result and result type (fn_number_e2e_test.go compares them with
// the server). Decimals are computed on their exact text, never through a
// float.

import (
	"fmt"
	"math"
	"strings"
)

func init() {
	register(Func{Name: "FLOOR", MinArgs: 1, MaxArgs: 1, Type: roundType("FLOOR", false), Eval: roundEval(false)})
	register(Func{Name: "CEIL", MinArgs: 1, MaxArgs: 1, Type: roundType("CEIL", true), Eval: roundEval(true)})
	register(Func{Name: "CEILING", MinArgs: 1, MaxArgs: 1, Type: roundType("CEILING", true), Eval: roundEval(true)})
	register(Func{Name: "ABS", MinArgs: 1, MaxArgs: 1, Type: absType, Eval: absEval})
}

// intDef is an integer's type name ("int", "bigint", "year"), display
// width and signedness; c is its value when it is a constant.
func intDef(t Type, c *Datum) (name string, width int64, unsigned bool) {
	def := strings.ToLower(strings.TrimSpace(t.Column))
	name = def
	if i := strings.IndexAny(def, "( "); i >= 0 {
		name = def[:i]
	}
	if name == "integer" {
		name = "int"
	}
	unsigned = t.Kind == KindUint
	width = intWidth(def, unsigned)
	if c != nil && !c.IsNull() {
		// A literal is as wide as its digits (MariaDB's Item_int).
		width = int64(len(toText(*c)))
	}
	return name, width, unsigned
}

func unsignedSuffix(u bool) string {
	if u {
		return " unsigned"
	}
	return ""
}

// numberArg refuses what the number functions do not take.
func numberArg(fn string, t Type) error {
	switch t.Kind {
	case KindNull, KindDecimal, KindDouble:
		return nil
	case KindInt, KindUint:
		if strings.HasPrefix(strings.ToLower(t.Column), "bit") {
			return fmt.Errorf("%s of a BIT value: CAST it AS UNSIGNED first", fn)
		}
		return nil
	}
	return fmt.Errorf("%s takes a number, not a %s (MySQL would convert it through a DOUBLE): CAST it AS DECIMAL(p,s) or AS SIGNED first", fn, t.Kind)
}

// numberPrelude types what FLOOR, CEIL and ABS type alike: it refuses
// what they do not take; NULL is MariaDB's DOUBLE(17,0); a DOUBLE stays a
// plain DOUBLE (for FLOOR and CEIL the server says DOUBLE(17,0), which
// cuts values beyond 1e17); YEAR becomes INT UNSIGNED. done is false for
// the other integers and decimals.
func numberPrelude(fn string, a Type, consts []*Datum) (t Type, done bool, err error) {
	if err := numberArg(fn, a); err != nil {
		return Type{}, true, err
	}
	switch a.Kind {
	case KindNull:
		return Type{Kind: KindDouble, Column: "double(17,0)", Nullable: true}, true, nil
	case KindDouble:
		return Type{Kind: KindDouble, Column: "double", Nullable: a.Nullable}, true, nil
	case KindInt, KindUint:
		if name, _, _ := intDef(a, constArg(consts, 0)); name == "year" {
			return intResult(KindUint, "int(4) unsigned", a.Nullable), true, nil
		}
	}
	return Type{}, false, nil
}

// roundType types FLOOR and CEIL as MariaDB does: an integer keeps its
// type (YEAR becomes INT UNSIGNED), a DOUBLE is a DOUBLE(17,0), and a
// DECIMAL(p,s) becomes the smallest of INT, BIGINT and DECIMAL(n,0) that
// holds its integer digits n: p-s, plus one when s > 0 for a signed value
// (FLOOR can carry into a new digit below zero) and for an unsigned CEIL.
func roundType(fn string, ceil bool) func([]Type, []*Datum) (Type, error) {
	return func(args []Type, consts []*Datum) (Type, error) {
		a := args[0]
		if t, done, err := numberPrelude(fn, a, consts); done {
			return t, err
		}
		if a.Kind != KindDecimal {
			name, w, u := intDef(a, constArg(consts, 0))
			return intResult(a.Kind, fmt.Sprintf("%s(%d)%s", name, w, unsignedSuffix(u)), a.Nullable), nil
		}
		p, s, u := decimalShape(strings.ToLower(a.Column), a.Frac)
		n := p - s
		if s > 0 && (!u || ceil) {
			n++
		}
		return roundedDecimalType(n, u, a.Nullable), nil
	}
}

// roundedDecimalType is the type of a decimal rounded to n integer digits.
func roundedDecimalType(n int64, unsigned, nullable bool) Type {
	w := max(n, 1)
	kind := KindInt
	if unsigned {
		kind = KindUint
	} else {
		w++
	}
	switch {
	case n <= 9:
		return intResult(kind, fmt.Sprintf("int(%d)%s", w, unsignedSuffix(unsigned)), nullable)
	case n <= 18:
		return intResult(kind, fmt.Sprintf("bigint(%d)%s", w, unsignedSuffix(unsigned)), nullable)
	}
	return Type{Kind: KindDecimal, Column: fmt.Sprintf("decimal(%d,0)%s", n, unsignedSuffix(unsigned)), Nullable: nullable, prec: int(n)}
}

func roundEval(ceil bool) func([]Datum, []Type) (Datum, error) {
	return func(args []Datum, types []Type) (Datum, error) {
		a := args[0]
		switch a.Kind {
		case KindNull, KindInt:
			return a, nil
		case KindUint:
			return Datum{Kind: KindUint, U: a.U}, nil // a YEAR's digits go
		case KindDouble:
			// + 0 turns -0 (CEIL(-0.5)) into 0, as the server gives it.
			if ceil {
				return Datum{Kind: KindDouble, F: math.Ceil(a.F) + 0}, nil
			}
			return Datum{Kind: KindDouble, F: math.Floor(a.F) + 0}, nil
		case KindDecimal:
			return roundDecimal(a.S, ceil, types[0])
		}
		return Null, fmt.Errorf("FLOOR/CEIL of a %s", a.Kind)
	}
}

// roundDecimal is FLOOR or CEIL of a decimal's text, as the type
// roundType gives t: an integer when it fits, else a DECIMAL(n,0).
func roundDecimal(s string, ceil bool, t Type) (Datum, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	ip, frac, _ := strings.Cut(s, ".")
	if strings.Trim(frac, "0") != "" && neg != ceil {
		ip = incDigits(ip)
	}
	ip = strings.TrimLeft(ip, "0")
	if ip == "" {
		ip, neg = "0", false
	}
	if neg {
		ip = "-" + ip
	}
	p, sc, u := decimalShape(strings.ToLower(t.Column), t.Frac)
	n := p - sc
	if sc > 0 && (!u || ceil) {
		n++
	}
	rt := roundedDecimalType(n, u, false)
	switch rt.Kind {
	case KindInt:
		var v int64
		if _, err := fmt.Sscan(ip, &v); err != nil {
			return Null, fmt.Errorf("rounding %s: %w", s, err)
		}
		return Datum{Kind: KindInt, I: v}, nil
	case KindUint:
		var v uint64
		if _, err := fmt.Sscan(ip, &v); err != nil {
			return Null, fmt.Errorf("rounding %s: %w", s, err)
		}
		return Datum{Kind: KindUint, U: v}, nil
	}
	return Datum{Kind: KindDecimal, S: ip}, nil
}

// incDigits adds one to a string of decimal digits.
func incDigits(d string) string {
	b := []byte(d)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}

// absType types ABS as MariaDB does: an integer of display width up to 9
// becomes INT, a wider one BIGINT (INT's absolute value may not fit in
// INT), YEAR INT UNSIGNED; a DECIMAL or DOUBLE keeps its type.
func absType(args []Type, consts []*Datum) (Type, error) {
	a := args[0]
	if t, done, err := numberPrelude("ABS", a, consts); done {
		return t, err
	}
	if a.Kind == KindDecimal {
		p, s, u := decimalShape(strings.ToLower(a.Column), a.Frac)
		return Type{Kind: KindDecimal, Column: fmt.Sprintf("decimal(%d,%d)%s", p, s, unsignedSuffix(u)), Frac: uint8(s), Nullable: a.Nullable, prec: int(p)}, nil
	}
	_, w, u := intDef(a, constArg(consts, 0))
	name := "int"
	if w > 9 {
		name = "bigint"
	}
	return intResult(a.Kind, fmt.Sprintf("%s(%d)%s", name, w, unsignedSuffix(u)), a.Nullable), nil
}

// absEval is ABS; the absolute value of the smallest BIGINT does not fit
// and fails as the server's error 1690 does.
func absEval(args []Datum, _ []Type) (Datum, error) {
	a := args[0]
	switch a.Kind {
	case KindInt:
		if a.I == math.MinInt64 {
			return Null, fmt.Errorf("BIGINT value is out of range in 'abs(%d)' (MySQL error 1690)", a.I)
		}
		if a.I < 0 {
			a.I = -a.I
		}
		return a, nil
	case KindUint:
		return Datum{Kind: KindUint, U: a.U}, nil // a YEAR's digits go
	case KindDouble:
		return Datum{Kind: KindDouble, F: math.Abs(a.F)}, nil
	case KindDecimal:
		a.S = strings.TrimPrefix(a.S, "-")
		return a, nil
	}
	return a, nil
}
