package expr

import (
	"strings"
	"testing"
)

// TestWhereCompatibility runs the where: filter cases users rely on
// (projections/where_test.go runs them through the projector's Filter)
// through expr alone: Parse, Check, Eval and Datum.True, the truth a
// WHERE keeps a row by.
func TestWhereCompatibility(t *testing.T) {
	defs := map[string]string{
		"status":  "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"total":   "decimal(12,2)",
		"big":     "bigint(20) unsigned",
		"note":    "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"name":    "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"flag":    "tinyint(1)",
		"created": "datetime(6)",
	}
	events := map[string]string{
		"status": `"paid"`, "total": `"1250.50"`, "big": `18446744073709551615`, "note": `null`,
		"name": `"O'Brien  "`, "flag": `1`, "created": `"2024-03-01 10:00:00.000000"`,
	}
	schema := func(n string) (Column, bool) {
		d, ok := defs[strings.ToLower(n)]
		return Column{Name: n, Def: d, Nullable: true}, ok
	}
	cases := []struct {
		where string
		want  bool
	}{
		{"status <> 'draft'", true},
		{"status = 'PAID'", true},
		{"status != 'paid'", false},
		{"total > 1000", true},
		{"total >= 1250.5", true},
		{"total < 1250.50", false},
		{"big = 18446744073709551615", true},
		{"big > 18446744073709551614", true},
		{"note = 'x'", false},
		{"note <> 'x'", false},
		{"NOT note = 'x'", false},
		{"note IS NULL", true},
		{"note IS NOT NULL", false},
		{"note <=> NULL", true},
		{"status IN ('new', 'paid')", true},
		{"status NOT IN ('new', 'paid')", false},
		{"status NOT IN ('new', NULL)", false},
		{"status IN ('x', NULL)", false},
		{"total BETWEEN 1000 AND 2000", true},
		{"total NOT BETWEEN 1000 AND 2000", false},
		{"name = 'O''Brien'", true},
		{"name LIKE 'o''b%'", true},
		{"name LIKE 'o_brien%'", true},
		{"name NOT LIKE '%x%'", true},
		{"flag", true},
		{"flag AND status = 'paid'", true},
		{"status = 'draft' OR total > 1000", true},
		{"status = 'draft' OR note = 'x'", false},
		{"status = 'paid' OR note = 'x'", true},
		{"(status = 'draft' OR total > 1000) AND NOT (flag = 0)", true},
		{"`status` = \"paid\"", true},
		{"created >= '2024-03-01'", true},
		{"total > -5", true},
		{"total = '1250.5'", true},
	}
	for _, c := range cases {
		e, err := Parse(c.where)
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		if _, err := e.Check(schema); err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		row := make([]Datum, len(e.Columns()))
		for i, n := range e.Columns() {
			if row[i], err = FromEvent([]byte(events[strings.ToLower(n)]), defs[strings.ToLower(n)]); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.Eval(row)
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		if got.True() != c.want {
			t.Errorf("%s = %v, want %v", c.where, got.True(), c.want)
		}
	}
}
