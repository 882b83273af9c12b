package sinks

import "testing"

// TestHasEmptyMember: only a real empty member makes "" a member rather than
// ENUM index 0.
func TestHasEmptyMember(t *testing.T) {
	for _, c := range []struct {
		colType string
		want    bool
		why     string
	}{
		{"enum('a','b')", false, "no empty member: \"\" is index 0"},
		{"enum('','a')", true, "an empty first member"},
		{"enum('a','')", true, "an empty last member"},
		{"enum('it''s','b')", false, "a doubled quote inside a name is no empty member"},
		{"enum('''','b')", false, "a name that is one quote is not empty"},
		{"enum('a\\\\','b')", false, "an escaped backslash at a name's end does not open a new name"},
		{"enum('x,''','y')", false, "a comma and quotes inside a name"},
	} {
		if got := hasEmptyMember(c.colType); got != c.want {
			t.Errorf("%s: hasEmptyMember(%s) = %v, want %v", c.why, c.colType, got, c.want)
		}
	}
}
