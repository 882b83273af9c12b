package expr

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckErrors(t *testing.T) {
	defs := map[string]string{
		"s":  "varchar(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"u":  "varchar(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
		"g":  "varchar(8) CHARACTER SET gbk COLLATE gbk_chinese_ci",
		"t":  "time",
		"dt": "datetime",
		"p":  "point",
		"x":  "varchar(8)",
		"j":  "json",
		"w":  "decimal(30,10)",
		"l":  "varchar(8) CHARACTER SET latin1 COLLATE latin1_swedish_ci",
		"m":  "text CHARACTER SET utf16 COLLATE utf16_general_ci",
	}
	schema := func(n string) (Column, bool) {
		d, ok := defs[n]
		return Column{Name: n, Def: d}, ok
	}
	cases := []struct {
		in  string
		pos int
		msg string
		why string
	}{
		{"nope + 1", 0, `column "nope" is not in the source table`, "an unknown column is named, at its offset"},
		{"s = u", 2, "error 1267", "two columns of one character set, neither _bin, do not mix"},
		{"u = 'x'", 2, "collation utf8mb4_unicode_ci is not offered", "a collation without Go weights is refused"},
		{"g = 'x'", 2, "collation gbk_chinese_ci is not offered", "gbk compares by weights Go does not have"},
		{"t < dt", 2, "TIME with a date", "TIME against DATETIME mixes in the current date"},
		{"CAST(g AS BINARY)", 0, "not offered", "gbk's bytes are not kept"},
		{"CAST(s AS DECIMAL(70,2))", 10, "out of range", "DECIMAL beyond 65 digits"},
		{"CAST(s AS DATETIME(7))", 10, "at most 6", "fractions beyond microseconds"},
		{"s LIKE 'a' ESCAPE s", 2, "constant character", "ESCAPE reads no column"},
		{"s LIKE 'a' ESCAPE 'ab'", 2, "one character", "ESCAPE is one character"},
		{"x = 1", 0, "has no COLLATE", "a character column's definition must name its collation"},
		{"IF(s = 'a', s, u)", 0, "error 1267", "branches of collations that do not mix"},
		{"w * w * w", 6, "more than 81 digits", "a product MySQL computes inexactly"},
		{"j = '{}'", 2, "comparing a JSON column is not offered", "MySQL 8 compares JSON as JSON, MariaDB as text"},
		{"l = 'ǅ'", 2, "error 1267", "a literal a latin1 column cannot hold does not convert to it"},
		{"'x' < l OR l >= 'ǅ'", 13, "error 1267", "on either side"},
		{"l IN ('a', 'ǅ')", 2, "error 1267", "in an IN list"},
		{"l LIKE 'ǅ%'", 2, "error 1267", "in a LIKE pattern"},
		{"COALESCE(l, 'ǅ')", 0, "error 1267", "as a branch of a column's collation"},
		{"IF(l = 'é', l, 'ǅ')", 0, "error 1267", "as a branch, after a literal latin1 holds"},
		{"CASE WHEN l = 'a' THEN l ELSE 'ǅ' END", 0, "error 1267", "as a CASE branch"},
		{"SUBSTRING(m, 1, 3)", 0, "SUBSTRING: strings in collation utf16_general_ci (character set utf16) are not supported by the string functions: CAST the value AS CHAR", "the function named once"},
	}
	for _, c := range cases {
		e, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		_, err = e.Check(schema)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s (%s): got %v, want an *Error", c.in, c.why, err)
			continue
		}
		if pe.Pos != c.pos || !strings.Contains(pe.Msg, c.msg) || strings.Count(pe.Msg, "SUBSTRING: ") > 1 {
			t.Errorf("%s (%s): got %v, want offset %d and %q", c.in, c.why, err, c.pos, c.msg)
		}
	}
}

// TestCallTyping: a registered function gets its arguments' types, the
// values of its constant arguments, and decimal arguments at their
// type's scale.
func TestCallTyping(t *testing.T) {
	var gotConsts []*Datum
	f := &Func{Name: "PROBE", MinArgs: 2, MaxArgs: 2,
		Type: func(args []Type, consts []*Datum) (Type, error) {
			gotConsts = consts
			return stringType(10, connCollation, true), nil
		},
		Eval: func(args []Datum, types []Type) (Datum, error) {
			return Datum{Kind: KindString, S: args[0].Text() + "|" + args[1].Text(), Coll: connCollation}, nil
		}}
	e := &Expr{}
	root := &call{f: f, args: []node{&arith{op: opDiv, l: intLit(1, 0), r: intLit(3, 0)}, &colRef{name: "d"}}}
	e.root, e.columns = root, []string{"d"}
	if _, err := e.Check(testSchema); err != nil {
		t.Fatal(err)
	}
	if gotConsts[0] == nil || gotConsts[1] != nil {
		t.Fatalf("consts %v: want the constant 1/3 and no value for the column", gotConsts)
	}
	v, err := e.Eval([]Datum{{Kind: KindDecimal, S: "2.50", Frac: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if v.S != "0.3333|2.50" {
		t.Fatalf("got %q: 1/3 reaches a function at its type's scale (0.3333), as MySQL's val_str gives it", v.S)
	}
}
