package sinks

import (
	"strings"
	"testing"
)

// TestBackfillStatement: the one statement a backfill runs per record,
// golden. The version condition is what keeps it from writing an older
// record's value over a newer row (and an UPDATE never creates a row, so
// a deleted one stays deleted).
func TestBackfillStatement(t *testing.T) {
	p := narrowProjection(t)
	cases := []struct {
		why  string
		cols []string
		want string // "": an error containing err
		err  string
	}{
		{"one column, set by key and version", []string{"b"},
			"UPDATE `p_narrow_insert` SET `b` = ? WHERE `id` = ? AND `_rs_version` = ?", ""},
		{"several columns in one statement", []string{"a", "d"},
			"UPDATE `p_narrow_insert` SET `a` = ?, `d` = ? WHERE `id` = ? AND `_rs_version` = ?", ""},
		{"a key column is never set (it would move the row)", []string{"id"}, "", "not a non-key read column"},
		{"an undeclared column has no value in the records", []string{"ghost"}, "", "not a non-key read column"},
		{"nothing to set", nil, "", "no columns"},
	}
	for _, c := range cases {
		b, err := NewBackfill(nil, p, c.cols)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: NewBackfill(%q) error %v, want one containing %q", c.why, c.cols, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: NewBackfill(%q): %v", c.why, c.cols, err)
		case c.err == "" && b.stmt != c.want:
			t.Errorf("%s:\n got %s\nwant %s", c.why, b.stmt, c.want)
		}
	}
}
