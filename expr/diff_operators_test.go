package expr_test

import "testing"

// numbers is a matrix of integer, unsigned, decimal and double columns
// with NULLs, zeros, ±1 and each type's extremes.
var numbers = diffTable{
	cols: []diffCol{{"i", "INT"}, {"bi", "BIGINT"}, {"u", "BIGINT UNSIGNED"}, {"ti", "TINYINT UNSIGNED"},
		{"d", "DECIMAL(10,2)"}, {"d0", "DECIMAL(65,30)"}, {"f", "DOUBLE"}, {"fl", "FLOAT"}, {"nn", "INT NOT NULL"}},
	rows: [][]string{
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "0"},
		{"0", "0", "0", "0", "0", "0", "0", "0", "0"},
		{"1", "1", "1", "1", "1.00", "1", "1", "1", "1"},
		{"-1", "-1", "0", "0", "-1.00", "-1", "-1", "-1", "-1"},
		{"2147483647", "9223372036854775807", "18446744073709551615", "255", "99999999.99", "99999999999999999999999999999999999.999999999999999999999999999999", "1.7976931348623157e308", "3.4028234e38", "2147483647"},
		{"-2147483648", "-9223372036854775808", "9223372036854775808", "128", "-99999999.99", "-0.000000000000000000000000000001", "-2.2250738585072014e-308", "-1.17549435e-38", "-2147483648"},
		{"7", "3", "5", "3", "12.345", "0.1", "0.1", "0.1", "7"},
		{"-7", "-3", "2", "2", "-0.50", "-2.5", "2.5", "-2.5", "-7"},
	},
}

func TestDifferentialArithmetic(t *testing.T) {
	differential(t, numbers, []string{
		"i + 1", "i - 1", "i * 2", "i / 2", "i DIV 2", "i % 3", "i MOD -3", "MOD(i, 0)", "i / 0", "-i",
		"bi + 1", "bi - 1", "bi * 2", "bi * -1", "-bi", "bi DIV -1", "bi % -1",
		"u + 1", "u - 1", "u * 2", "u / 3", "u DIV 2", "u % 7", "u - i", "i - u", "u + i",
		"ti + ti", "ti * ti", "ti - 200",
		"d + 1", "d - i", "d * d", "d / 3", "d / 0", "d DIV 1", "d % 0.3", "-d",
		"d0 + d", "d0 * 2", "d0 / 7", "d0 - 1",
		"f + 1", "f * 2", "f / 3", "f - i", "f DIV 1", "f % 2", "-f", "fl + 0", "fl * 2",
		"i + d + f", "1.5 * i", "i / 3 * 3", "(i + bi) * 2", "i * 1.0 / 3",
		"'3' + i", "'1.5e1' * 2", "'abc' + 1", "' 12x' + 0",
		"i / 100000", "IF(i / 100000, 1, 0)", "i / 100000 AND 1", "NOT (i / 100000)", "i / 3 + 0e0", "i * 2 / 3 * f",
		"CAST(i * 2 / 3 AS SIGNED)", "CAST(i * 2 / 3 AS DECIMAL(12,9))", "CAST(i * 2 / 3 AS DOUBLE)", "i * 2 / 3 DIV 1",
		"(i * 2 / 3) % 1", "-(i * 2 / 3)", "COALESCE(i * 2 / 3, 0)", "CASE WHEN i > 0 THEN i * 2 / 3 ELSE 0.5 END",
		"nn + 1", "nn - 1.5", "nn * f", "nn / 2", "nn DIV 2", "nn % 2", "-nn", "nn + i",
	})
}

func TestDifferentialComparisons(t *testing.T) {
	differential(t, numbers, []string{
		"i = 1", "i <> 1", "i != bi", "i < u", "u > bi", "i <= d", "d >= 12.345", "f = 0.1", "fl = 0.1", "fl < 0.1",
		"i <=> NULL", "NULL <=> NULL", "i = NULL", "u = -1", "bi < u", "d = '12.345'", "i = '7abc'",
		"i IN (1, 7, NULL)", "i NOT IN (1, 7)", "i NOT IN (1, NULL)", "d IN (1, 12.345)",
		"i BETWEEN -1 AND 1", "i NOT BETWEEN 0 AND 10", "u BETWEEN 1 AND 5",
		"i IS NULL", "d IS NOT NULL", "i IS TRUE", "i IS NOT FALSE", "i IS UNKNOWN",
		"i > 0 AND d > 0", "i > 0 OR d IS NULL", "NOT i", "!i", "i XOR d", "i AND NULL", "i OR NULL",
		"i && bi", "i || u",
		"bi = '9223372036854775806'", "u = '18446744073709551614'", "d = '12.3450000000000000001'", "i = '7.0'", "i = ' 7'",
		"i IN ('7', 8)", "bi IN ('9223372036854775806')", "bi BETWEEN '9223372036854775806' AND '9223372036854775806'",
		"i * 2 / 3 = 0.666666666", "i * 2 / 3 > 0.666666666", "i / 3 = 0.3333", "i / 3 IN (0.3333, 1)", "(i * 2 / 3) - 0.666666666",
		"i / 3 BETWEEN 0.3333 AND 0.3333", "CASE i / 3 WHEN 0.3333 THEN 1 END", "NULLIF(i / 3, 0.3333)", "d / 3 < 4.115", "i < 0 AND bi + 1 > 0", "i > 0 OR bi * 2 > 0", "nn = 1", "nn IS NULL", "nn IN (1, 2)", "NOT nn", "nn <=> i",
	})
}

func TestDifferentialControl(t *testing.T) {
	differential(t, numbers, []string{
		"CASE WHEN i > 0 THEN 'pos' WHEN i < 0 THEN 'neg' ELSE 'zero' END",
		"CASE i WHEN 1 THEN d WHEN 7 THEN 2 END",
		"CASE WHEN i > 0 THEN i ELSE d END",
		"CASE WHEN i > 0 THEN u ELSE 1 END",
		"CASE WHEN i > 0 THEN i ELSE f END",
		"IF(i > 0, i, 'x')", "IF(i, d, i)", "IF(i IS NULL, NULL, u)",
		"IFNULL(i, 0)", "IFNULL(d, i)", "IFNULL(i, 'none')", "NULLIF(i, 1)", "NULLIF(d, 1)",
		"COALESCE(i, bi, 0)", "COALESCE(d, f)", "COALESCE(NULL, i)",
		"CAST(i AS UNSIGNED)", "CAST(bi AS UNSIGNED)", "CAST(u AS SIGNED)", "CAST(d AS SIGNED)", "CAST(f AS SIGNED)",
		"CAST(d AS DECIMAL(5,1))", "CAST(i AS DECIMAL(4,2))", "CAST(f AS DECIMAL(20,10))", "CAST(i AS CHAR)",
		"CAST(d AS CHAR(3))", "CAST(i AS DOUBLE)", "CAST(d AS DOUBLE)", "CAST(i AS BINARY)",
		"CAST(fl AS DECIMAL(30,20))", "CAST(f AS CHAR)",
		"IFNULL(nn, i)", "IFNULL(i, nn)", "COALESCE(i, nn)", "CASE WHEN nn THEN 1 ELSE 2 END", "IF(nn, 1, 2)", "NULLIF(nn, 0)",
		"CAST(nn AS DATE)", "CAST(nn AS CHAR)", "CAST(nn AS DECIMAL(12,1))",
		"CASE WHEN i > 0 THEN i / 3 ELSE 'x' END", "IF(i > 0, i / 3, 'x')", "COALESCE(i / 3, 'x')", "IFNULL(d / 7, nn)",
		"i / 3 LIKE '0.3333'", "d / 7 LIKE '%3'", "CASE WHEN i > 0 THEN d / 7 ELSE f END",
		"NULL", "1", "-5", "1.50", "-0.5", "1e3", "'abc'", "''", "TRUE", "FALSE", "18446744073709551615", "-9223372036854775808",
		"99999999999999999999", "IF(nn, NULL, NULL)", "COALESCE(NULL, NULL)", "IFNULL(NULL, 'x')", "CASE WHEN nn THEN NULL END",
	})
}
