package expr

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// collation compares character strings as a MySQL collation does. The
// ones offered are the binary (_bin) and general (_general_ci) collations
// of utf8mb4, utf8mb3 and latin1, all PAD SPACE (trailing spaces do not
// count), with the weights the server uses (collation_tables.go, read
// from MariaDB).
type collation struct {
	name string
	// weight maps a character to its sort weight; nil compares code points.
	weight func(r rune) rune
}

func findCollation(name string) (*collation, bool) {
	switch strings.ToLower(name) {
	case "utf8mb4_bin", "utf8mb3_bin", "utf8_bin", "latin1_bin", "ascii_bin":
		return &collation{name: name}, true
	case "utf8mb4_general_ci", "utf8mb3_general_ci", "utf8_general_ci", "ascii_general_ci":
		return &collation{name: name, weight: generalWeight}, true
	case "latin1_swedish_ci":
		return &collation{name: name, weight: latin1SwedishWeight}, true
	}
	return nil, false
}

// generalWeight is the weight of r in utf8mb4_general_ci: one weight per
// BMP character (upper case, most accents removed), U+FFFD for any
// character beyond the BMP.
func generalWeight(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return r - ('a' - 'A')
	case r < 0x80:
		return r
	case r > 0xFFFF:
		return 0xFFFD
	}
	return pairWeight(generalCIPairs[:], r, r)
}

// latin1ByRune is latin1SwedishPairs sorted by character, for search.
var latin1ByRune = func() [][2]uint16 {
	p := append([][2]uint16(nil), latin1SwedishPairs[:]...)
	sort.Slice(p, func(i, j int) bool { return p[i][0] < p[j][0] })
	return p
}()

// latin1SwedishWeight is the weight of r in latin1_swedish_ci; a
// character latin1 lacks is '?', as converting it to latin1 makes it.
func latin1SwedishWeight(r rune) rune {
	if r < 0x80 {
		return rune(latin1SwedishPairs[r][1])
	}
	if r > 0xFFFF {
		r = '?'
	}
	return pairWeight(latin1ByRune, r, rune(latin1SwedishPairs['?'][1]))
}

// pairWeight finds r in pairs sorted by character; missing is its weight
// when absent.
func pairWeight(pairs [][2]uint16, r, missing rune) rune {
	i := sort.Search(len(pairs), func(i int) bool { return rune(pairs[i][0]) >= r })
	if i < len(pairs) && rune(pairs[i][0]) == r {
		return rune(pairs[i][1])
	}
	return missing
}

// compare orders a and b (UTF-8) by the collation. PAD SPACE: the
// shorter string compares as if padded with spaces, so trailing spaces
// do not count but a trailing tab sorts before nothing.
func (c *collation) compare(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if wa, wb := c.w(ra), c.w(rb); wa != wb {
				if wa < wb {
					return -1
				}
				return 1
			}
		}
		a, b = a[na:], b[nb:]
	}
	sign := 1
	if a == "" {
		a, sign = b, -1
	}
	for _, r := range a {
		if w := c.w(r); w != ' ' {
			if w > ' ' {
				return sign
			}
			return -sign
		}
	}
	return 0
}

func (c *collation) w(r rune) rune {
	if c.weight == nil {
		return r
	}
	return c.weight(r)
}

// equalRune reports whether two characters weigh the same (for LIKE).
func (c *collation) equalRune(a, b rune) bool {
	if a == b {
		return true
	}
	return c.weight != nil && c.weight(a) == c.weight(b)
}

// CollationKeyer is the named collation's key function: two strings
// are equal under the collation exactly when their keys are equal (each
// character's weight, trailing space weights dropped: PAD SPACE). ok is
// false for a collation this package does not know.
func CollationKeyer(collation string) (key func(string) string, ok bool) {
	c, ok := findCollation(collation)
	if !ok {
		return nil, false
	}
	return func(s string) string {
		ws := make([]rune, 0, len(s))
		for _, r := range s {
			ws = append(ws, c.w(r))
		}
		for len(ws) > 0 && ws[len(ws)-1] == ' ' {
			ws = ws[:len(ws)-1]
		}
		return string(ws)
	}, true
}
