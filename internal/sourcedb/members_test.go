package sourcedb

import (
	"slices"
	"testing"
)

// TestParseMembers: the members read from information_schema's
// COLUMN_TYPE are the exact names the FULL-metadata binlog carries.
func TestParseMembers(t *testing.T) {
	for _, c := range []struct {
		colType string
		want    []string
		why     string
	}{
		{`enum('a','b''c','d,e','')`, []string{"a", "b'c", "d,e", ""}, "a doubled quote is one quote; a comma inside quotes is no separator"},
		{`set('(p)','a)b','x(')`, []string{"(p)", "a)b", "x("}, "parentheses inside a name end nothing"},
		{`enum('ünï','ß')`, []string{"ünï", "ß"}, "non-ASCII names (a latin1 column, read over a utf8mb4 connection) are kept"},
		{`enum('x\ny','a\rb','t\tb','n\0z','z\Z')`, []string{"x\ny", "a\rb", "t\tb", "n\x00z", "z\x1a"}, "COLUMN_TYPE escapes newline, CR, tab, NUL and ^Z with a backslash"},
		{`enum('b\\s','q\'q','d"q')`, []string{"b\\s", "q'q", "d\"q"}, "an escaped backslash or quote is the character itself"},
		{`enum('p\%','u\_')`, []string{"p\\%", "u\\_"}, "\\% and \\_ keep their backslash, as in any MySQL string"},
		{`set('a','b') character set latin1`, []string{"a", "b"}, "a trailing charset clause is not a member"},
	} {
		if got := ParseMembers(c.colType); !slices.Equal(got, c.want) {
			t.Errorf("%s: ParseMembers(%s) = %q; want %q", c.why, c.colType, got, c.want)
		}
	}
}

// TestMembersTypeReadsBack: a type written by MembersType (how a read
// table gets a column whose exact names information_schema masks) parses
// back to the same names, in COLUMN_TYPE's own escapes.
func TestMembersTypeReadsBack(t *testing.T) {
	names := []string{"👍", "it's", "b\\s", "x\ny", "t\tb", "n\x00z", "z\x1a", "a,b", "(p)", "𝄞?", ""}
	typ := MembersType("ENUM", names)
	if got := ParseMembers(typ); !slices.Equal(got, names) {
		t.Errorf("ParseMembers(%s) = %q; want %q", typ, got, names)
	}
	// As MariaDB 10.11's COLUMN_TYPE shows them (HEX read on the server).
	if got, want := MembersType("SET", []string{"a", "it's", "x\ny", "c\rr", "z\x00z", "t\tb", "x\x1ax", `b\s`}), "set('a','it''s','x\\ny','c\\rr','z\\0z','t\tb','x\x1ax','b\\\\s')"; got != want {
		t.Errorf("MembersType = %s; want %s", got, want)
	}
}
