package sinks

import (
	"strings"
	"testing"

	"github.com/readside/readside/projections"
)

// TestAppendStatement: placeholders become literals written as the driver
// writes them (interpolateParams); a ? in a string, a quoted identifier or
// a comment stays text; a count that does not match is an error.
func TestAppendStatement(t *testing.T) {
	cases := []struct {
		query string
		args  []any
		want  string
	}{
		{"SELECT ?", []any{nil}, "SELECT NULL"},
		{"VALUES (?, ?, ?, ?)", []any{"it's", `back\slash`, "nul\x00 nl\n cr\r z\x1a", `"q"`}, `VALUES ('it\'s', 'back\\slash', 'nul\0 nl\n cr\r z\Z', '\"q\"')`},
		{"VALUES (?, ?, ?)", []any{[]byte("a'\\"), []byte(nil), []byte{}}, `VALUES (_binary'a\'\\', NULL, _binary'')`},
		{"VALUES (?, ?, ?, ?, ?, ?, ?, ?)", []any{-7, int32(-8), int64(-9), uint32(10), ^uint64(0), 1.5, true, false}, "VALUES (-7, -8, -9, 10, 18446744073709551615, 1.5, 1, 0)"},
		{"/* readside p?q */ INSERT INTO `t?` (`a?b`) VALUES (?)", []any{"x"}, "/* readside p?q */ INSERT INTO `t?` (`a?b`) VALUES ('x')"},
		{"SELECT '?', \"?\", 'a\\'?', ? -- ?\n, ? # ?\n, ?", []any{1, 2, 3}, "SELECT '?', \"?\", 'a\\'?', 1 -- ?\n, 2 # ?\n, 3"},
		{"SELECT 4/2-1, ?--1", []any{5}, "SELECT 4/2-1, 5--1"},
		{"SELECT ?, 'émoji 🦀 ?'", []any{"🦀 ✓"}, "SELECT '🦀 ✓', 'émoji 🦀 ?'"},
		{"COMMIT", nil, "COMMIT"},
	}
	version := uint64(1869683302580224001)
	cases = append(cases, struct {
		query string
		args  []any
		want  string
	}{"SELECT ?", []any{&version}, "SELECT 1869683302580224001"})
	vals := projections.ValuesOf("a'b", []byte{0, '\\'}, uint64(7), nil, 12)
	cases = append(cases, struct {
		query string
		args  []any
		want  string
	}{"VALUES (?, ?, ?, ?, ?)", appendValues(nil, vals), `VALUES ('a\'b', _binary'\0\\', 7, NULL, '12')`})
	for _, c := range cases {
		got, err := appendStatement([]byte("x; "), c.query, c.args)
		if err != nil {
			t.Errorf("%q: %v", c.query, err)
			continue
		}
		if string(got) != "x; "+c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.query, got, "x; "+c.want)
		}
	}
	for _, c := range []struct {
		query string
		args  []any
		err   string
	}{
		{"SELECT ?, ?", []any{1}, "more placeholders"},
		{"SELECT ?", []any{1, 2}, "1 placeholders for 2 values"},
		{"SELECT '?", []any{1}, "0 placeholders for 1 values"},
		{"SELECT ?", []any{struct{}{}}, "no SQL literal for a struct {}"},
	} {
		if _, err := appendStatement(nil, c.query, c.args); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q %v: error %v, want one saying %q", c.query, c.args, err, c.err)
		}
	}
}

// TestAppendQuotedEveryByte: every byte value comes out as itself or as
// its backslash escape, and nothing else is escaped.
func TestAppendQuotedEveryByte(t *testing.T) {
	for c := range 256 {
		got := string(appendQuoted(nil, []byte{'a', byte(c), 'b'}))
		want := "a" + string(rune(c)) + "b'"
		if c >= 0x80 {
			want = "a" + string([]byte{byte(c)}) + "b'"
		}
		switch c {
		case 0:
			want = `a\0b'`
		case '\n':
			want = `a\nb'`
		case '\r':
			want = `a\rb'`
		case 0x1a:
			want = `a\Zb'`
		case '\'', '"', '\\':
			want = `a\` + string(rune(c)) + `b'`
		}
		if got != want {
			t.Errorf("byte %#x: got %q, want %q", c, got, want)
		}
	}
}
