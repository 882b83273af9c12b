package expr

// String result types. MySQL types a string function's result by the
// length of its arguments and by their collations (MariaDB's
// DTCollation::aggregate); the read column must be the one CREATE TABLE …
// AS SELECT makes, so these rules follow MariaDB 10.11's, as its
// information_schema shows them (fn_string_e2e_test.go compares).

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// derivation is how strongly an argument's collation binds (MySQL's
// DERIVATION_*): the lowest wins an aggregation.
type derivation uint8

const (
	derivImplicit  derivation = 2 // a column or an expression over one
	derivCoercible derivation = 4 // a string literal
	derivNumeric   derivation = 5 // a number or temporal value made text
	derivIgnorable derivation = 6 // NULL
)

// text is what a string function knows of one argument as a string.
type text struct {
	binary bool     // a binary string: bytes, no collation
	coll   string   // collation, when not binary
	cs     *charset // charset of coll, when not binary
	// chars is the server's maximum length in characters; for a number
	// or temporal value it is its longest text.
	chars int64
	// bytes is chars in the argument's own charset: MariaDB counts
	// SUBSTRING's result length in it.
	bytes int64
	deriv derivation
	kind  Kind
}

// maxLength is the longest string MySQL types (its max_length is 32-bit).
const maxLength = 4294967295

var (
	lengthRe = regexp.MustCompile(`^[a-z]+\((\d+)(?:,(\d+))?\)`)
	collRe   = regexp.MustCompile(`(?i)\bCOLLATE\s+([A-Za-z0-9_]+)`)
)

// textOf is what a string function sees of an argument of type t; c is
// its value when it is a constant (whose collation is coercible), else
// nil. fn names the function for errors.
func textOf(fn string, t Type, c *Datum) (text, error) {
	isConst := c != nil
	def := strings.ToLower(strings.TrimSpace(t.Column))
	x := text{kind: t.Kind, deriv: derivImplicit}
	switch t.Kind {
	case KindNull:
		return text{binary: true, deriv: derivIgnorable, kind: KindNull}, nil
	case KindString, KindBytes:
		x.binary = t.Kind == KindBytes
		if !x.binary {
			x.coll = t.Coll
			if x.coll == "" {
				if m := collRe.FindStringSubmatch(t.Column); m != nil {
					x.coll = strings.ToLower(m[1])
				}
			}
			if x.coll == "" {
				return x, fmt.Errorf("%s: the string argument has no collation: name a column or CAST it AS CHAR", fn)
			}
			cs, err := charsetFor(x.coll)
			if err != nil {
				return x, fmt.Errorf("%s: %w", fn, err)
			}
			x.cs = cs
			if isConst {
				x.deriv = derivCoercible
			}
		}
		n, err := stringChars(def)
		if err != nil {
			return x, fmt.Errorf("%s: %w", fn, err)
		}
		if strings.Contains(def, "text") || strings.Contains(def, "blob") {
			// An expression's long string is as long as it says (its
			// column is only the smallest TEXT that holds it).
			if t.prec > 0 {
				n = int64(t.prec)
			}
		}
		x.chars = n
	case KindInt, KindUint:
		if strings.HasPrefix(def, "bit") {
			return x, fmt.Errorf("%s: a BIT value as text is its bytes, not its digits: CAST it AS UNSIGNED first", fn)
		}
		x.chars = intWidth(def, t.Kind == KindUint)
		if isConst {
			// A literal is as long as its digits (MariaDB's Item_int).
			x.chars = int64(len(toText(*c)))
		}
	case KindDecimal:
		p, s, unsigned := decimalShape(def, t.Frac)
		x.chars = p + boolInt(s > 0) + boolInt(!unsigned)
	case KindDate:
		x.chars = 10
	case KindDatetime:
		x.chars = 19 + int64(t.Frac) + boolInt(t.Frac > 0)
	case KindTime:
		x.chars = 10 + int64(t.Frac) + boolInt(t.Frac > 0)
	case KindDouble:
		if strings.HasPrefix(def, "float") {
			return x, fmt.Errorf("%s: a FLOAT's text is its single-precision digits, which readside does not reproduce from the widened value: CAST it to DECIMAL(p,s) first", fn)
		}
		// The longest text of a DOUBLE is 24 characters
		// (-2.2250738585072014e-308); the server types it 22 and then
		// cuts (error 1406), so readside's column is wider.
		x.chars = 24
	default:
		return x, fmt.Errorf("%s does not take a %s argument: use JSON_VALUE or JSON_UNQUOTE to get a string out of it", fn, t.Kind)
	}
	if t.Kind != KindString && t.Kind != KindBytes {
		// Numbers and temporal values become ASCII text in the connection's
		// collation, one byte per character.
		x.coll, x.cs, x.deriv, x.bytes = connectionCollation, charsets["utf8mb4"], derivNumeric, x.chars
		return x, nil
	}
	mb := int64(1)
	if x.cs != nil {
		mb = x.cs.mbmaxlen
	}
	x.bytes = min(x.chars*mb, maxLength)
	return x, nil
}

// stringChars is the length in characters of a string or binary string
// column definition, as MariaDB counts it (a TEXT or BLOB counts its bytes
// as characters).
func stringChars(def string) (int64, error) {
	for _, b := range []struct {
		prefix string
		n      int64
	}{{"tinytext", 255}, {"tinyblob", 255}, {"mediumtext", 16777215}, {"mediumblob", 16777215}, {"longtext", maxLength}, {"longblob", maxLength}, {"text", 65535}, {"blob", 65535}} {
		if strings.HasPrefix(def, b.prefix) {
			return b.n, nil
		}
	}
	if strings.HasPrefix(def, "enum(") || strings.HasPrefix(def, "set(") {
		members, err := EnumMembers(def)
		if err != nil {
			return 0, err
		}
		var longest, sum int64
		for _, m := range members {
			n := charLen(m)
			longest = max(longest, n)
			sum += n
		}
		if strings.HasPrefix(def, "set(") && len(members) > 0 {
			return sum + int64(len(members)) - 1, nil
		}
		return longest, nil
	}
	if m := lengthRe.FindStringSubmatch(def); m != nil && (strings.HasPrefix(def, "varchar") || strings.HasPrefix(def, "char") || strings.HasPrefix(def, "varbinary") || strings.HasPrefix(def, "binary")) {
		return strconv.ParseInt(m[1], 10, 64)
	}
	return 0, fmt.Errorf("cannot tell the length of a %q value", def)
}

// EnumMembers are the members of an ENUM or SET definition
// ("enum('a','b')"), unquoted.
func EnumMembers(def string) ([]string, error) {
	open := strings.IndexByte(def, '(')
	var out []string
	s := def[open+1:]
	for {
		if !strings.HasPrefix(s, "'") {
			return nil, fmt.Errorf("cannot read the members of %q", def)
		}
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		out = append(out, b.String())
		if i+1 >= len(s) {
			return nil, fmt.Errorf("cannot read the members of %q", def)
		}
		switch s[i+1] {
		case ',':
			s = s[i+2:]
		case ')':
			return out, nil
		default:
			return nil, fmt.Errorf("cannot read the members of %q", def)
		}
	}
}

// aggregateText is the collation of a string result made of args (MariaDB's
// rules for CONCAT and the like), or an error naming the conflict and the
// fix. A binary argument makes the result binary; of two collations the
// one with the stronger derivation wins, of two as strong the one whose
// charset holds the other's characters, and of two of one charset its
// _bin collation. A weaker literal must hold only characters of the
// winner's charset (the caller checks its value).
func aggregateText(fn string, args []text) (text, error) {
	res := text{deriv: derivIgnorable, binary: true}
	for _, a := range args {
		switch {
		case a.kind == KindNull:
		case a.binary:
			return text{binary: true, deriv: derivImplicit}, nil
		case res.binary, a.coll == res.coll && a.deriv < res.deriv:
			res = a
		case a.coll == res.coll:
		case a.deriv < res.deriv:
			res = a
		case a.deriv > res.deriv:
		case a.cs != res.cs && a.cs.superset(res.cs):
			res = a
		case a.cs != res.cs && res.cs.superset(a.cs):
		case a.cs == res.cs:
			// Two collations of one charset: a string result takes its
			// binary collation (MariaDB's DERIVATION_NONE; comparing it
			// later is error 1267).
			res.coll = a.cs.name + "_bin"
		default:
			return res, fmt.Errorf("%s mixes collations %s and %s, which MySQL refuses: CAST the arguments AS CHAR (utf8mb4_general_ci) so they agree", fn, res.coll, a.coll)
		}
	}
	if !res.binary {
		for _, a := range args {
			if !a.binary && a.kind == KindString && a.deriv == derivImplicit && !res.cs.superset(a.cs) {
				return res, fmt.Errorf("%s would convert %s to %s, which loses characters: CAST the arguments AS CHAR (utf8mb4_general_ci) so they agree", fn, a.coll, res.coll)
			}
		}
	}
	return text{binary: res.binary, coll: res.coll, cs: res.cs, deriv: res.deriv}, nil
}

// superset reports whether every character of o is in c.
func (c *charset) superset(o *charset) bool {
	if c == o || o == nil {
		return true
	}
	switch c.name {
	case "utf8mb4":
		return true
	case "utf8mb3":
		return o.name == "ascii" || o.name == "latin1" // latin1 is all in the BMP
	case "latin1":
		return o.name == "ascii"
	}
	return false
}

// textType renders a string result of chars characters in r's charset
// (or bytes, when binary) as CREATE TABLE … AS SELECT types it.
func textType(r text, chars int64, nullable bool) Type {
	chars = min(max(chars, 0), maxLength)
	if r.binary {
		t := Type{Kind: KindBytes, Nullable: nullable, prec: int(chars)}
		switch {
		case chars == 0:
			t.Column = "binary(0)"
		case chars <= 512:
			t.Column = fmt.Sprintf("varbinary(%d)", chars)
		default:
			t.Column = blobType(chars, "blob")
		}
		return t
	}
	t := Type{Kind: KindString, Nullable: nullable, Coll: r.coll, prec: int(chars)}
	switch {
	case chars == 0:
		t.Column = "char(0)"
	case chars <= 512:
		t.Column = fmt.Sprintf("varchar(%d)", chars)
	default:
		t.Column = blobType(min(chars*r.cs.mbmaxlen, maxLength), "text")
	}
	t.Column += " CHARACTER SET " + r.cs.name + " COLLATE " + r.coll
	return t
}

func blobType(bytes int64, base string) string {
	switch {
	case bytes <= 65535:
		return base
	case bytes <= 16777215:
		return "medium" + base
	}
	return "long" + base
}

// intWidth is an integer column's display width: the digits of its
// definition ("int(11)"), else MySQL's default for the type.
func intWidth(def string, unsigned bool) int64 {
	if m := lengthRe.FindStringSubmatch(def); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	name, _, _ := strings.Cut(def, " ")
	w := map[string][2]int64{"tinyint": {4, 3}, "smallint": {6, 5}, "mediumint": {9, 8}, "int": {11, 10}, "integer": {11, 10}, "bigint": {20, 20}, "year": {4, 4}}[name]
	if w[0] == 0 {
		w = [2]int64{20, 20}
	}
	if unsigned {
		return w[1]
	}
	return w[0]
}

// decimalShape is a DECIMAL definition's precision, scale and signedness.
func decimalShape(def string, frac uint8) (p, s int64, unsigned bool) {
	p, s = 65, int64(frac)
	if m := lengthRe.FindStringSubmatch(def); m != nil {
		p, _ = strconv.ParseInt(m[1], 10, 64)
		if m[2] != "" {
			s, _ = strconv.ParseInt(m[2], 10, 64)
		} else {
			s = 0
		}
	}
	return p, s, strings.Contains(def, "unsigned")
}

// intResult is an integer result shown as column (int(10), bigint(20)
// unsigned), with the digits the operators around it type by: the width
// less the sign's place.
func intResult(kind Kind, column string, nullable bool) Type {
	w := intWidth(column, kind == KindUint)
	if kind == KindInt {
		w--
	}
	return Type{Kind: kind, Column: column, Nullable: nullable, prec: int(w)}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
