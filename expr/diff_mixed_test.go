package expr_test

import "testing"

// mixed is a matrix of the other column types (ENUM, SET, BIT, JSON as
// MariaDB stores it, MEDIUMINT UNSIGNED) beside strings of two character
// sets and numbers of both signs, for mixed-type operators.
var mixed = diffTable{
	cols: []diffCol{
		{"e", "ENUM('a','b','c d') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"st", "SET('x','y','z') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"bt", "BIT(8)"}, {"bt64", "BIT(64)"}, {"j", "JSON"},
		{"s", "VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"l", "VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"u", "BIGINT UNSIGNED"}, {"i", "INT"}, {"d", "DECIMAL(5,2)"}, {"m", "MEDIUMINT UNSIGNED"},
	},
	rows: [][]string{
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
		{"'a'", "''", "0", "0", "'{}'", "''", "''", "0", "0", "0.00", "0"},
		{"'b'", "'x,z'", "5", "18446744073709551615", "'{\"a\": 1}'", "'abc'", "'ABC'", "1", "1", "2.50", "16777215"},
		{"'c d'", "'x,y,z'", "255", "9223372036854775808", "'[1, \"x\"]'", "'é'", "'É'", "18446744073709551615", "-1", "-999.99", "1"},
		{"'a'", "'y'", "1", "1", "'\"s\"'", "'1'", "'1.0'", "9223372036854775807", "-2147483648", "999.99", "3"},
		{"'b'", "'z'", "128", "2", "'null'", "'ß'", "'ss'", "3", "7", "-0.50", "8388608"},
	},
}

func TestDifferentialMixed(t *testing.T) {
	differential(t, mixed, []string{
		"e = 'b'", "e = 'B'", "e IN ('a', 'c d')", "e < 'b'", "e LIKE 'c%'", "st = 'x,z'", "st LIKE '%y%'", "e = s",
		"bt + 0", "bt = 5", "bt64 > 0", "bt64 + 0", "bt * 2", "j = '{}'", "j LIKE '%a%'",
		"s = l", "l < s", "l = 'ss'", "s = 'ss'", "IF(i > 0, s, l)", "COALESCE(l, s)", "CASE s WHEN 'abc' THEN 'x' WHEN l THEN 'y' END",
		"NULLIF(s, l)", "-u", "-m", "u DIV i", "MOD(d, i)", "MOD(u, 3)", "MOD(i, d)", "u % i", "i DIV d", "d DIV i", "d DIV 0.3",
		"i IN (1, '1', 1.0)", "i IN ('abc', 0)", "d IN (1, '2.50')", "u IN (-1, 3)", "i IN (u, 7)",
		"CASE WHEN i > 0 THEN u ELSE i END", "IF(i, u, 0)", "IF(i, m, i)", "IFNULL(m, -1)", "COALESCE(i, d, u)",
		"m + m", "m * m", "m - 16777216", "i * d", "d * d * d", "i - d / 3", "u / 2", "u + d", "u * 1.5", "m / 7 * 7",
		"i + 0.1", "i * 0.00001", "d / 0.003", "d / 7 + d / 3", "CAST(d / 7 AS CHAR)", "IF(i > 0, d / 3, 1)",
		"CAST(u AS DECIMAL(25,5))", "CAST(d AS DECIMAL(3,2))", "CAST(-u AS SIGNED)", "CAST(m AS CHAR(3))",
	})
}
