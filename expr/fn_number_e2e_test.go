package expr_test

import (
	"fmt"
	"strings"
	"testing"
)

// numColumns are the number columns of the differential table with the
// values the generator picks from: NULL, zero, ±1, halves and the
// extremes of each type.
var numColumns = []struct {
	name, def string
	vals      []string
}{
	{"ti", "TINYINT", []string{"-128", "127", "0", "-1", "1"}},
	{"tu", "TINYINT UNSIGNED", []string{"0", "255", "1"}},
	{"si", "SMALLINT", []string{"-32768", "32767", "-1"}},
	{"su", "SMALLINT UNSIGNED", []string{"0", "65535"}},
	{"mi", "MEDIUMINT", []string{"-8388608", "8388607", "0"}},
	{"mu", "MEDIUMINT UNSIGNED", []string{"0", "16777215"}},
	{"i", "INT", []string{"-2147483648", "2147483647", "0", "-7"}},
	{"iu", "INT UNSIGNED", []string{"0", "4294967295"}},
	{"bi", "BIGINT", []string{"-9223372036854775807", "9223372036854775807", "0", "-1"}},
	{"bu", "BIGINT UNSIGNED", []string{"0", "18446744073709551615", "9223372036854775808"}},
	{"y", "YEAR", []string{"0", "1901", "2155"}},
	{"d1", "DECIMAL(5,0)", []string{"-99999", "99999", "0"}},
	{"d6", "DECIMAL(10,2)", []string{"-99999999.99", "99999999.99", "-0.01", "0.01", "-1.50", "1.50", "0.00", "-3.00"}},
	{"d7", "DECIMAL(11,2)", []string{"-999999999.99", "999999999.99", "-0.5"}},
	{"d8", "DECIMAL(20,2)", []string{"-999999999999999999.99", "999999999999999999.99", "-0.99"}},
	{"d9", "DECIMAL(65,30)", []string{"-99999999999999999999999999999999999.999999999999999999999999999999", "0.000000000000000000000000000001", "-0.000000000000000000000000000001"}},
	{"d12", "DECIMAL(3,3)", []string{"-0.999", "0.999", "0.000", "-0.001"}},
	{"d15", "DECIMAL(18,2)", []string{"-9999999999999999.99", "9999999999999999.99"}},
	{"d19", "DECIMAL(19,0)", []string{"-9999999999999999999", "9999999999999999999"}},
	{"du", "DECIMAL(5,2) UNSIGNED", []string{"0.00", "999.99", "0.01"}},
	{"du3", "DECIMAL(10,1) UNSIGNED", []string{"999999999.9", "0.1"}},
	{"du8", "DECIMAL(3,3) UNSIGNED", []string{"0.999", "0.000"}},
	{"du16", "DECIMAL(20,0) UNSIGNED", []string{"99999999999999999999", "0"}},
	{"dd", "DOUBLE", []string{"-1.5", "1.5", "-0.5", "0.5", "1e308", "-1e308", "2.2250738585072014e-308", "-4.9e-324", "123456789012.75", "0"}},
	{"f", "FLOAT", []string{"-1.5", "3.4e38", "0.1", "-0.1"}},
}

// TestNumberFunctionsDifferential: FLOOR, CEIL, CEILING and ABS equal the
// server's values and result types for every number type, at its extremes.
func TestNumberFunctionsDifferential(t *testing.T) {
	rng := seededRand(t)
	conn := dbConn(t, "fnnum")
	cols := []string{"id INT PRIMARY KEY"}
	for _, c := range numColumns {
		cols = append(cols, c.name+" "+c.def)
	}
	cols = append(cols, "nn INT NOT NULL")
	mustExec(t, conn, "CREATE TABLE t ("+strings.Join(cols, ", ")+")")
	var tuples []string
	for id := 1; id <= 80; id++ {
		vals := []string{fmt.Sprint(id)}
		for _, c := range numColumns {
			if rng.IntN(8) == 0 {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, pick(rng, c.vals...))
			}
		}
		vals = append(vals, pick(rng, "-5", "5"))
		tuples = append(tuples, "("+strings.Join(vals, ", ")+")")
	}
	mustExec(t, conn, "INSERT INTO t VALUES "+strings.Join(tuples, ", "))
	ft := loadTable(t, conn, "t")
	var cases []fnCase
	for _, c := range append(numColumns, struct {
		name, def string
		vals      []string
	}{name: "nn"}) {
		for _, fn := range []string{"FLOOR", "CEIL", "CEILING", "ABS"} {
			cases = append(cases, fnCase{fn, []fnArg{col(c.name)}})
		}
	}
	for _, fn := range []string{"FLOOR", "ABS"} {
		cases = append(cases, fnCase{fn, []fnArg{nullLit()}}, fnCase{fn, []fnArg{intLit(-3)}})
	}
	checkCases(t, conn, ft, "t", cases)
}

var numExprs = diffTable{
	cols: []diffCol{{"i", "INT"}, {"b", "BIGINT"}, {"u", "BIGINT UNSIGNED"}, {"d", "DECIMAL(10,2)"}, {"du", "DECIMAL(6,3) UNSIGNED"}, {"g", "DOUBLE"}, {"y", "YEAR"}},
	rows: [][]string{
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
		{"0", "0", "0", "0.00", "0.000", "0", "0"},
		{"-7", "-9223372036854775807", "18446744073709551615", "-0.50", "999.999", "-0.5", "2155"},
		{"2147483647", "9223372036854775807", "1", "99999999.99", "0.001", "1e300", "1901"},
		{"-2147483648", "-1", "9223372036854775808", "-99999999.99", "1.000", "-2.5", "2024"},
		{"1", "-9223372036854775808", "0", "0.01", "0.000", "1e-300", "0"}, // ABS of it: error 1690 on both
	},
}

func TestNumberFunctionsThroughParser(t *testing.T) {
	differential(t, numExprs, []string{
		"FLOOR(i)", "CEIL(b)", "ABS(i)", "ABS(b)", "ABS(u)", "FLOOR(d)", "CEILING(d)", "ABS(d)", "FLOOR(du)", "CEIL(du)",
		"ABS(g)", "FLOOR(g) = CEIL(g)", "FLOOR(y)", "ABS(y)", "FLOOR(d / 3)", "CEIL(d * 1.5)", "ABS(i - 1)", "FLOOR(-3)",
		"ABS(NULL)", "FLOOR(i / 2)", "CEIL(FLOOR(d))",
	})
}
