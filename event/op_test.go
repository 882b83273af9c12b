package event

import "testing"

// TestOpWireLetters: the letters are the wire format (docs/events.md,
// "Envelope"): a change here breaks every consumer of the topics.
func TestOpWireLetters(t *testing.T) {
	cases := []struct {
		why  string
		op   Op
		want string
	}{
		{"an insert", OpCreate, "c"},
		{"an update in place", OpUpdate, "u"},
		{"a delete", OpDelete, "d"},
		{"a snapshot or repair read", OpRead, "r"},
		{"a truncate", OpTruncate, "t"},
		{"no op member prints as the empty string it was", 0, ""},
	}
	for _, c := range cases {
		if got := c.op.String(); got != c.want {
			t.Errorf("%s: %d.String() = %q, want %q", c.why, c.op, got, c.want)
		}
	}
}

// TestParseOpRoundTrip: every op reads back from its letter, and nothing
// else reads as an op.
func TestParseOpRoundTrip(t *testing.T) {
	valid := map[byte]bool{'c': true, 'u': true, 'd': true, 'r': true, 't': true}
	for b := range 256 {
		o, ok := ParseOp(string([]byte{byte(b)}))
		if ok != valid[byte(b)] {
			t.Errorf("ParseOp(%q) ok = %v, want %v", byte(b), ok, valid[byte(b)])
		}
		if ok && (byte(o) != byte(b) || o.String() != string([]byte{byte(b)})) {
			t.Errorf("ParseOp(%q) = %q, want the same letter back", byte(b), o)
		}
	}
	for _, c := range []struct{ why, s string }{
		{"no op member", ""},
		{"two letters", "cu"},
		{"case matters: the tailer writes lowercase", "C"},
		{"a word is not its first letter", "create"},
	} {
		if o, ok := ParseOp(c.s); ok {
			t.Errorf("%s: ParseOp(%q) = %q, want refused", c.why, c.s, o)
		}
	}
}
