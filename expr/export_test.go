package expr

// Test hooks for the external tests (expr_test), which need the test bed.

// LookupFunc finds a registered function.
var LookupFunc = lookup

// MapCase is LOWER (upper false) or UPPER of s in collation coll.
func MapCase(coll, s string, upper bool) (string, error) {
	ci, err := caseOf(coll)
	if err != nil {
		return "", err
	}
	t := ci.lower
	if upper {
		t = ci.upper
	}
	return mapCase(s, caseMaps[t]), nil
}

// CaseTables are the collations' case tables, decoded.
var CaseTables = caseMaps

// CaseTablesOf are the indexes in CaseTables of collation coll's LOWER and
// UPPER tables.
func CaseTablesOf(coll string) (lower, upper int, ok bool) {
	ci, ok := collationCase[coll]
	return ci.lower, ci.upper, ok
}

// MapWith maps s through case table t.
func MapWith(s string, t map[rune]rune) string { return mapCase(s, t) }

// CaseMul is collation coll's LOWER and UPPER length factors.
func CaseMul(coll string) (lower, upper int64, ok bool) {
	ci, ok := collationCase[coll]
	return ci.lowerMul, ci.upperMul, ok
}

// CaseCollations are the collations LOWER and UPPER know.
func CaseCollations() []string {
	out := make([]string, 0, len(collationCase))
	for c := range collationCase {
		out = append(out, c)
	}
	return out
}

// Latin1Char is latin1's byte b as UTF-8.
func Latin1Char(b byte) string {
	if b < 0x80 {
		return string(rune(b))
	}
	return string(latin1High[b-0x80])
}

// InLatin1 reports whether latin1 has character r.
func InLatin1(r rune) bool { _, ok := latin1Byte(r); return ok }
