package expr

// Case mapping for LOWER and UPPER. MySQL maps case one character at a
// time by a table that belongs to the collation (utf8mb4_general_ci and
// utf8mb4_unicode_ci share Unicode 4's; utf8mb4_unicode_520_ci has Unicode
// 5.2's; the utf8mb4_uca1400_* collations Unicode 14's; the Turkish ones
// map i to İ; latin1's is a byte table of its own). Go's unicode package
// matches none of them exactly, so casefold_table.go holds each table as
// derived from the server (the pairs that differ from the identity), and
// the e2e test TestCaseTables derives them again and compares.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// caseInfo is how one collation maps case.
type caseInfo struct {
	// lower and upper index caseTables.
	lower, upper int
	// lowerMul and upperMul are the server's factor from an argument's
	// length in characters to LOWER's and UPPER's result length (2 where a
	// mapped character may take more bytes than the original).
	lowerMul, upperMul int64
}

// caseMaps are caseTables decoded, built on first use.
var caseMaps = func() []map[rune]rune {
	out := make([]map[rune]rune, len(caseTables))
	for i, pairs := range caseTables {
		m := make(map[rune]rune, utf8.RuneCountInString(pairs)/2)
		for len(pairs) > 0 {
			from, n := utf8.DecodeRuneInString(pairs)
			to, k := utf8.DecodeRuneInString(pairs[n:])
			m[from] = to
			pairs = pairs[n+k:]
		}
		out[i] = m
	}
	return out
}()

// caseOf is collation coll's case mapping, or an error naming the
// collation and the fix.
func caseOf(coll string) (caseInfo, error) {
	ci, ok := collationCase[strings.ToLower(coll)]
	if !ok {
		return caseInfo{}, fmt.Errorf("LOWER and UPPER do not know the case mapping of collation %s: CAST the value AS CHAR (a utf8mb4_general_ci string) first", coll)
	}
	return ci, nil
}

// mapCase maps every character of s through table t; s is returned
// unchanged when no character maps.
func mapCase(s string, t map[rune]rune) string {
	for i, r := range s {
		if _, ok := t[r]; !ok {
			continue
		}
		var b strings.Builder
		b.Grow(len(s) + 8)
		b.WriteString(s[:i])
		for _, r := range s[i:] {
			if m, ok := t[r]; ok {
				r = m
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	return s
}
