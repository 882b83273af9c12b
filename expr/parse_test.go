package expr

import (
	"errors"
	"strings"
	"testing"
)

func ident(n string) string { return "`" + strings.ReplaceAll(n, "`", "``") + "`" }

func TestParseSQL(t *testing.T) {
	cases := []struct{ in, sql, why string }{
		{"a", "`a`", "a column renders through col"},
		{"`odd name`", "`odd name`", "backquoted names keep spaces"},
		{"a + b * c", "(`a` + (`b` * `c`))", "* binds tighter than +"},
		{"a - b - c", "((`a` - `b`) - `c`)", "- is left-associative"},
		{"a DIV 2 MOD 3", "((`a` DIV 2) % 3)", "DIV and MOD share *'s level, left to right"},
		{"-5", "-5", "a negative literal folds"},
		{"-9223372036854775808", "-9223372036854775808", "BIGINT's minimum is a literal, as in MySQL"},
		{"- a", "-(`a`)", "unary minus on a column"},
		{"a = 1 AND b = 2 OR c", "(((`a` = 1) AND (`b` = 2)) OR `c`)", "AND binds tighter than OR"},
		{"a && b || c", "((`a` AND `b`) OR `c`)", "&& and || are AND and OR"},
		{"NOT a = 1", "(NOT (`a` = 1))", "NOT is below comparison"},
		{"!a = 1", "((NOT `a`) = 1)", "! binds tighter than comparison"},
		{"a IS NOT NULL", "(`a` IS NOT NULL)", "IS NOT NULL"},
		{"a NOT IN (1, 'x', NULL)", "(`a` NOT IN (1, 'x', NULL))", "NOT IN with mixed literals"},
		{"a BETWEEN 1 AND 2 AND b", "((`a` BETWEEN 1 AND 2) AND `b`)", "BETWEEN's AND is its own"},
		{"a NOT LIKE 'x\\_%' ESCAPE '!'", "(`a` NOT LIKE 'x\\\\_%' ESCAPE '!')", "\\_ keeps its backslash"},
		{`'it''s' = "a\"b"`, `('it''s' = 'a"b')`, "both quotes and their escapes"},
		{"1.50 + .5 + 1e3", "((1.50 + 0.5) + 1e3)", "decimal and double literals"},
		{"CASE WHEN a THEN 1 ELSE 2 END", "CASE WHEN `a` THEN 1 ELSE 2 END", "searched CASE"},
		{"case a when 1 then 'x' end", "CASE `a` WHEN 1 THEN 'x' END", "simple CASE, any case"},
		{"CAST(a AS DECIMAL(10,2))", "CAST(`a` AS DECIMAL(10,2))", "CAST with precision"},
		{"mod(a, 3)", "(`a` % 3)", "MOD as a function"},
		{"IFNULL(a, 0) + COALESCE(b, c, 1)", "(IFNULL(`a`, 0) + COALESCE(`b`, `c`, 1))", "control functions"},
		{"a <=> NULL", "(`a` <=> NULL)", "null-safe equality"},
		{"a = b = c", "((`a` = `b`) = `c`)", "comparisons are left-associative"},
		{"a XOR b", "(`a` XOR `b`)", "XOR"},
		{"a IS TRUE", "(`a` IS TRUE)", "IS TRUE"},
	}
	for _, c := range cases {
		e, err := Parse(c.in)
		if err != nil {
			t.Errorf("%s (%s): %v", c.in, c.why, err)
			continue
		}
		if got := e.SQL(ident); got != c.sql {
			t.Errorf("%s (%s): SQL %s, want %s", c.in, c.why, got, c.sql)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in  string
		pos int
		msg string
		why string
	}{
		{"DATEFORMAT(a, '%Y')", 0, "unknown function DATEFORMAT", "an unknown function is named"},
		{"1 + IFNUL(a, 1)", 4, "unknown function IFNUL: did you mean IFNULL?", "a typo gets the nearest function"},
		{"1 + NOW()", 4, "NOW() is not offered: it reads the clock", "a clock function says why, not a near name"},
		{"UNIX_TIMESTAMP()", 0, "UNIX_TIMESTAMP() is not offered: it reads the clock", "UNIX_TIMESTAMP without its argument reads the clock"},
		{"RAND()", 0, "it reads a random number", "chance is refused with why"},
		{"NOSUCHTHING(a)", 0, "functions offered are listed in docs/expressions.md", "no near name: where to look"},
		{"a + ", 4, "ends too early", "a missing operand points at the end"},
		{"a +* b", 3, "unexpected \"*\"", "an operator where a value should be"},
		{"'abc", 0, "unterminated string", "an open string points at its quote"},
		{"a b", 2, "after a complete expression", "two values without an operator"},
		{"(a", 2, "expected \")\"", "an open parenthesis"},
		{"a & b", 2, "bitwise operator &", "bitwise operators are refused with the fix"},
		{"a REGEXP 'x'", 2, "REGEXP is not offered", "REGEXP is refused"},
		{"select", 0, "", "a plain word is a column"},
		{"CAST(a AS FLOAT)", 10, "CAST to FLOAT", "an unknown CAST type"},
		{"IF(a, 1)", 0, "IF takes 3 arguments", "argument count"},
		{"", 0, "empty expression", "empty text"},
		{"t.a", 1, "qualified names", "qualified names are refused"},
		{"12abc", 0, "runs into a name", "digits then letters"},
		{"CASE a END", 7, "at least one WHEN", "CASE without WHEN"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%s (%s): %v", c.in, c.why, err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s (%s): error %v is not an *Error", c.in, c.why, err)
			continue
		}
		if pe.Pos != c.pos || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s (%s): got %v, want offset %d and %q", c.in, c.why, err, c.pos, c.msg)
		}
	}
}

func TestColumnsFirstUse(t *testing.T) {
	e, err := Parse("b + a * B + c")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Columns(), ","); got != "b,a,c" {
		t.Fatalf("columns %s, want b,a,c (first use, names case-insensitive)", got)
	}
}
