package cdc

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestJSONSafeWord: the eight-byte test agrees with the byte table for
// every byte value at every position, for every pair of adjacent bytes (a
// borrow from one byte into the next is where such tests go wrong), and
// for random words.
func TestJSONSafeWord(t *testing.T) {
	want := func(w uint64) bool {
		for k := range 8 {
			if !jsonSafe[byte(w>>(8*k))] {
				return false
			}
		}
		return true
	}
	check := func(w uint64) {
		t.Helper()
		if got := jsonSafeWord(w); got != want(w) {
			t.Fatalf("jsonSafeWord(%#016x) = %v, the table says %v", w, got, want(w))
		}
	}
	const safe = 0x6161616161616161 // "aaaaaaaa"
	for k := range 7 {
		shift := 8 * uint(k)
		for pair := range uint64(1 << 16) {
			check(safe&^(0xffff<<shift) | pair<<shift)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		w := rng.Uint64()
		check(w)
		check(w &^ 0x8080808080808080) // ASCII only: the other tests decide
	}
}

// TestAppendJSONStringLong: strings longer than a word, with a byte that
// needs escaping (or a multi-byte character) at every offset, encode as
// their pieces of under eight bytes do, which never take the eight-byte
// step.
func TestAppendJSONStringLong(t *testing.T) {
	inner := func(s string) []byte { b := appendJSONString(nil, s); return b[1 : len(b)-1] }
	xs := func(n int) []byte { // n x's, encoded at most seven at a time
		var b []byte
		for ; n > 0; n -= 7 {
			b = append(b, inner(strings.Repeat("x", min(n, 7)))...)
		}
		return b
	}
	for _, special := range []string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff", "😀"} {
		for at := range 40 {
			s := strings.Repeat("x", at) + special + strings.Repeat("x", 40-at)
			want := append(append(append(append([]byte{'"'}, xs(at)...), inner(special)...), xs(40-at)...), '"')
			if got := appendJSONString(nil, []byte(s)); !bytes.Equal(got, want) {
				t.Fatalf("%q at %d: %q, want %q", special, at, got, want)
			}
		}
	}
}

// BenchmarkAppendJSONString: a 100-byte ASCII value, the snapshot
// benchmark's VARCHAR.
func BenchmarkAppendJSONString(b *testing.B) {
	v := bytes.Repeat([]byte("x"), 100)
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = appendJSONString(buf[:0], v)
	}
}
