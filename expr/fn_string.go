package expr

// The string functions: CONCAT, LOWER, UPPER, SUBSTRING (SUBSTR), LEFT,
// RIGHT, TRIM, LTRIM, RTRIM, LENGTH, CHAR_LENGTH and CRC32, each equal to MariaDB 10.11's result byte for
// byte (fn_string_e2e_test.go compares them with the server). Strings are
// UTF-8 in a Datum whatever their charset (charset.go), so what depends on
// the charset's bytes (LENGTH, CRC32, a binary CONCAT) encodes them first.

import (
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

func init() {
	register(Func{Name: "CONCAT", MinArgs: 1, MaxArgs: -1, Type: concatType, Eval: concatEval})
	register(Func{Name: "LOWER", MinArgs: 1, MaxArgs: 1, Type: caseType("LOWER", false), Eval: caseEval(false)})
	register(Func{Name: "UPPER", MinArgs: 1, MaxArgs: 1, Type: caseType("UPPER", true), Eval: caseEval(true)})
	register(Func{Name: "SUBSTRING", MinArgs: 2, MaxArgs: 3, Type: substrType("SUBSTRING"), Eval: substrEval})
	register(Func{Name: "SUBSTR", MinArgs: 2, MaxArgs: 3, Type: substrType("SUBSTR"), Eval: substrEval})
	register(Func{Name: "TRIM", MinArgs: 1, MaxArgs: 1, Type: trimType("TRIM"), Eval: trimEval(true, true)})
	register(Func{Name: "LTRIM", MinArgs: 1, MaxArgs: 1, Type: trimType("LTRIM"), Eval: trimEval(true, false)})
	register(Func{Name: "RTRIM", MinArgs: 1, MaxArgs: 1, Type: trimType("RTRIM"), Eval: trimEval(false, true)})
	register(Func{Name: "LEFT", MinArgs: 2, MaxArgs: 2, Type: leftRightType("LEFT"), Eval: leftEval})
	register(Func{Name: "RIGHT", MinArgs: 2, MaxArgs: 2, Type: leftRightType("RIGHT"), Eval: rightEval})
	register(Func{Name: "LENGTH", MinArgs: 1, MaxArgs: 1, Type: countType("LENGTH", "int(10)", KindInt), Eval: lengthEval})
	register(Func{Name: "CHAR_LENGTH", MinArgs: 1, MaxArgs: 1, Type: countType("CHAR_LENGTH", "int(10)", KindInt), Eval: charLengthEval})
	register(Func{Name: "CRC32", MinArgs: 1, MaxArgs: 1, Type: countType("CRC32", "int(10) unsigned", KindUint), Eval: crc32Eval})
}

// textsOf types every argument as a string (textOf).
func textsOf(fn string, args []Type, consts []*Datum) ([]text, bool, error) {
	out := make([]text, len(args))
	nullable := false
	for i, a := range args {
		x, err := textOf(fn, a, constArg(consts, i))
		if err != nil {
			return nil, false, err
		}
		out[i] = x
		nullable = nullable || a.Nullable || a.Kind == KindNull
	}
	return out, nullable, nil
}

func concatType(args []Type, consts []*Datum) (Type, error) {
	xs, nullable, err := textsOf("CONCAT", args, consts)
	if err != nil {
		return Type{}, err
	}
	r, err := aggregateText("CONCAT", xs)
	if err != nil {
		return Type{}, err
	}
	if guess, err := aggregateAtEval(args); err != nil || guess.coll != r.coll || guess.binary != r.binary {
		return Type{}, fmt.Errorf("CONCAT of a %s column with strings of another collation: CAST the other strings AS CHAR (utf8mb4_general_ci) so they agree", connectionCollation)
	}
	var chars int64
	for i, x := range xs {
		chars += x.chars
		if !r.binary && x.kind == KindString && consts != nil && consts[i] != nil && !consts[i].IsNull() {
			if _, lacks := r.cs.lacks(consts[i].S); lacks {
				return Type{}, fmt.Errorf("CONCAT: the literal %q has characters %s lacks: write them as the column's charset allows, or CAST the column AS CHAR", consts[i].S, r.cs.name)
			}
		}
	}
	return textType(r, chars, nullable), nil
}

func concatEval(args []Datum, types []Type) (Datum, error) {
	binary := false
	n := 0
	for _, a := range args {
		if a.IsNull() {
			return Null, nil
		}
		binary = binary || a.Kind == KindBytes
		n += len(a.S) + 20
	}
	buf := make([]byte, 0, n)
	for _, a := range args {
		if binary && a.Kind == KindString {
			var err error
			if buf, err = appendBytes(buf, a); err != nil {
				return Null, fmt.Errorf("CONCAT: %w", err)
			}
			continue
		}
		buf = appendText(buf, a)
	}
	if binary {
		return Datum{Kind: KindBytes, S: string(buf)}, nil
	}
	return Datum{Kind: KindString, S: string(buf), Coll: resultColl(args, types)}, nil
}

// resultColl is the collation of a string CONCAT: the one its arguments
// share, else what aggregateAtEval gives.
func resultColl(args []Datum, types []Type) string {
	first := ""
	for _, a := range args {
		switch {
		case a.Kind != KindString:
		case first == "":
			first = a.Coll
		case a.Coll != first:
			r, _ := aggregateAtEval(types)
			return r.coll
		}
	}
	if first == "" {
		return connectionCollation
	}
	return first
}

// aggregateAtEval is aggregateText without knowing which arguments are
// literals (Eval is not told): a string in the connection's collation is
// taken for one. concatType refuses the calls where that guess changes
// the result (a utf8mb4_general_ci column with a column of another
// charset), so it is exact for the rest.
func aggregateAtEval(types []Type) (text, error) {
	// Per row for CONCAT(col, '-', …): the collations only, no lengths.
	var buf [8]text
	xs := buf[:0]
	for _, t := range types {
		x := text{kind: t.Kind, deriv: derivNumeric, coll: connectionCollation}
		switch t.Kind {
		case KindNull:
			x.deriv = derivIgnorable
		case KindBytes:
			x.binary, x.deriv = true, derivImplicit
		case KindString:
			x.coll, x.deriv = t.Coll, derivImplicit
			if x.coll == connectionCollation {
				x.deriv = derivCoercible
			}
		}
		if !x.binary && x.kind != KindNull {
			cs, err := charsetFor(x.coll)
			if err != nil {
				return x, err
			}
			x.cs = cs
		}
		xs = append(xs, x)
	}
	return aggregateText("CONCAT", xs)
}

// appendText appends the text of a non-NULL value as MySQL converts it to
// a string (toText: integers and decimals exactly, a YEAR in its four
// digits, a double in MySQL's shortest digits, temporal values in their
// canonical text, strings as they are).
func appendText(dst []byte, d Datum) []byte {
	if d.Kind == KindInt {
		return strconv.AppendInt(dst, d.I, 10)
	}
	return append(dst, toText(d)...)
}

// appendBytes appends a string value's bytes in its charset (a binary
// string's as they are).
func appendBytes(dst []byte, d Datum) ([]byte, error) {
	if d.Kind != KindString {
		return appendText(dst, d), nil
	}
	cs, err := charsetFor(d.Coll)
	if err != nil {
		return dst, err
	}
	out, ok := cs.encode(dst, d.S)
	if !ok {
		return dst, fmt.Errorf("the value %q has characters its charset %s lacks (decoded lossily from the source?)", d.S, cs.name)
	}
	return out, nil
}

func caseType(fn string, upper bool) func([]Type, []*Datum) (Type, error) {
	return func(args []Type, consts []*Datum) (Type, error) {
		xs, nullable, err := textsOf(fn, args, consts)
		if err != nil {
			return Type{}, err
		}
		x := xs[0]
		if x.binary {
			return textType(x, x.chars, nullable), nil
		}
		ci, err := caseOf(x.coll)
		if err != nil {
			return Type{}, fmt.Errorf("%s: %w", fn, err)
		}
		mul := ci.lowerMul
		if upper {
			mul = ci.upperMul
		}
		return textType(x, x.chars*mul, nullable), nil
	}
}

func caseEval(upper bool) func([]Datum, []Type) (Datum, error) {
	return func(args []Datum, types []Type) (Datum, error) {
		a := args[0]
		switch a.Kind {
		case KindNull, KindBytes:
			return a, nil
		case KindString:
			ci, err := caseOf(a.Coll)
			if err != nil {
				return Null, err
			}
			t := ci.lower
			if upper {
				t = ci.upper
			}
			return Datum{Kind: KindString, S: mapCase(a.S, caseMaps[t]), Coll: a.Coll}, nil
		}
		// A number's text is in the connection's collation (UPPER(1e15) is
		// 1E15).
		a = Datum{Kind: KindString, S: string(appendText(nil, a)), Coll: connectionCollation}
		return caseEval(upper)([]Datum{a}, types)
	}
}

func substrType(fn string) func([]Type, []*Datum) (Type, error) {
	return func(args []Type, consts []*Datum) (Type, error) {
		xs, nullable, err := textsOf(fn, args[:1], consts)
		if err != nil {
			return Type{}, err
		}
		for i, a := range args[1:] {
			if a.Kind != KindInt && a.Kind != KindUint && a.Kind != KindNull {
				what := [...]string{"position", "length"}[i]
				return Type{}, fmt.Errorf("%s takes an integer %s, not a %s: CAST it AS SIGNED first", fn, what, a.Kind)
			}
			nullable = nullable || a.Nullable || a.Kind == KindNull
		}
		x := xs[0]
		// MariaDB counts the result's length in the argument's bytes and
		// takes that number as characters (a VARCHAR(10) utf8mb4 from
		// position 2 is a VARCHAR(39)); positions and lengths are 32-bit.
		n := x.bytes
		if c := constArg(consts, 1); c != nil {
			switch start := int32(intOf(*c)); {
			case c.IsNull():
				n = 0
			case start < 0:
				if int64(-int64(start)) > n {
					n = 0
				} else {
					n = -int64(start)
				}
			default:
				n -= min(int64(uint32(start-1)), n)
			}
		}
		if c := constArg(consts, 2); c != nil {
			if l := int32(intOf(*c)); c.IsNull() || l <= 0 {
				n = 0
			} else {
				n = min(n, int64(l))
			}
		}
		return textType(x, n, nullable), nil
	}
}

// leftRightType is MariaDB's left_right_max_length: the argument's length
// in characters (unlike SUBSTRING's, in bytes taken as characters), cut
// by a constant length (max_length_for_string: a negative or NULL one is
// 0, one past 2^31-1 is 2^31-1).
func leftRightType(fn string) func([]Type, []*Datum) (Type, error) {
	return func(args []Type, consts []*Datum) (Type, error) {
		xs, nullable, err := textsOf(fn, args[:1], consts)
		if err != nil {
			return Type{}, err
		}
		if a := args[1]; a.Kind != KindInt && a.Kind != KindUint && a.Kind != KindNull {
			return Type{}, fmt.Errorf("%s takes an integer length, not a %s: CAST it AS SIGNED first", fn, a.Kind)
		}
		nullable = nullable || args[1].Nullable || args[1].Kind == KindNull
		x := xs[0]
		n := x.chars
		if c := constArg(consts, 1); c != nil {
			switch v := intOf(*c); {
			case c.IsNull(), c.Kind != KindUint && v < 0:
				n = 0
			case c.Kind == KindUint && c.U > math.MaxInt32, v > math.MaxInt32:
				n = min(n, math.MaxInt32)
			default:
				n = min(n, v)
			}
		}
		return textType(x, n, nullable), nil
	}
}

// leftEval is Item_func_left::val_str: NULL with either argument NULL, empty
// for a length of 0 or less (signed), else the first length characters
// (bytes of a binary string) — SUBSTRING(s, 1, length), which cuts alike.
func leftEval(args []Datum, types []Type) (Datum, error) {
	return substrEval([]Datum{args[0], {Kind: KindInt, I: 1}, args[1]}, types)
}

// rightEval is Item_func_right::val_str: NULL with either argument NULL,
// empty for a length of 0 or less (signed), the whole string when it has no
// more characters (bytes of a binary string) than length, else its last
// length characters.
func rightEval(args []Datum, types []Type) (Datum, error) {
	s, l := args[0], args[1]
	if s.IsNull() || l.IsNull() {
		return Null, nil
	}
	if l.Kind != KindUint && l.I <= 0 {
		return substrEval([]Datum{s, {Kind: KindInt, I: 1}, {Kind: KindInt, I: 0}}, types)
	}
	n := int64(len(s.S))
	if s.Kind == KindString {
		n = charLen(s.S)
	} else if s.Kind != KindBytes {
		n = charLen(string(appendText(nil, s)))
	}
	if l.Kind == KindUint && l.U >= uint64(n) || l.Kind != KindUint && l.I >= n {
		return substrEval([]Datum{s, {Kind: KindInt, I: 1}}, types)
	}
	return substrEval([]Datum{s, {Kind: KindInt, I: -intOf(l)}}, types)
}

// trimType: the argument's own length (Item_func_trim keeps its
// max_length and collation).
func trimType(fn string) func([]Type, []*Datum) (Type, error) {
	return func(args []Type, consts []*Datum) (Type, error) {
		xs, nullable, err := textsOf(fn, args, consts)
		if err != nil {
			return Type{}, err
		}
		return textType(xs[0], xs[0].chars, nullable), nil
	}
}

// trimEval removes spaces (U+0020 only, not tabs or newlines; 0x20 bytes
// of a binary string) from the start (left) and the end (right).
func trimEval(left, right bool) func([]Datum, []Type) (Datum, error) {
	return func(args []Datum, types []Type) (Datum, error) {
		a := args[0]
		switch a.Kind {
		case KindNull:
			return a, nil
		case KindString, KindBytes:
		default:
			a = Datum{Kind: KindString, S: string(appendText(nil, a)), Coll: connectionCollation}
		}
		if left {
			a.S = strings.TrimLeft(a.S, " ")
		}
		if right {
			a.S = strings.TrimRight(a.S, " ")
		}
		return a, nil
	}
}

func constArg(consts []*Datum, i int) *Datum {
	if i < len(consts) {
		return consts[i]
	}
	return nil
}

// intOf is an integer argument's value as MySQL's val_int gives it (an
// unsigned one wraps, as the server's unsigned_flag then tells apart).
func intOf(d Datum) int64 {
	if d.Kind == KindUint {
		return int64(d.U)
	}
	return d.I
}

// substrEval follows MariaDB's Item_func_substr::val_str: a position
// outside 32 bits, 0, or before the start gives ”; a length of 0 or less
// (signed) gives ”; a length over 2^31-1 takes the rest.
func substrEval(args []Datum, types []Type) (Datum, error) {
	for _, a := range args {
		if a.IsNull() {
			return Null, nil
		}
	}
	s := args[0]
	out := Datum{Kind: KindString, Coll: s.Coll}
	switch s.Kind {
	case KindBytes:
		out = Datum{Kind: KindBytes}
	case KindString:
	default:
		s = Datum{Kind: KindString, S: string(appendText(nil, s))}
		out.Coll = connectionCollation
	}
	length := int64(math.MaxInt32)
	if len(args) == 3 {
		l := args[2]
		if l.Kind == KindUint && l.U > math.MaxInt32 {
			// a huge unsigned length: the rest of the string
		} else if v := intOf(l); v <= 0 {
			return out, nil
		} else if v <= math.MaxInt32 {
			length = v
		}
	}
	p := args[1]
	if p.Kind == KindUint && p.U > math.MaxInt32 || p.Kind != KindUint && (p.I < math.MinInt32 || p.I > math.MaxInt32) {
		return out, nil
	}
	start := intOf(p)
	if s.Kind == KindBytes {
		n := int64(len(s.S))
		if start < 0 {
			start += n
		} else {
			start--
		}
		if start < 0 || start >= n {
			return out, nil
		}
		out.S = s.S[start : start+min(length, n-start)]
		return out, nil
	}
	if start < 0 {
		start += charLen(s.S)
	} else {
		start--
	}
	if start < 0 {
		return out, nil
	}
	from := runeOffset(s.S, start)
	if from >= len(s.S) {
		return out, nil
	}
	rest := s.S[from:]
	out.S = rest[:runeOffset(rest, length)]
	return out, nil
}

// runeOffset is the byte offset of character n of s (len(s) past its end).
func runeOffset(s string, n int64) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

func countType(fn, column string, kind Kind) func([]Type, []*Datum) (Type, error) {
	return func(args []Type, consts []*Datum) (Type, error) {
		_, nullable, err := textsOf(fn, args, consts)
		if err != nil {
			return Type{}, err
		}
		return intResult(kind, column, nullable), nil
	}
}

func lengthEval(args []Datum, types []Type) (Datum, error) {
	a := args[0]
	switch a.Kind {
	case KindNull:
		return Null, nil
	case KindString:
		cs, err := charsetFor(a.Coll)
		if err != nil {
			return Null, fmt.Errorf("LENGTH: %w", err)
		}
		if cs.mbmaxlen == 1 {
			return Datum{Kind: KindInt, I: charLen(a.S)}, nil
		}
		return Datum{Kind: KindInt, I: int64(len(a.S))}, nil
	}
	return Datum{Kind: KindInt, I: int64(len(appendText(nil, a)))}, nil
}

func charLengthEval(args []Datum, types []Type) (Datum, error) {
	a := args[0]
	switch a.Kind {
	case KindNull:
		return Null, nil
	case KindString:
		return Datum{Kind: KindInt, I: int64(utf8.RuneCountInString(a.S))}, nil
	}
	return Datum{Kind: KindInt, I: int64(len(appendText(nil, a)))}, nil
}

func crc32Eval(args []Datum, types []Type) (Datum, error) {
	a := args[0]
	if a.IsNull() {
		return Null, nil
	}
	b, err := appendBytes(nil, a)
	if err != nil {
		return Null, fmt.Errorf("CRC32: %w", err)
	}
	return Datum{Kind: KindUint, U: uint64(crc32.ChecksumIEEE(b))}, nil
}
