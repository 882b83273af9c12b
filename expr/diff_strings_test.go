package expr_test

import "testing"

// texts is a matrix of character and binary string columns in utf8mb4
// and latin1, _ci and _bin, with trailing spaces, case and accent
// variants, characters beyond the BMP, and strings that look like
// numbers.
var texts = diffTable{
	cols: []diffCol{
		{"s", "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"b", "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"},
		{"l", "VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"lb", "VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin"},
		{"c", "CHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"v", "VARBINARY(10)"},
		{"bn", "BINARY(4)"},
		{"tx", "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"n", "INT"},
	},
	rows: [][]string{
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
		{"''", "''", "''", "''", "''", "''", "''", "''", "0"},
		{"'abc'", "'abc'", "'abc'", "'abc'", "'abc'", "'abc'", "'abc'", "'abc'", "1"},
		{"'ABC '", "'ABC '", "'ABC '", "'ABC '", "'ABC'", "'ABC '", "'AB'", "'ABC  '", "-1"},
		{"'Abc\\t'", "'abc\\t'", "'Äbc'", "'äbc'", "'Ab'", "'a\\0'", "'a\\0'", "'\\tabc'", "12"},
		{"'é'", "'É'", "'é'", "'É'", "'e'", "X'FF'", "X'FFFE'", "'e'", "100"},
		{"'ß'", "'ss'", "'ß'", "'ss'", "'ß'", "'ss'", "'ss'", "'ẞ'", "2147483647"},
		{"'😀'", "'😁'", "'ü'", "'y'", "'😀'", "'%_'", "'%_\\\\'", "'😀x'", "-2147483648"},
		{"'12abc'", "'1e2'", "' 12'", "'-0'", "'3.5'", "'12'", "'1e1'", "'0x10'", "7"},
		{"'it''s %'", "'a_c'", "'a%c'", "'A_C'", "'a\\\\c'", "'a_c'", "'a%c'", "'%'", "3"},
	},
}

func TestDifferentialStrings(t *testing.T) {
	differential(t, texts, []string{
		"s = 'abc'", "s = 'ABC'", "s < 'abd'", "s > 'Z'", "s = 'e'", "s = 'ss'", "s = '😁'", "s <=> NULL", "s = 'abc\\t'",
		"b = 'abc'", "b < 'abc '", "b = 'É'", "b > 'a'",
		"l = 'abc'", "l = 'ABC'", "l = 'abc'", "l = 'y'", "l < 'b'", "l = 'aBC'", "l > 'z'", "l = 'ss'",
		"lb = 'abc'", "lb = 'ä'", "lb < 'b'",
		"c = 'abc'", "c = 'AB'", "c < 'b'", "tx = 'abc'", "tx = 'e'",
		"v = 'abc'", "v = 'ABC'", "v < 'b'", "bn = 'abc'", "bn = 'ab'", "v = 'a'",
		"s LIKE 'a%'", "s LIKE '%c'", "s LIKE 'a_c'", "s LIKE 'ABC'", "s LIKE '%'", "s LIKE '_'", "s LIKE 'e'",
		"s LIKE '%!%' ESCAPE '!'", "s LIKE 'it''s \\\\%'", "b LIKE 'A%'", "b LIKE '%c%'", "l LIKE 'a%'", "l LIKE '%e'",
		"lb LIKE 'Ä%'", "v LIKE 'a%'", "v LIKE '_'", "tx LIKE '%x'", "b LIKE 'a\\\\_c'", "b NOT LIKE 'a\\\\_c'",
		"l LIKE 'a|%c' ESCAPE '|'", "n LIKE '1%'", "s LIKE n",
		"s IN ('abc', 'x')", "s NOT IN ('abc', NULL)", "l IN ('ABC', 'é')", "s BETWEEN 'a' AND 'b'", "l BETWEEN 'a' AND 'b'",
		"s = 0", "s = 12", "s + 0", "s * 1", "b + 1", "l + 0", "c + 0.5", "v + 0", "bn + 0", "s = n", "s < n",
		"CASE s WHEN 'abc' THEN 1 WHEN 'é' THEN 2 ELSE 0 END", "CASE WHEN s = 'abc' THEN s ELSE 'other' END",
		"IF(s = '', NULL, s)", "COALESCE(s, 'none')", "IFNULL(s, n)", "NULLIF(s, 'abc')", "NULLIF(l, 'ABC')",
		"CAST(s AS BINARY)", "CAST(v AS CHAR)", "CAST(s AS CHAR(2))", "CAST(l AS CHAR(2))", "CAST(n AS CHAR)",
		"CAST(s AS SIGNED)", "CAST(s AS UNSIGNED)", "CAST(s AS DECIMAL(6,2))", "CAST(s AS DOUBLE)", "CAST(bn AS CHAR)",
		"CAST(s AS BINARY(2))", "CAST(l AS BINARY)", "IF(n > 0, s, b)", "IF(n > 0, l, 'x')", "COALESCE(v, 'x')",
		"s IS TRUE", "NOT s", "s AND 1", "s LIKE 'a\\%' ESCAPE ''", "n LIKE 1", "s LIKE NULL", "NULL LIKE s",
	})
}
