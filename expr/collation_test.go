package expr

import "testing"

// TestCollationKeyer: keys are equal exactly when the collation compares
// the strings equal.
func TestCollationKeyer(t *testing.T) {
	pairs := []struct {
		coll, a, b string
	}{
		{"utf8mb4_general_ci", "apple", "APPLE"},
		{"utf8mb4_general_ci", "apple", "apple  "},
		{"utf8mb4_general_ci", "éclair", "ECLAIR"},
		{"utf8mb4_general_ci", "apple", "apples"},
		{"utf8mb4_bin", "apple", "apple "},
		{"utf8mb4_bin", "apple", "Apple"},
		{"latin1_swedish_ci", "Åsa", "åsa"},
		{"latin1_swedish_ci", "a", "b"},
	}
	for _, p := range pairs {
		c, _ := findCollation(p.coll)
		key, ok := CollationKeyer(p.coll)
		if !ok {
			t.Fatalf("%s unknown", p.coll)
		}
		ka, kb := key(p.a), key(p.b)
		if (ka == kb) != (c.compare(p.a, p.b) == 0) {
			t.Errorf("%s: %q and %q: keys equal %v, compare %d", p.coll, p.a, p.b, ka == kb, c.compare(p.a, p.b))
		}
	}
	if _, ok := CollationKeyer("utf8mb4_unicode_ci"); ok {
		t.Error("a collation without weights here has a key")
	}
}
