package cdc

import (
	"unicode/utf8"
)

// The change envelope is written with append-style encoders rather than
// encoding/json: it is the tailer's hot path, values need exact control
// (decimals as text, unsigned 64-bit integers as numbers) and the envelope's
// layout is fixed.

const hexDigits = "0123456789abcdef"

// jsonSafe marks the bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var jsonSafe = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\'
	}
	return t
}()

// jsonSafeWord reports whether all eight bytes of w are jsonSafe: none
// has its high bit set (not ASCII), is below 0x20 (a control character),
// or is a quote or a backslash. Each test is the exact "has a zero byte"
// test of x - 0x01…01 & ^x & 0x80…80 (no byte missed), on w or on w with
// the byte looked for xored away; a text value's bytes are stepped over
// about five times faster than by table (BenchmarkAppendJSONString).
func jsonSafeWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - 0x20*ones) &^ w & highs
	q := w ^ '"'*ones
	quote := (q - ones) &^ q & highs
	b := w ^ '\\'*ones
	backslash := (b - ones) &^ b & highs
	return (w&highs)|control|quote|backslash == 0
}

// word is the first eight bytes of s, little-endian (one load: the
// compiler merges the bytes' loads, and knows the length).
func word[S ~string | ~[]byte](s S) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 is replaced
// with U+FFFD; callers that must keep arbitrary bytes base64 them first.
// It takes bytes as they are: a snapshot's text values are read as bytes,
// and string(v) of one longer than 32 bytes is an allocation a value.
func appendJSONString[S ~string | ~[]byte](buf []byte, s S) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		// Most text is printable ASCII, written as it is: step over it
		// eight bytes at a time, then with one table lookup per byte.
		for i+8 <= len(s) && jsonSafeWord(word(s[i:i+8])) {
			i += 8
		}
		for i < len(s) && jsonSafe[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript consumers.
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
