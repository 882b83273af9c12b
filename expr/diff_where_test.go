package expr_test

import (
	"testing"

	"github.com/readside/readside/expr"
)

// filters is a source table shaped like the ones `where:` filters read:
// strings under a _ci and a _bin collation (with trailing spaces and
// case variants), an exact decimal, an unsigned BIGINT at its extreme, a
// boolean-ish TINYINT and a DATETIME, each with NULLs.
var filters = diffTable{
	cols: []diffCol{{"status", "VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"code", "VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"}, {"total", "DECIMAL(12,2)"},
		{"big", "BIGINT UNSIGNED"}, {"flag", "TINYINT(1)"}, {"created", "DATETIME(6)"}, {"note", "VARCHAR(16)"}},
	rows: [][]string{
		{"'paid'", "'paid'", "1250.50", "18446744073709551615", "1", "'2024-03-01 10:00:00'", "NULL"},
		{"'PAID  '", "'PAID'", "-5.00", "0", "0", "'2024-02-29 23:59:59.999999'", "'x'"},
		{"'draft'", "'paid  '", "0.00", "18446744073709551614", "NULL", "NULL", "'O''Brien  '"},
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
		{"'O''Brien  '", "'o_brien'", "1000.00", "1", "2", "'2024-03-01 00:00:00'", "'%'"},
	},
}

// TestDifferentialWhere: where filters, read as the projector reads them
// (expr.ParseCondition: the text IS TRUE), give the server's WHERE truth
// on every row — comparisons by each column's collation, AND/OR/XOR/NOT
// in three-valued logic, [NOT] IN, IS [NOT] NULL, [NOT] LIKE,
// [NOT] BETWEEN and <=>, with NULLs on either side.
func TestDifferentialWhere(t *testing.T) {
	differentialParsed(t, filters, []string{
		"status <> 'draft'", "status = 'PAID'", "status != 'paid'", "code = 'PAID'", "code = 'paid'", "code < 'p'",
		"total > 1000", "total >= 1250.5", "total < 1250.50", "total = '1250.5'", "total > -5", "total <= 0",
		"big = 18446744073709551615", "big > 18446744073709551614", "big <> 0",
		"note = 'x'", "note <> 'x'", "NOT note = 'x'", "note IS NULL", "note IS NOT NULL", "note <=> NULL", "NOT (note <=> NULL)",
		"status IN ('new', 'paid')", "status NOT IN ('new', 'paid')", "status NOT IN ('new', NULL)", "status IN ('x', NULL)",
		"code IN ('PAID', 'o_brien')", "total BETWEEN 1000 AND 2000", "total NOT BETWEEN 1000 AND 2000",
		"status BETWEEN 'a' AND 'e'", "status NOT BETWEEN 'a' AND 'e'", "created BETWEEN '2024-03-01' AND '2024-03-02'",
		"note = 'O''Brien'", "note LIKE 'o''b%'", "status LIKE 'o_brien%'", "status NOT LIKE '%x%'", "code LIKE 'P%'",
		"code LIKE 'o\\\\_brien'", "note LIKE '\\\\%'", "code NOT LIKE 'p%'",
		"flag", "NOT flag", "flag AND status = 'paid'", "flag OR note IS NULL", "flag XOR total > 0",
		"status = 'draft' OR total > 1000", "status = 'draft' OR note = 'x'", "status = 'paid' OR note = 'x'",
		"(status = 'draft' OR total > 1000) AND NOT (flag = 0)", "`status` = \"paid\"",
		"created >= '2024-03-01'", "created < '2024-03-01 00:00:00.000001'",
		"status IS NOT NULL AND status <> 'draft'", "(total > 0) IS NOT FALSE", "total * 2 > 2000", "COALESCE(note, 'n') = 'N'",
	}, expr.ParseCondition)
}
