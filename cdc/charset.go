package cdc

import (
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"
)

// textDecoder converts a value's bytes in one character set to UTF-8.
type textDecoder func(s string) string

// charsetDecoders is the one registry of the character sets readside
// decodes: binlog CHAR/VARCHAR/TEXT values (newColumn, trackedTable), ENUM
// and SET member names in table maps (memberNames), DDL statements
// (ddlText), and the charsets check accepts (undecodableColumns). The
// snapshot decodes nothing itself: it reads through a utf8mb4 connection,
// so the server converts, and each decoder here returns exactly what that
// conversion — CONVERT(x USING utf8mb4) — returns for the same bytes, so
// both paths publish the same text. Every decoder is total: the server
// never fails a conversion, it writes '?' for a byte that starts no
// well-formed character (skipping that one byte) and for a well-formed
// character without a Unicode code point (skipping the character).
//
// Single-byte and CJK charsets are tables generated from the server
// (charset_tables.go, charsetdata/; go generate runs e2e/cmd/charsetgen);
// the Unicode charsets are decoded by their definition with the server's
// rules; gb18030 (MySQL only) by the GB 18030 standard (gb18030.go).
var charsetDecoders = map[string]textDecoder{}

// multiByteTables are the CJK charsets' tables, by name.
var multiByteTables = map[string]*multiByteTable{}

//go:generate go run ../e2e/cmd/charsetgen -out .

//go:embed charsetdata/*.bin
var charsetData embed.FS

func init() {
	for name, t := range singleByte {
		charsetDecoders[name] = singleByteDecoder(t)
	}
	for _, name := range multiByte {
		data, err := charsetData.ReadFile("charsetdata/" + name + ".bin")
		if err != nil {
			panic(err)
		}
		t := newMultiByte(data, name == "ujis" || name == "eucjpms")
		multiByteTables[name] = t
		charsetDecoders[name] = t.decode
	}
	charsetDecoders["utf8mb4"] = func(s string) string { return decodeUTF8(s, true) }
	charsetDecoders["utf8mb3"] = func(s string) string { return decodeUTF8(s, false) }
	charsetDecoders["utf8"] = charsetDecoders["utf8mb3"] // MySQL 5.7's and old_mode's name of utf8mb3
	charsetDecoders["ucs2"] = decodeUCS2
	charsetDecoders["utf16"] = func(s string) string { return decodeUTF16(s, binary.BigEndian) }
	charsetDecoders["utf16le"] = func(s string) string { return decodeUTF16(s, binary.LittleEndian) }
	charsetDecoders["utf32"] = decodeUTF32
	charsetDecoders["gb18030"] = decodeGB18030
}

// charsetDecoder returns the decoder from a MySQL character set to UTF-8.
func charsetDecoder(charset string) (textDecoder, error) {
	if d, ok := charsetDecoders[charset]; ok {
		return d, nil
	}
	return nil, undecodableCharsetError{charset}
}

// undecodableCharsetError is a charset without a decoder: fatal for a
// published column, ignored for an excluded one (never decoded).
type undecodableCharsetError struct{ charset string }

func (e undecodableCharsetError) Error() string {
	if e.charset == "" {
		return "its collation is not in the source's information_schema.COLLATIONS, so its character set is unknown: convert the column to utf8mb4 or exclude it (source.exclude_columns)"
	}
	return fmt.Sprintf("character set %q cannot be decoded by readside: convert the column to utf8mb4 (ALTER TABLE ... MODIFY the column ... CHARACTER SET utf8mb4) or exclude it (source.exclude_columns)", e.charset)
}

// excludedUndecodable says whether err only says an excluded column's
// charset has no decoder: its values are never published.
func excludedUndecodable(err error, excluded bool) bool {
	var u undecodableCharsetError
	return excluded && errors.As(err, &u)
}

// appendCode appends r as the server writes it in utf8mb4: surrogate code
// points (which ucs2, utf32 and MariaDB's utf8 accept) as three bytes, not
// U+FFFD as utf8.AppendRune would.
func appendCode(b []byte, r rune) []byte {
	if r >= 0xD800 && r <= 0xDFFF {
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(b, r)
}

func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func singleByteDecoder(t *[256]rune) textDecoder {
	ascii := true // every ASCII byte is itself: pure ASCII text is returned as it is
	for b := range 0x80 {
		ascii = ascii && t[b] == rune(b)
	}
	return func(s string) string {
		if ascii && asciiOnly(s) {
			return s
		}
		out := make([]byte, 0, len(s)+len(s)/2)
		for i := 0; i < len(s); i++ {
			out = appendCode(out, t[s[i]])
		}
		return string(out)
	}
}

// multiByteTable is the step table of a CJK charset (e2e/cmd/charsetgen): the
// server converts a lead byte and its trail as one character when pair
// says so (non-zero), else the byte on its own (single); ujis and eucjpms
// also have three-byte characters after 0x8F (triple).
type multiByteTable struct {
	ascii  bool // every byte below 0x80 is itself
	single [256]rune
	pair   [128]*[256]rune // lead 0x80–0xFF, trail 0x00–0xFF
	triple [256]*[256]rune // after 0x8F: second and third byte
}

func newMultiByte(data []byte, triples bool) *multiByteTable {
	t := &multiByteTable{}
	next := func() rune {
		r := rune(binary.LittleEndian.Uint16(data))
		data = data[2:]
		return r
	}
	t.ascii = true
	for b := range t.single {
		t.single[b] = next()
		t.ascii = t.ascii && (b >= 0x80 || t.single[b] == rune(b))
	}
	// A row of 256 code points follows its flag byte 1; flag 0 means no
	// character has that prefix.
	nextRow := func() *[256]rune {
		flag := data[0]
		data = data[1:]
		if flag != 1 {
			return nil
		}
		row := new([256]rune)
		for i := range row {
			row[i] = next()
		}
		return row
	}
	for lead := range t.pair {
		t.pair[lead] = nextRow()
	}
	for second := 0; triples && second < 256; second++ {
		t.triple[second] = nextRow()
	}
	if len(data) != 0 {
		panic("charset table has trailing bytes")
	}
	return t
}

func (t *multiByteTable) decode(s string) string {
	if t.ascii && asciiOnly(s) {
		return s
	}
	out := make([]byte, 0, len(s)*3/2)
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x80 {
			if b == 0x8F && i+2 < len(s) {
				if row := t.triple[s[i+1]]; row != nil && row[s[i+2]] != 0 {
					out = appendCode(out, row[s[i+2]])
					i += 3
					continue
				}
			}
			if i+1 < len(s) {
				if row := t.pair[b-0x80]; row != nil && row[s[i+1]] != 0 {
					out = appendCode(out, row[s[i+1]])
					i += 2
					continue
				}
			}
		}
		out = appendCode(out, t.single[b])
		i++
	}
	return string(out)
}

// decodeUTF8 is MariaDB's and MySQL's utf8mb4 (mb4) or utf8mb3 reading:
// overlong forms and code points above U+10FFFF are not well-formed, each
// of their bytes becomes '?'; encoded surrogates are taken as they are.
func decodeUTF8(s string, mb4 bool) string {
	if utf8.ValidString(s) && (mb4 || !hasFourByte(s)) {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		n := utf8Len(s[i:], mb4)
		if n == 0 {
			out = append(out, '?')
			i++
			continue
		}
		out = append(out, s[i:i+n]...)
		i += n
	}
	return string(out)
}

func hasFourByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xF0 {
			return true
		}
	}
	return false
}

// utf8Len is the length of the well-formed character s starts with, 0 if
// none.
func utf8Len(s string, mb4 bool) int {
	cont := func(i int) bool { return i < len(s) && s[i]&0xC0 == 0x80 }
	switch c := s[0]; {
	case c < 0x80:
		return 1
	case c < 0xC2:
		return 0
	case c < 0xE0:
		if cont(1) {
			return 2
		}
	case c < 0xF0:
		if cont(1) && cont(2) && (c > 0xE0 || s[1] >= 0xA0) {
			return 3
		}
	case c < 0xF5 && mb4:
		if cont(1) && cont(2) && cont(3) && (c > 0xF0 || s[1] >= 0x90) && (c < 0xF4 || s[1] < 0x90) {
			return 4
		}
	}
	return 0
}

// decodeUCS2: every two bytes (big-endian) are a code point, surrogates
// included; a last odd byte becomes '?'.
func decodeUCS2(s string) string {
	out := make([]byte, 0, len(s)*3/2)
	i := 0
	for ; i+1 < len(s); i += 2 {
		out = appendCode(out, rune(s[i])<<8|rune(s[i+1]))
	}
	if i < len(s) {
		out = append(out, '?')
	}
	return string(out)
}

// decodeUTF16: a high surrogate followed by a low one is a supplementary
// character; any other surrogate, and a unit cut short, is not
// well-formed: its first byte becomes '?' and decoding resumes one byte on
// — out of step, as the server does.
func decodeUTF16(s string, order binary.ByteOrder) string {
	out := make([]byte, 0, len(s)*3/2)
	for i := 0; i < len(s); {
		if i+1 >= len(s) {
			out = append(out, '?')
			i++
			continue
		}
		u := rune(order.Uint16([]byte(s[i : i+2])))
		switch {
		case u < 0xD800 || u > 0xDFFF:
			out = appendCode(out, u)
			i += 2
			continue
		case u <= 0xDBFF && i+3 < len(s):
			if l := rune(order.Uint16([]byte(s[i+2 : i+4]))); l >= 0xDC00 && l <= 0xDFFF {
				out = utf8.AppendRune(out, 0x10000+(u-0xD800)<<10+(l-0xDC00))
				i += 4
				continue
			}
		}
		out = append(out, '?')
		i++
	}
	return string(out)
}

// decodeUTF32: four bytes (big-endian) up to U+10FFFF, surrogates
// included, are a code point; otherwise the first byte becomes '?' and
// decoding resumes one byte on.
func decodeUTF32(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if i+3 < len(s) {
			if r := binary.BigEndian.Uint32([]byte(s[i : i+4])); r <= 0x10FFFF {
				out = appendCode(out, rune(r))
				i += 4
				continue
			}
		}
		out = append(out, '?')
		i++
	}
	return string(out)
}

// memberNames decodes the ENUM or SET member names a table map carries,
// which are in the column's charset (collation coll; 0 when the binlog
// names none, and the bytes are taken as they are), into UTF-8: a latin1
// "\xfcn\xef" is "ünï", as the snapshot reads it.
func memberNames(raw []string, coll uint64, charsetOf func(uint64) string) ([]string, error) {
	if coll == 0 {
		return raw, nil
	}
	charset := charsetOf(coll)
	if charset == "binary" {
		return raw, nil
	}
	dec, err := charsetDecoder(charset)
	if err != nil {
		return raw, err
	}
	names := make([]string, len(raw))
	for i, m := range raw {
		names[i] = dec(m)
	}
	return names, nil
}

// queryClientCollation reads the client collation id a QUERY event's status
// variables carry (Q_CHARSET_CODE); 0 when they carry none or when a
// variable before it is one this reader cannot step over. The server writes
// the variables in code order, so only the codes before it need a length.
func queryClientCollation(vars []byte) uint64 {
	for len(vars) > 0 {
		code, rest := vars[0], vars[1:]
		var n int
		switch code {
		case 0: // Q_FLAGS2_CODE
			n = 4
		case 1: // Q_SQL_MODE_CODE
			n = 8
		case 2: // Q_CATALOG_CODE: length, name, NUL
			if len(rest) < 1 {
				return 0
			}
			n = 1 + int(rest[0]) + 1
		case 3: // Q_AUTO_INCREMENT
			n = 4
		case 4: // Q_CHARSET_CODE: client charset, connection and server collations
			if len(rest) < 6 {
				return 0
			}
			return uint64(rest[0]) | uint64(rest[1])<<8
		case 6: // Q_CATALOG_NZ_CODE: length, name
			if len(rest) < 1 {
				return 0
			}
			n = 1 + int(rest[0])
		default:
			return 0
		}
		if len(rest) < n {
			return 0
		}
		vars = rest[n:]
	}
	return 0
}

// ddlText is a QUERY event's statement as UTF-8: the binlog keeps the bytes
// the client sent, in its character set, so the ENUM and SET member names of
// a DDL sent under SET NAMES latin1 are latin1 bytes.
func ddlText(e *replication.QueryEvent, charsetOf func(uint64) string) (string, error) {
	coll := queryClientCollation(e.StatusVars)
	if coll == 0 {
		return string(e.Query), nil
	}
	charset := charsetOf(coll)
	switch charset {
	case "", "binary", "utf8mb4", "utf8mb3", "utf8", "ascii":
		// Taken as they are: a statement's string literals may carry bytes
		// of other charsets (_binary, _latin1), which the schema history
		// reads as the server does.
		return string(e.Query), nil
	}
	dec, err := charsetDecoder(charset)
	if err != nil {
		return "", fmt.Errorf("statement sent in %s: %w", charset, err)
	}
	return dec(string(e.Query)), nil
}
