package cdc

import (
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// decodeGB18030 decodes MySQL's gb18030 (MariaDB has none), whose
// characters are one byte 0x00–0x7F, two bytes (lead 0x81–0xFE, trail
// 0x40–0x7E or 0x80–0xFE) or four (0x81–0xFE, 0x30–0x39, 0x81–0xFE,
// 0x30–0x39). A well-formed character is mapped by the GB 18030 standard
// (x/text's tables), '?' when it has no code point; any other byte is '?'
// and one byte is skipped, the rule every charset of the server follows.
// Unlike the other charsets its mapping is not generated from a server:
// the test bed has no MySQL (docs/events.md).
func decodeGB18030(s string) string {
	if asciiOnly(s) {
		return s
	}
	dec := simplifiedchinese.GB18030.NewDecoder()
	out := make([]byte, 0, len(s)*3/2)
	for i := 0; i < len(s); {
		n := gb18030Len(s[i:])
		switch n {
		case 0:
			out = append(out, '?')
			i++
			continue
		case 1:
			out = append(out, s[i])
			i++
			continue
		}
		u, err := dec.String(s[i : i+n])
		if r, size := utf8.DecodeRuneInString(u); err != nil || r == utf8.RuneError || size != len(u) {
			u = "?"
		}
		out = append(out, u...)
		i += n
	}
	return string(out)
}

// gb18030Len is the length of the well-formed character s starts with, 0
// if none.
func gb18030Len(s string) int {
	c := s[0]
	switch {
	case c < 0x80:
		return 1
	case c == 0x80 || c == 0xFF || len(s) < 2:
		return 0
	}
	switch t := s[1]; {
	case t >= 0x40 && t <= 0xFE && t != 0x7F:
		return 2
	case t >= 0x30 && t <= 0x39 && len(s) >= 4 && s[2] >= 0x81 && s[2] <= 0xFE && s[3] >= 0x30 && s[3] <= 0x39:
		return 4
	}
	return 0
}
