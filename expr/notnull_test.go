package expr

import (
	"testing"
)

// excludesNullCases are conditions judged for column c; want is whether
// the condition can never pass a row with c NULL.
var excludesNullCases = []struct {
	where string
	want  bool
	why   string
}{
	{"c IS NOT NULL", true, "the documented fix"},
	{"c IS NULL", false, "passes exactly the NULL rows"},
	{"NOT c IS NULL", true, "NOT TRUE is FALSE"},
	{"NOT (c IS NOT NULL)", false, "NOT FALSE is TRUE"},
	{"c IS NOT NULL AND status <> 'draft'", true, "ANDed with more at the top level"},
	{"status <> 'draft' AND c IS NOT NULL", true, "the order of the AND does not matter"},
	{"a = 1 AND (b = 2 AND c IS NOT NULL)", true, "nested ANDs"},
	{"c IS NOT NULL OR status = 'x'", false, "the other branch can be TRUE with c NULL"},
	{"c IS NOT NULL OR c > 0", true, "both branches exclude NULL"},
	{"c = 1 OR c = 2", true, "both branches compare c"},
	{"c > 0", true, "a comparison with NULL is UNKNOWN"},
	{"c = 5", true, "equality with a literal"},
	{"c <> 0", true, "inequality is UNKNOWN too"},
	{"0 < c", true, "the column on either side"},
	{"c = other", true, "compared with another column: still UNKNOWN"},
	{"c IN (1, 2, 3)", true, "NULL IN (…) is UNKNOWN"},
	{"c NOT IN (1, 2)", true, "NULL NOT IN (…) is UNKNOWN"},
	{"c BETWEEN 1 AND 10", true, "NULL BETWEEN is UNKNOWN"},
	{"c NOT BETWEEN 1 AND 10", true, "NOT UNKNOWN is UNKNOWN"},
	{"5 NOT BETWEEN c AND 1", false, "a NULL bound: NOT (UNKNOWN AND FALSE) is TRUE"},
	{"5 IN (c, 5)", false, "c only in the list: TRUE when another element matches"},
	{"c LIKE 'a%'", true, "NULL LIKE is UNKNOWN"},
	{"c NOT LIKE 'a%'", true, "NULL NOT LIKE is UNKNOWN"},
	{"c", true, "a bare NULL operand is UNKNOWN, not TRUE"},
	{"NOT c", true, "NOT UNKNOWN is UNKNOWN"},
	{"NOT (c = 1)", true, "NOT UNKNOWN is UNKNOWN"},
	{"NOT (c = 1 OR status = 'x')", true, "UNKNOWN OR x is TRUE or UNKNOWN, so its NOT is FALSE or UNKNOWN"},
	{"c <=> 5", true, "NULL <=> 5 is FALSE"},
	{"c <=> NULL", false, "NULL <=> NULL is TRUE"},
	{"NOT (c <=> NULL)", true, "the null-safe spelling of IS NOT NULL"},
	{"c <=> other", false, "other may be NULL too"},
	{"status = 'paid'", false, "does not mention c"},
	{"C IS NOT NULL", false, "another spelling of the name counts as another column (SourceColumns matches names exactly)"},
	{"(c IS NULL) = 1", false, "TRUE = 1 is TRUE"},
	{"c IS NOT NULL OR TRUE", false, "OR TRUE always passes"},
	{"c IS NULL AND FALSE", true, "AND FALSE never passes"},
	// Forms only the expression language has.
	{"c IS TRUE", true, "UNKNOWN IS TRUE is FALSE"},
	{"c IS NOT TRUE", false, "UNKNOWN IS NOT TRUE is TRUE"},
	{"(c > 0) IS NOT FALSE", false, "UNKNOWN IS NOT FALSE is TRUE"},
	{"c IS UNKNOWN", false, "passes exactly the NULL rows"},
	{"NOT (c IS UNKNOWN)", true, "the IS UNKNOWN spelling of IS NOT NULL"},
	{"c > 0 XOR status = 'x'", true, "XOR with UNKNOWN is UNKNOWN"},
	{"NOT (c > 0 XOR a = 1)", true, "NOT UNKNOWN is UNKNOWN"},
	{"!(c IS NULL)", true, "! is NOT"},
	{"c > 0 && a = 1", true, "&& is AND"},
	{"c IS NULL || a = 1", false, "|| is OR: the other branch can be TRUE"},
	{"COALESCE(c, 0) = 0", false, "a function may turn NULL into a value"},
	{"c + 1 > 0", true, "arithmetic with a NULL operand is NULL"},
	{"-c * 2 <= a", true, "negation and arithmetic nest"},
	{"1 / a IS NULL", false, "a division by zero is NULL too: a's value decides"},
	{"(c + 1) IS NULL", false, "NULL + 1 IS NULL is TRUE"},
	{"(c IS NOT NULL) AND c + 1 > 0", true, "an analysed conjunct suffices"},
}

func TestExcludesNull(t *testing.T) {
	for _, c := range excludesNullCases {
		e, err := Parse(c.where)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		if got := e.ExcludesNull("c"); got != c.want {
			t.Errorf("%s: ExcludesNull(c) = %v, want %v (%s)", c.where, got, c.want, c.why)
		}
	}
	var none *Expr
	if none.ExcludesNull("c") {
		t.Error("no condition passes every row, NULLs included")
	}
}

// TestExcludesNullIsSound: whenever ExcludesNull says yes, no row with c
// NULL passes the condition as evaluated (IS TRUE), over a grid of
// values for the other columns (NULL included), typed once as strings
// and once as integers; and for every case judged "no", some row with c
// NULL does pass, so the answer is not needlessly conservative there.
func TestExcludesNullIsSound(t *testing.T) {
	typings := []struct {
		def  string
		vals []string
	}{
		{"varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", []string{`null`, `"0"`, `"1"`, `"5"`, `"x"`, `"paid"`, `"draft"`}},
		{"int(11)", []string{`null`, `0`, `1`, `5`}},
	}
	for _, c := range excludesNullCases {
		claims := false
		passed := false
		for _, ty := range typings {
			e, err := Parse("(" + c.where + ") IS TRUE")
			if err != nil {
				t.Fatalf("%s: %v", c.where, err)
			}
			if _, err := e.Check(func(n string) (Column, bool) { return Column{Name: n, Def: ty.def, Nullable: true}, true }); err != nil {
				t.Fatalf("%s: %v", c.where, err)
			}
			plain, _ := Parse(c.where)
			claims = plain.ExcludesNull("c")
			cols := e.Columns()
			row := make([]Datum, len(cols))
			var grid func(i int)
			grid = func(i int) {
				if i == len(cols) {
					d, err := e.Eval(row)
					if err != nil {
						t.Fatalf("%s: %v", c.where, err)
					}
					if d.True() && claims {
						t.Fatalf("%s: ExcludesNull(c) but a row with c NULL passes (%v)", c.where, row)
					}
					passed = passed || d.True()
					return
				}
				vals := ty.vals
				if cols[i] == "c" {
					vals = []string{`null`}
				}
				for _, v := range vals {
					var err error
					if row[i], err = FromEvent([]byte(v), ty.def); err != nil {
						t.Fatalf("%s: %s: %v", c.where, v, err)
					}
					grid(i + 1)
				}
			}
			grid(0)
		}
		if !claims && !passed {
			t.Errorf("%s: refused, yet no row with c NULL passes over the grid (needlessly conservative?)", c.where)
		}
	}
}
