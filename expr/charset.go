package expr

// Character sets, as the string functions see them. Events carry every
// character string in UTF-8 whatever its column's charset (docs/events.md
// "Values"), so Datum.S is UTF-8 and Datum.Coll names the collation, whose
// charset decides what LENGTH and CRC32 count and hash: the bytes the
// server would hold. The string functions take the charsets whose bytes
// and case mappings are known exactly here (utf8mb4, utf8mb3, latin1,
// ascii); a string of any other charset is refused at Check time with the
// fix of converting it first.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// charset is one character set the string functions take.
type charset struct {
	name string
	// mbmaxlen is the most bytes one character takes (MySQL's mbmaxlen):
	// the factor between a column's length in characters and in bytes.
	mbmaxlen int64
	// encode appends s's bytes in this charset; ok is false when a
	// character has none.
	encode func(dst []byte, s string) (out []byte, ok bool)
	// has reports whether the charset has the character.
	has func(r rune) bool
}

// lacks is the first character of s the charset does not have, if any:
// a literal holding one cannot be converted to it.
func (cs *charset) lacks(s string) (rune, bool) {
	for _, c := range s {
		if !cs.has(c) {
			return c, true
		}
	}
	return 0, false
}

var charsets = map[string]*charset{
	"utf8mb4": {name: "utf8mb4", mbmaxlen: 4, encode: encodeUTF8, has: func(rune) bool { return true }},
	"utf8mb3": {name: "utf8mb3", mbmaxlen: 3, encode: encodeUTF8, has: func(r rune) bool { return r <= 0xFFFF }},
	"latin1":  {name: "latin1", mbmaxlen: 1, encode: encodeLatin1, has: func(r rune) bool { _, ok := latin1Byte(r); return ok }},
	"ascii":   {name: "ascii", mbmaxlen: 1, encode: encodeASCII, has: func(r rune) bool { return r < 0x80 }},
}

// connectionCollation is the collation of the text MySQL makes from a
// number or a temporal value, and of string literals: the session's
// collation_connection. readside's sessions (verify, rebuild) use utf8mb4,
// whose default collation on MariaDB 10.11 is utf8mb4_general_ci (MySQL 8:
// utf8mb4_0900_ai_ci; MariaDB 11.5+: utf8mb4_uca1400_ai_ci).
const connectionCollation = "utf8mb4_general_ci"

// charsetFor is the charset of collation coll ("utf8mb4_general_ci" →
// utf8mb4), or an error naming the collation and the fix when the string
// functions cannot take it.
func charsetFor(coll string) (*charset, error) {
	name, _, _ := strings.Cut(coll, "_")
	if name == "utf8" {
		name = "utf8mb3"
	}
	if cs, ok := charsets[name]; ok {
		return cs, nil
	}
	return nil, fmt.Errorf("strings in collation %s (character set %s) are not supported by the string functions: CAST the value AS CHAR (a utf8mb4 string) first", coll, name)
}

func encodeUTF8(dst []byte, s string) ([]byte, bool) { return append(dst, s...), true }

func encodeASCII(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return dst, false
		}
	}
	return append(dst, s...), true
}

func encodeLatin1(dst []byte, s string) ([]byte, bool) {
	for _, r := range s {
		b, ok := latin1Byte(r)
		if !ok {
			return dst, false
		}
		dst = append(dst, b)
	}
	return dst, true
}

// latin1High is MySQL's latin1 above 0x7f, from 0x80: Windows-1252, where
// the five bytes Windows leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D)
// are the C1 controls of the same number, as the server converts them.
var latin1High = [128]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

func init() {
	for i := 0x20; i < 0x80; i++ {
		latin1High[i] = rune(0x80 + i)
	}
	for i, r := range latin1High {
		latin1Of[r] = byte(0x80 + i)
	}
}

// latin1Of maps the characters above 0x7f that latin1 has to their byte.
var latin1Of = map[rune]byte{}

func latin1Byte(r rune) (byte, bool) {
	if r < 0x80 {
		return byte(r), true
	}
	b, ok := latin1Of[r]
	return b, ok
}

// charLen is the number of characters of a UTF-8 string.
func charLen(s string) int64 { return int64(utf8.RuneCountInString(s)) }
