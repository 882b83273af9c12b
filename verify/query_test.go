package verify

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/readside/readside/projections"
)

func TestTupleComparisons(t *testing.T) {
	c, args := after([]string{"a", "b"}, []any{1, "x"})
	if c != "((a > ?) OR (a = ? AND b > ?))" || !reflect.DeepEqual(args, []any{1, 1, "x"}) {
		t.Errorf("after: %s %v", c, args)
	}
	c, args = atMost([]string{"a", "b"}, []any{1, "x"})
	if c != "((a < ?) OR (a = ? AND b <= ?))" || !reflect.DeepEqual(args, []any{1, 1, "x"}) {
		t.Errorf("atMost: %s %v", c, args)
	}
	if c, _ := rangeWhere([]string{"a"}, keyBinder{kInt}, nil, nil); c != "TRUE" {
		t.Errorf("open range: %s", c)
	}
}

func TestBindAndLiteral(t *testing.T) {
	got := keyBinder{kInt, kInt, kText, kBinary, kBit}.bind(Key{"-5", "18446744073709551615", "é", "\x00a", "3"})
	want := []any{int64(-5), uint64(18446744073709551615), "é", []byte("\x00a"), uint64(3)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bind: %#v", got)
	}
	for _, c := range []struct {
		k    kind
		v    string
		want string
	}{
		{kInt, "42", "42"}, {kDecimal, "-0.50", "-0.50"}, {kText, "O'Brien", "CONVERT(X'4f27427269656e' USING utf8mb4)"},
		{kBinary, "\x00\xff", "X'00ff'"}, {kInt, "1; DROP TABLE t", "CONVERT(X'313b2044524f50205441424c452074' USING utf8mb4)"},
	} {
		if got := literal(c.k, c.v); got != c.want {
			t.Errorf("literal(%v, %q) = %s, want %s", c.k, c.v, got, c.want)
		}
	}
}

// The routing of scanned values must match the projector's routing of
// event values, or every row would look misplaced.
func TestKeyspaceIDMatchesProjector(t *testing.T) {
	for _, c := range []struct {
		k    kind
		text string
		ev   any
	}{
		{kInt, "12345", json.Number("12345")}, {kText, "ünïcode", "ünïcode"}, {kDecimal, "1.50", "1.50"},
	} {
		raw, _ := json.Marshal(c.ev)
		if got, want := keyspaceID(c.k, c.text), projections.KeyspaceID(raw); got != want {
			t.Errorf("%q: %x, projector %x", c.text, got, want)
		}
	}
	raw, _ := json.Marshal([]byte("\x01\x02"))
	if got, want := keyspaceID(kBinary, "\x01\x02"), projections.KeyspaceID(raw); got != want {
		t.Errorf("binary: %x, projector %x", got, want)
	}
}
