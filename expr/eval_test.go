package expr

import (
	"fmt"
	"strings"
	"testing"
)

// testSchema: columns i (int), u (bigint unsigned), d (decimal(10,2)),
// s (utf8mb4_general_ci), b (utf8mb4_bin), v (varbinary), dt (datetime(3)),
// dd (date), f (double).
func testSchema(name string) (Column, bool) {
	defs := map[string]string{
		"i":  "int(11)",
		"u":  "bigint(20) unsigned",
		"d":  "decimal(10,2)",
		"s":  "varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"b":  "varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
		"v":  "varbinary(20)",
		"dt": "datetime(3)",
		"dd": "date",
		"f":  "double",
		"bi": "bigint(20)",
	}
	d, ok := defs[strings.ToLower(name)]
	return Column{Name: name, Def: d, Nullable: true}, ok
}

// render is a value as the server's text protocol shows it ("NULL" for NULL).
func render(d Datum) string {
	if d.IsNull() {
		return "NULL"
	}
	return toText(d)
}

func TestEval(t *testing.T) {
	row := map[string]Datum{
		"i":  {Kind: KindInt, I: 7},
		"u":  {Kind: KindUint, U: 18446744073709551615},
		"d":  {Kind: KindDecimal, S: "-12.50", Frac: 2},
		"s":  {Kind: KindString, S: "Abc  ", Coll: "utf8mb4_general_ci"},
		"b":  {Kind: KindString, S: "Abc", Coll: "utf8mb4_bin"},
		"v":  {Kind: KindBytes, S: "ab\x00"},
		"dt": {Kind: KindDatetime, S: "2024-02-29 23:59:59.500", Frac: 3},
		"dd": {Kind: KindDate, S: "2024-02-29"},
		"f":  {Kind: KindDouble, F: 0.1},
		"bi": {Kind: KindInt, I: 9223372036854775807},
	}
	cases := []struct{ in, want, why string }{
		{"i + 1", "8", "integer addition"},
		{"i / 2", "3.5000", "division adds 4 decimals"},
		{"i DIV 2", "3", "integer division truncates"},
		{"-i DIV 2", "-3", "toward zero"},
		{"i % -3", "1", "MOD takes the dividend's sign"},
		{"-7 MOD 3", "-1", "MOD takes the dividend's sign"},
		{"i / 0", "NULL", "division by zero is NULL"},
		{"d * 2", "-25.00", "decimal keeps its scale"},
		{"d / 3", "-4.166667", "decimal division: scale 2+4, rounded"},
		{"d + i", "-5.50", "decimal + int"},
		{"f + 0.2", "0.30000000000000004", "double arithmetic"},
		{"u - 1", "18446744073709551614", "unsigned arithmetic"},
		{"s = 'abc'", "1", "general_ci ignores case and trailing spaces"},
		{"b = 'abc'", "0", "a _bin column compares exactly"},
		{"s LIKE 'ab%'", "1", "LIKE by the column's collation"},
		{"s LIKE 'Abc'", "0", "LIKE does not ignore trailing spaces"},
		{"b LIKE 'a%'", "0", "LIKE by a _bin collation"},
		{"i IN (1, 7)", "1", "IN finds"},
		{"i IN (1, NULL)", "NULL", "IN with a NULL and no match is NULL"},
		{"i NOT IN (1, NULL)", "NULL", "so is NOT IN"},
		{"i BETWEEN 1 AND 7", "1", "BETWEEN is inclusive"},
		{"NULL = NULL", "NULL", "NULL compares as NULL"},
		{"NULL <=> NULL", "1", "<=> compares NULLs"},
		{"NULL AND 0", "0", "FALSE wins AND"},
		{"NULL OR 1", "1", "TRUE wins OR"},
		{"NOT NULL", "NULL", "NOT NULL is NULL"},
		{"'10' = 10.0", "1", "a string compared with a number is a number"},
		{"'abc' = 0", "1", "a non-numeric string is 0"},
		{"dd < dt", "1", "a date compares as its midnight"},
		{"dt >= '2024-02-29'", "1", "a string compared with a datetime is a datetime"},
		{"dd + 0", "20240229", "a date as a number"},
		{"CASE WHEN i > 5 THEN 'big' ELSE 1 END", "big", "CASE"},
		{"CASE i WHEN 7 THEN 2.5 ELSE 1 END", "2.5", "simple CASE, decimal result"},
		{"CASE i WHEN 8 THEN 2.5 ELSE 1 END", "1.0", "an integer branch takes the decimal scale"},
		{"IF(i > 10, 'x', NULL)", "NULL", "IF's other branch"},
		{"IFNULL(NULL, i)", "7", "IFNULL"},
		{"NULLIF(i, 7)", "NULL", "NULLIF equal"},
		{"COALESCE(NULL, NULL, d)", "-12.50", "COALESCE"},
		{"CAST(d AS SIGNED)", "-13", "CAST rounds half away from zero"},
		{"CAST(-1 AS UNSIGNED)", "18446744073709551615", "CAST keeps the bits"},
		{"CAST(i AS DECIMAL(5,2))", "7.00", "CAST to DECIMAL"},
		{"CAST(12345 AS DECIMAL(4,1))", "999.9", "CAST to DECIMAL clamps"},
		{"CAST(dt AS DATE)", "2024-02-29", "CAST to DATE"},
		{"CAST('2024-1-2 3:04:05' AS DATETIME)", "2024-01-02 03:04:05", "CAST reads loose datetimes"},
		{"CAST(s AS CHAR(2))", "Ab", "CAST to CHAR cuts"},
		{"CAST('ab' AS BINARY(4))", "ab\x00\x00", "CAST to BINARY pads"},
		{"v = 'ab'", "0", "binary strings do not pad"},
		{"1 XOR 1", "0", "XOR"},
		{"2 IS TRUE", "1", "IS TRUE"},
		{"MOD(10, 4)", "2", "MOD as a function"},
	}
	for _, c := range cases {
		e, err := Parse(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if _, err := e.Check(testSchema); err != nil {
			t.Errorf("%s: check: %v", c.in, err)
			continue
		}
		vals := make([]Datum, len(e.Columns()))
		for i, n := range e.Columns() {
			vals[i] = row[strings.ToLower(n)]
		}
		got, err := e.Eval(vals)
		if err != nil {
			t.Errorf("%s (%s): %v", c.in, c.why, err)
			continue
		}
		if r := render(got); r != c.want {
			t.Errorf("%s (%s): got %q, want %q", c.in, c.why, r, c.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	cases := []struct{ in, msg, why string }{
		{"bi + 1", "BIGINT value is out of range", "signed overflow is error 1690"},
		{"bi * 2", "BIGINT value is out of range", "multiplication overflow"},
		{"u + 1", "BIGINT UNSIGNED value is out of range", "unsigned overflow"},
		{"i - u", "BIGINT UNSIGNED value is out of range", "a negative unsigned result"},
		{"-(-9223372036854775807 - 1)", "out of range", "negating BIGINT's minimum"},
	}
	row := []Datum{}
	vals := map[string]Datum{"bi": {Kind: KindInt, I: 9223372036854775807}, "u": {Kind: KindUint, U: 18446744073709551615}, "i": {Kind: KindInt, I: 7}}
	for _, c := range cases {
		e, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if _, err := e.Check(testSchema); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		row = row[:0]
		for _, n := range e.Columns() {
			row = append(row, vals[n])
		}
		_, err = e.Eval(row)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s (%s): got %v, want %q", c.in, c.why, err, c.msg)
		}
	}
}

// TestEvalConcurrent: projector goroutines share a checked expression;
// Eval keeps no state (run with -race).
func TestEvalConcurrent(t *testing.T) {
	e, err := Parse("CASE WHEN s LIKE 'a%' THEN d / 3 WHEN i IN (1, 2) THEN CAST(i AS CHAR) ELSE COALESCE(s, 'x') END")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Check(testSchema); err != nil {
		t.Fatal(err)
	}
	rows := [][]Datum{
		{{Kind: KindString, S: "abc", Coll: "utf8mb4_general_ci"}, {Kind: KindDecimal, S: "1.00", Frac: 2}, {Kind: KindInt, I: 1}},
		{{Kind: KindString, S: "zzz", Coll: "utf8mb4_general_ci"}, {Kind: KindDecimal, S: "2.00", Frac: 2}, {Kind: KindInt, I: 2}},
		{Null, Null, Null},
	}
	want := []string{"0.333333", "2", "x"}
	done := make(chan string, 4)
	for g := range 4 {
		go func() {
			for n := range 2000 {
				i := (n + g) % len(rows)
				v, err := e.Eval(rows[i])
				if err != nil || v.Text() != want[i] {
					done <- fmt.Sprintf("row %d: %q, %v", i, v.Text(), err)
					return
				}
			}
			done <- ""
		}()
	}
	for range 4 {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
}
