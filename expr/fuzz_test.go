package expr

import (
	"testing"
)

// FuzzParse: the parser never panics, and a text that parses renders
// through SQL to a text that parses again to the same SQL. A parsed
// expression over text columns also checks and evaluates without panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a", "`odd name`", "a + b * c", "-9223372036854775808", "a NOT LIKE 'x\\_%' ESCAPE '!'", `'it''s' = "a\"b"`,
		"1.50 + .5 + 1e3", "CASE WHEN a THEN 1 ELSE 2 END", "case a when 1 then 'x' end", "CAST(a AS DECIMAL(10,2))",
		"mod(a, 3)", "IFNULL(a, 0) + COALESCE(b, c, 1)", "a <=> NULL", "!a = 1", "a BETWEEN 1 AND 2 AND b",
		"a NOT IN (1, 'x', NULL)", "a IS NOT TRUE", "a XOR b || c && d", "NULLIF(a, '') DIV 2", "CAST(a AS BINARY(3))",
		"- - 1", "-(-9223372036854775807 - 1)", "18446744073709551616", "1e400", "'\\0\\Z\\n'", "a/0", "a LIKE b ESCAPE ''",
	} {
		f.Add(s)
	}
	schema := func(n string) (Column, bool) {
		return Column{Name: n, Def: "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", Nullable: true}, true
	}
	f.Fuzz(func(t *testing.T, text string) {
		e, err := Parse(text)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%q: error %T is not an *Error", text, err)
			}
			return
		}
		s1 := e.SQL(ident)
		e2, err := Parse(s1)
		if err != nil {
			t.Fatalf("%q renders as %q, which does not parse: %v", text, s1, err)
		}
		if s2 := e2.SQL(ident); s2 != s1 {
			t.Fatalf("%q renders as %q, which renders as %q", text, s1, s2)
		}
		if _, err := e.Check(schema); err != nil {
			return
		}
		row := make([]Datum, len(e.Columns()))
		for i := range row {
			row[i] = Datum{Kind: KindString, S: "12abc ", Coll: "utf8mb4_general_ci"}
		}
		_, _ = e.Eval(row)
	})
}
