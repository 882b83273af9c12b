package projections

import (
	"encoding/json"
	"testing"
)

func TestFilterMatchesLikeSQLWhere(t *testing.T) {
	row := map[string]json.RawMessage{
		"status":  json.RawMessage(`"paid"`),
		"total":   json.RawMessage(`1250.50`),
		"big":     json.RawMessage(`18446744073709551615`),
		"note":    json.RawMessage(`null`),
		"name":    json.RawMessage(`"O'Brien  "`),
		"flag":    json.RawMessage(`1`),
		"created": json.RawMessage(`"2024-03-01 10:00:00.000000"`),
	}
	cases := []struct {
		where string
		want  bool
	}{
		{"status <> 'draft'", true},
		{"status = 'PAID'", true}, // case-insensitive, as the default collations
		{"status != 'paid'", false},
		{"total > 1000", true},
		{"total >= 1250.5", true},
		{"total < 1250.50", false},
		{"big = 18446744073709551615", true}, // exact beyond 2^53
		{"big > 18446744073709551614", true},
		{"note = 'x'", false},     // NULL comparison is unknown: dropped
		{"note <> 'x'", false},    // also unknown
		{"NOT note = 'x'", false}, // NOT unknown is unknown
		{"note IS NULL", true},
		{"note IS NOT NULL", false},
		{"note <=> NULL", true},
		{"status IN ('new', 'paid')", true},
		{"status NOT IN ('new', 'paid')", false},
		{"status NOT IN ('new', NULL)", false}, // unknown
		{"status IN ('x', NULL)", false},
		{"total BETWEEN 1000 AND 2000", true},
		{"total NOT BETWEEN 1000 AND 2000", false},
		{"name = 'O''Brien'", true}, // trailing spaces ignored (PAD SPACE)
		{"name LIKE 'o''b%'", true},
		{"name LIKE 'o_brien%'", true},
		{"name NOT LIKE '%x%'", true},
		{"flag", true},
		{"flag AND status = 'paid'", true},
		{"status = 'draft' OR total > 1000", true},
		{"status = 'draft' OR note = 'x'", false}, // FALSE OR UNKNOWN
		{"status = 'paid' OR note = 'x'", true},   // TRUE OR UNKNOWN
		{"(status = 'draft' OR total > 1000) AND NOT (flag = 0)", true},
		{"`status` = \"paid\"", true},
		{"created >= '2024-03-01'", true},
		{"total > -5", true},
		{"total = '1250.5'", true}, // string converted for a numeric comparison
	}
	for _, c := range cases {
		f, err := ParseFilter(c.where)
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		got, err := f.Match(ImageOf(row))
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %v, want %v", c.where, got, c.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	for _, bad := range []string{"status = ", "status = 'x", "a + 1 > 2", "a = 1 b = 2", "a NOT 3", "a LIKE 3", "(a = 1"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	f, err := ParseFilter("missing = 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Match(ImageOf(map[string]json.RawMessage{})); err == nil {
		t.Error("a column missing from the event must be an error, not a silent false")
	}
	f, _ = ParseFilter("a = 1 AND (b IS NULL OR a IN (c, 2))")
	if got := f.Columns(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Errorf("columns = %v", got)
	}
}
