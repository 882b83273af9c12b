package projections

import (
	"encoding/json"
	"testing"
)

// excludesNullCases are filters judged for column c; want is whether the
// filter can never pass a row with c NULL.
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
	{"C IS NOT NULL", false, "another column's name (names are matched exactly, as SourceColumns checks them)"},
	{"(c IS NULL) = 1", false, "TRUE = 1 is TRUE"},
	{"c IS NOT NULL OR TRUE", false, "OR TRUE always passes"},
	{"c IS NULL AND FALSE", true, "AND FALSE never passes"},
}

func TestFilterExcludesNull(t *testing.T) {
	for _, c := range excludesNullCases {
		f, err := ParseFilter(c.where)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		if got := f.ExcludesNull("c"); got != c.want {
			t.Errorf("%s: ExcludesNull(c) = %v, want %v (%s)", c.where, got, c.want, c.why)
		}
	}
	var nilFilter *Filter
	if nilFilter.ExcludesNull("c") {
		t.Error("no filter passes every row, NULLs included")
	}
}

// TestFilterExcludesNullIsSound: whenever ExcludesNull says yes, no row
// with c NULL passes the real filter, over a grid of values for the other
// columns (NULL included); and for every case judged "no", some row with
// c NULL does pass, so the answer is not needlessly conservative there.
func TestFilterExcludesNullIsSound(t *testing.T) {
	vals := []string{`null`, `0`, `1`, `5`, `"x"`, `"paid"`, `"draft"`}
	for _, c := range excludesNullCases {
		f, err := ParseFilter(c.where)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		claims := f.ExcludesNull("c")
		passed := false
		for _, a := range vals {
			for _, b := range vals {
				for _, o := range vals {
					for _, s := range vals {
						img := ImageOf(map[string]json.RawMessage{"c": json.RawMessage(`null`), "a": json.RawMessage(a),
							"b": json.RawMessage(b), "other": json.RawMessage(o), "status": json.RawMessage(s), "C": json.RawMessage(`1`)})
						ok, err := f.Match(img)
						if err != nil {
							t.Fatalf("%s: %v", c.where, err)
						}
						if ok && claims {
							t.Fatalf("%s: ExcludesNull(c) but a row with c NULL passes (a=%s b=%s other=%s status=%s)", c.where, a, b, o, s)
						}
						passed = passed || ok
					}
				}
			}
		}
		if !claims && !passed {
			t.Errorf("%s: refused, yet no row with c NULL passes over the grid (needlessly conservative?)", c.where)
		}
	}
}
