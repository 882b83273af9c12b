package expr

import (
	"strings"
	"testing"
)

func TestJSONFunctions(t *testing.T) {
	for _, c := range []struct {
		expr, doc, want, why string
	}{
		{`JSON_EXTRACT(doc, '$')`, `{"a":1,  "b" : [1 ,2,{}], "a": 2}`, `{"a": 1, "b": [1, 2, {}], "a": 2}`, "containers re-spaced, duplicate keys kept"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"a":1,"a":2}`, `1`, "the first of duplicate keys"},
		{`JSON_EXTRACT(doc, '$.a.b')`, `{"a":1,"a":{"b":2}}`, `2`, "a duplicate key that leads on is searched too"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"a":"h\u00e9\n"}`, `"h\u00e9\n"`, "a string as written, escapes kept"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"a":1.50E+3}`, `1.50E+3`, "a number as written"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"a":-0}`, `-0`, "-0 kept"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"a":null}`, `null`, "JSON null is the text null, not SQL NULL"},
		{`JSON_EXTRACT(doc, '$.b')`, `{"a":1}`, `NULL`, "a missing member is SQL NULL"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"a": 1, "b": tru}`, `NULL`, "any error in the document is NULL"},
		{`JSON_EXTRACT(doc, '$.a')`, `{"\u0061": 1}`, `NULL`, "JSON_EXTRACT compares keys as written"},
		{`JSON_EXTRACT(doc, '$[0]')`, `{"a": 1}`, `{"a": 1}`, "[0] of a non-array is the value itself"},
		{`JSON_EXTRACT(doc, '$[1]')`, `"x"`, `NULL`, "[1] of a non-array is nothing"},
		{`JSON_EXTRACT(doc, '$."k y"[1]')`, `{"k y": [0, [1]]}`, `[1]`, "a quoted key, then an index"},
		{`JSON_EXTRACT(doc, '$')`, strings.Repeat("[", 31) + strings.Repeat("]", 31), strings.Repeat("[", 31) + strings.Repeat("]", 31), "31 levels are read"},
		{`JSON_EXTRACT(doc, '$')`, strings.Repeat("[", 32) + strings.Repeat("]", 32), `NULL`, "the 32nd level is an error"},
		{`JSON_EXTRACT(doc, '$')`, `1.`, `1.`, "json_lib takes 1. as a number"},
		{`JSON_EXTRACT(doc, '$')`, `01`, `NULL`, "a leading zero is an error"},
		{`JSON_EXTRACT(doc, '$')`, "\"a\tb\"", `NULL`, "a raw control character in a string is an error"},
		{`JSON_EXTRACT(doc, '$')`, `"\ud83d"`, `NULL`, "a lone surrogate is an error"},
		{`JSON_VALUE(doc, '$.a')`, `{"a": 1, "b": tru}`, `1`, "JSON_VALUE stops at its value"},
		{`JSON_VALUE(doc, '$')`, `01`, `0`, "JSON_VALUE reads the first token only"},
		{`JSON_VALUE(doc, '$.a')`, `{"a":"h\u00e9\n\"q\""}`, "hé\n\"q\"", "a string unquoted"},
		{`JSON_VALUE(doc, '$.a')`, `{"a":true}`, `1`, "true is 1"},
		{`JSON_VALUE(doc, '$.a')`, `{"a":false}`, `0`, "false is 0"},
		{`JSON_VALUE(doc, '$.a')`, `{"a":null}`, `NULL`, "JSON null is SQL NULL"},
		{`JSON_VALUE(doc, '$.a')`, `{"a":{"x":1},"a":2}`, `2`, "the first scalar, past an object with the same key"},
		{`JSON_VALUE(doc, '$.a')`, `{"a":[1]}`, `NULL`, "an array is no scalar"},
		{`JSON_VALUE(doc, '$.a')`, `{"\u0061": 7}`, `7`, "JSON_VALUE decodes keys"},
		{`JSON_VALUE(doc, '$.a')`, `{"a": "abc`, `NULL`, "an unterminated string"},
		{`JSON_UNQUOTE(doc)`, `"str\ud83d\ude00"`, "str😀", "a surrogate pair is one character"},
		{`JSON_UNQUOTE(doc)`, `"a\x"`, `ax`, "an unknown escape is its character"},
		{`JSON_UNQUOTE(doc)`, ` "a" x`, `a`, "white space before, anything after"},
		{`JSON_UNQUOTE(doc)`, `"abc`, `"abc`, "an invalid string comes back as it was"},
		{`JSON_UNQUOTE(doc)`, `"\ud83d"`, `"\ud83d"`, "a lone surrogate: as it was"},
		{`JSON_UNQUOTE(doc)`, `[1]`, `[1]`, "not a string: as it was"},
		{`JSON_UNQUOTE(JSON_EXTRACT(doc, '$.a'))`, `{"a":"\/\b"}`, "/\b", "the common pair"},
	} {
		got, err := evalOn(t, c.expr, Datum{Kind: KindString, S: c.doc, Coll: "utf8mb4_bin"})
		if err != nil || got != c.want {
			t.Errorf("%s of %q = %q, %v; want %q (%s)", c.expr, c.doc, got, err, c.want, c.why)
		}
	}
}

func TestJSONFunctionErrors(t *testing.T) {
	for _, c := range []struct {
		expr, want, why string
	}{
		{`JSON_VALUE(doc, '$.*')`, "wildcards select several values", "one value per row"},
		{`JSON_EXTRACT(doc, '$**.a')`, "wildcards", "the recursive wildcard too"},
		{`JSON_EXTRACT(doc, '$[*]')`, "write one index [n]", "an array wildcard"},
		{`JSON_EXTRACT(doc, '$[1 to 3]')`, "ranges", "a range"},
		{`JSON_EXTRACT(doc, '$[last]')`, "last", "counting from the end"},
		{`JSON_EXTRACT(doc, '$[-1]')`, "negative indexes", "counting from the end"},
		{`JSON_EXTRACT(doc, 'a')`, "a path starts with $", "the root"},
		{`JSON_EXTRACT(doc, '$."a\\"b"')`, "escapes in a quoted key", "keys are compared as written"},
		{`JSON_EXTRACT(doc, '$.')`, "a member name follows '.'", "an empty step"},
		{`JSON_EXTRACT(doc, s)`, "path must be a string literal", "the path is checked at plan time"},
		{`JSON_VALUE(l, '$')`, "utf8mb4 documents only", "\\u escapes may name characters latin1 lacks"},
		{`JSON_UNQUOTE(d)`, "takes a JSON document", "a date is no document"},
	} {
		checkRefused(t, c.expr, c.want, c.why)
	}
}

func TestJSONTypes(t *testing.T) {
	for _, c := range []struct {
		expr, want, why string
	}{
		{`JSON_VALUE(s, '$')`, "varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "the document's type and collation"},
		{`JSON_EXTRACT(s, '$')`, "varchar(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "twice the document's length"},
		{`JSON_UNQUOTE(s)`, "varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "utf8mb4_bin"},
		{`JSON_EXTRACT(doc, '$')`, "longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "a JSON column's"},
	} {
		e, err := Parse(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		typ, err := e.Check(timeSchema)
		if err != nil || typ.Column != c.want {
			t.Errorf("%s: %s, %v; want %s (%s)", c.expr, typ.Column, err, c.want, c.why)
		}
	}
}
