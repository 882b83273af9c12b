package expr_test

import "testing"

// times is a matrix of temporal columns: zero dates, leap days, the
// TIMESTAMP range's ends, TIME's extremes and negative times.
var times = diffTable{
	cols: []diffCol{{"d", "DATE"}, {"dt", "DATETIME"}, {"dt3", "DATETIME(3)"}, {"ts", "TIMESTAMP(6) NULL"},
		{"t", "TIME"}, {"t2", "TIME(2)"}, {"y", "YEAR"}},
	rows: [][]string{
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
		{"'0000-00-00'", "'0000-00-00 00:00:00'", "'0000-00-00 00:00:00.000'", "'0000-00-00 00:00:00'", "'00:00:00'", "'00:00:00'", "0"},
		{"'2024-02-29'", "'2024-02-29 23:59:59'", "'2024-02-29 23:59:59.999'", "'2024-02-29 12:00:00.5'", "'23:59:59'", "'-00:00:01.50'", "2024"},
		{"'1970-01-01'", "'1970-01-01 00:00:00'", "'1970-01-01 00:00:00.001'", "'1970-01-01 00:00:01'", "'-838:59:59'", "'838:59:59.99'", "1901"},
		{"'9999-12-31'", "'9999-12-31 23:59:59'", "'9999-12-31 23:59:59.999'", "'2038-01-19 03:14:07.999999'", "'838:59:59'", "'-838:59:59.99'", "2155"},
		{"'2023-02-28'", "'2023-03-01 00:00:00'", "'2000-01-01 00:00:00.500'", "'2000-02-29 00:00:00'", "'12:34:56'", "'100:00:00.01'", "2000"},
		{"'2024-00-00'", "'2024-01-00 10:00:00'", "'2024-12-31 00:00:00.000'", "'2024-12-31 23:59:59.999999'", "'-12:00:00'", "'00:00:00.99'", "1970"},
	},
}

func TestDifferentialTemporal(t *testing.T) {
	differential(t, times, []string{
		"d = '2024-02-29'", "d = '2024-2-29'", "d < '2000-01-01'", "d = '20240229'", "d > dt", "d = dt", "dt3 > dt", "ts < dt3",
		"dt = '2024-02-29 23:59:59'", "dt >= '2024-02-29'", "dt3 = '2024-02-29 23:59:59.999'", "dt BETWEEN '2024-01-01' AND '2024-12-31'",
		"d IN ('2024-02-29', '1970-01-01')", "d IS NULL", "ts IS NOT NULL", "t > '10:00:00'", "t = '-838:59:59'", "t2 < t", "t < '-1:00:00'",
		"d = 'garbage'", "dt < 'x'",
		"d + 0", "dt + 0", "dt3 + 0", "ts + 0", "t + 0", "t2 + 0", "y + 1", "d * 1", "dt3 * 2", "-t", "-t2", "-d", "-dt", "-dt3", "-y", "y = 2024", "y < 2000",
		"d = 0", "dt = 20240229235959", "t = 235959",
		"CAST(dt AS DATE)", "CAST(d AS DATETIME)", "CAST(dt3 AS DATETIME)", "CAST(dt3 AS DATETIME(1))", "CAST(ts AS DATETIME(6))",
		"CAST(t2 AS TIME)", "CAST(t2 AS TIME(1))", "CAST(dt AS TIME)", "CAST('2024-02-30' AS DATE)", "CAST('2024-02-29 25:00:00' AS DATETIME)",
		"CAST(dt AS CHAR)", "CAST(d AS SIGNED)", "CAST(dt3 AS DECIMAL(20,2))", "CAST(t AS SIGNED)", "CAST(20240229 AS DATE)",
		"CAST(dt3 AS DOUBLE)", "CAST(y AS CHAR)",
		"IF(y > 2000, d, dt)", "COALESCE(d, dt3)", "CASE WHEN y > 2000 THEN d ELSE 'none' END", "IFNULL(t, '00:00:00')",
		"IF(y > 2000, t, t2)", "COALESCE(dt, ts)", "IF(y, d, d)",
		"d IS TRUE", "NOT dt", "t AND 1",
		"dt LIKE '2024%'", "d LIKE '%-29'", "t LIKE '-%'", "dt3 LIKE '%.999'", "y LIKE '20%'", "ts LIKE '%.5%'",
	})
}
