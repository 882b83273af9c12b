package cdc

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestEnumSetMembersDecoded: the binlog carries ENUM and SET member names
// in the column's charset; published, they are UTF-8, as the snapshot
// reads them. Collation ids are the servers' own (8 latin1_swedish_ci,
// 9 latin2_general_ci, 51 cp1251_general_ci, 45 utf8mb4_general_ci,
// 63 binary).
func TestEnumSetMembersDecoded(t *testing.T) {
	charsets := map[uint64]string{8: "latin1", 9: "latin2", 51: "cp1251", 45: "utf8mb4", 63: "binary"}
	charsetOf := func(c uint64) string { return charsets[c] }
	for _, c := range []struct {
		why     string
		typ     byte
		coll    uint64
		members []string
		value   int64
		want    string
	}{
		{"latin1 ENUM member with non-ASCII letters (the reported \\ufffdn\\ufffd)", mysql.MYSQL_TYPE_ENUM, 8, []string{"a", "\xfcn\xef"}, 2, `"ünï"`},
		{"latin1 SET members joined after decoding", mysql.MYSQL_TYPE_SET, 8, []string{"\xe9t\xe9", "b", "\xa3"}, 0b101, `"été,£"`},
		{"MySQL's latin1 is Windows-1252: 0x80 is the euro sign", mysql.MYSQL_TYPE_ENUM, 8, []string{"\x80"}, 1, `"€"`},
		{"the five bytes Windows-1252 leaves undefined are C1 controls, as the server converts them", mysql.MYSQL_TYPE_ENUM, 8, []string{"a\x81\x8d\x8f\x90\x9d\xff"}, 1, "\"a\u0081\u008d\u008f\u0090\u009d\u00ff\""},
		{"latin2 has its own letters at the same bytes", mysql.MYSQL_TYPE_ENUM, 9, []string{"\xb3\xf3d\xbc"}, 1, `"łódź"`},
		{"cp1251 Cyrillic", mysql.MYSQL_TYPE_SET, 51, []string{"\xe4\xe0", "\xed\xe5\xf2"}, 0b11, `"да,нет"`},
		{"utf8mb4 members are already UTF-8", mysql.MYSQL_TYPE_ENUM, 45, []string{"ünï"}, 1, `"ünï"`},
		{"binary members are bytes: left as they are", mysql.MYSQL_TYPE_ENUM, 63, []string{"ab"}, 1, `"ab"`},
		{"index 0 is MySQL's invalid-value member, whatever the charset", mysql.MYSQL_TYPE_ENUM, 8, []string{"\xfc"}, 0, `""`},
	} {
		tm := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_STRING},
			ColumnMeta: []uint16{uint16(c.typ)<<8 | 1}, EnumSetDefaultCharset: []uint64{c.coll}}
		raw := make([][]byte, len(c.members))
		for i, m := range c.members {
			raw[i] = []byte(m)
		}
		if c.typ == mysql.MYSQL_TYPE_ENUM {
			tm.EnumStrValue = [][][]byte{raw}
		} else {
			tm.SetStrValue = [][][]byte{raw}
		}
		col, err := newColumn(tm, 0, "c", charsetOf)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		got, err := col.appendValue(nil, c.value)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: published %s (%v), want %s", c.why, got, err, c.want)
		}
	}
}

// TestEnumSetMembersUndecodable: a member charset readside cannot decode
// (none today; a server's future one) is refused with the fix, not
// published as replacement characters.
func TestEnumSetMembersUndecodable(t *testing.T) {
	tm := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_STRING},
		ColumnMeta: []uint16{uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1}, EnumSetDefaultCharset: []uint64{99},
		EnumStrValue: [][][]byte{{[]byte("x")}}}
	_, err := newColumn(tm, 0, "c", func(uint64) string { return "utf64" })
	if err == nil || !strings.Contains(err.Error(), "convert the column to utf8mb4") {
		t.Fatalf("newColumn = %v, want the charset refused with the fix", err)
	}
}

// TestCharsetDecoders: each decoder returns what the server's
// CONVERT(x USING utf8mb4) returns for the same bytes (each expectation
// was read from MariaDB 10.11; TestCharsetDecodersMatchServer compares
// them all with the server).
func TestCharsetDecoders(t *testing.T) {
	for _, c := range []struct {
		why, charset, in, want string
	}{
		{"MySQL's latin1 is Windows-1252: 0x80 is the euro sign", "latin1", "\x80", "€"},
		{"latin1's five bytes Windows leaves undefined are the C1 controls of the same number", "latin1", "\x81\x9d", "\u0081\u009d"},
		{"ascii has no bytes above 0x7F: each is '?'", "ascii", "a\x80\xff", "a??"},
		{"swe7 is not ASCII: 0x5B is Ä", "swe7", "[", "Ä"},
		{"dec8 has no character at 0xA4: '?'", "dec8", "\xa4", "?"},
		{"tis620 Thai", "tis620", "\xa1", "ก"},
		{"0x00 is a character like any other", "latin2", "\x00\xb3", "\x00ł"},
		{"big5 two-byte character", "big5", "\xa4\x40", "一"},
		{"big5 well-formed code without a code point: one '?' for both bytes", "big5", "\xa3\xe1A", "?A"},
		{"big5 lead byte before ASCII: '?' for the lead alone, the ASCII kept", "big5", "\xa1\x30B", "?0B"},
		{"big5 lead byte cut at the end: '?'", "big5", "A\xa1", "A?"},
		{"sjis 0x5C is the backslash, not the yen sign", "sjis", "\x5c", "\\"},
		{"sjis 815F is the backslash; cp932 makes it the fullwidth one", "sjis", "\x81\x5f", "\\"},
		{"cp932 815F is U+FF3C", "cp932", "\x81\x5f", "＼"},
		{"ujis 0x8E prefix: half-width katakana", "ujis", "\x8e\xb6", "ｶ"},
		{"ujis 0x8F three-byte code without a code point: one '?' for three bytes", "ujis", "\x8f\xa1\xa1", "?"},
		{"ujis 8F 00 41 is 'A' in MariaDB's JIS X 0212 table", "ujis", "\x8f\x00\x41", "A"},
		{"ujis 8F 00 00 has no code point: '?' for 0x8F, then the two NULs", "ujis", "\x8f\x00\x00", "?\x00\x00"},
		{"utf8mb4 four-byte character kept", "utf8mb4", "😀", "😀"},
		{"utf8mb4 lead without continuation: '?' and one byte skipped", "utf8mb4", "\xc3\x28", "?("},
		{"utf8mb4 cut four-byte character: a '?' per byte", "utf8mb4", "\xf0\x9f\x98", "???"},
		{"utf8mb4 cut three-byte character before ASCII", "utf8mb4", "\xe2\x82A", "??A"},
		{"utf8mb4 overlong NUL is not well-formed", "utf8mb4", "\xc0\x80", "??"},
		{"utf8mb4 above U+10FFFF is not well-formed", "utf8mb4", "\xf4\x90\x80\x80", "????"},
		{"MariaDB's utf8mb4 takes an encoded surrogate as it is", "utf8mb4", "\xed\xa0\x80", "\xed\xa0\x80"},
		{"utf8mb3 has no four-byte characters: a '?' per byte", "utf8mb3", "😀", "????"},
		{"ucs2 surrogate code point written as three bytes", "ucs2", "\xd8\x00\x00A", "\xed\xa0\x80A"},
		{"ucs2 odd last byte", "ucs2", "\x00A\x00", "A?"},
		{"utf16 surrogate pair is one supplementary character", "utf16", "\xd8\x00\xdc\x00", "\U00010000"},
		{"utf16 high surrogate without a low one: '?', one byte on, out of step", "utf16", "\xd8\x00\x00A", "?\x00?"},
		{"utf16 lone low surrogate", "utf16", "\xdc\x00\x00A", "?\x00?"},
		{"utf16 high surrogate cut at the end", "utf16", "\x00A\xd8\x00", "A??"},
		{"utf16le high surrogate before a non-surrogate", "utf16le", "\x00\xd8A\x00", "?\u41d8?"},
		{"utf32 above U+10FFFF, one byte on each time", "utf32", "\x00\x11\x00\x00\x00\x00\x00A", "??\x00??"},
		{"utf32 surrogate code point written as three bytes", "utf32", "\x00\x00\xd8\x00", "\xed\xa0\x80"},
		{"utf32 above 0x7FFFFFFF is not a code point", "utf32", "\xff\xff\xff\xff", "????"},
		{"gb18030 four-byte form of U+0080", "gb18030", "\x81\x30\x81\x30", "\u0080"},
		{"gb18030 four-byte form of a supplementary character", "gb18030", "\x90\x30\x81\x30", "\U00010000"},
		{"gb18030 0x80 is no character", "gb18030", "\x80A", "?A"},
		{"gb18030 two-byte character", "gb18030", "\xa1\xa1", "\u3000"},
		{"gb18030 cut four-byte form: '?' and one byte on", "gb18030", "\x81\x30A", "?0A"},
	} {
		dec, err := charsetDecoder(c.charset)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if got := dec(c.in); got != c.want {
			t.Errorf("%s: %s %X decodes to %X, want %X", c.why, c.charset, c.in, got, c.want)
		}
	}
}

// TestEveryServerCharsetDecoded: the registry has every character set
// MySQL 8.4/9.x and MariaDB 10.11/11.x list in SHOW CHARACTER SET (binary
// aside, which is bytes).
func TestEveryServerCharsetDecoded(t *testing.T) {
	for _, cs := range strings.Fields(`armscii8 ascii big5 cp1250 cp1251 cp1256 cp1257 cp850 cp852 cp866 cp932 dec8
		eucjpms euckr gb18030 gb2312 gbk geostd8 greek hebrew hp8 keybcs2 koi8r koi8u latin1 latin2 latin5 latin7
		macce macroman sjis swe7 tis620 ucs2 ujis utf16 utf16le utf32 utf8mb3 utf8mb4 utf8`) {
		if _, err := charsetDecoder(cs); err != nil {
			t.Errorf("%s: %v", cs, err)
		}
	}
}

// FuzzCharsetDecoders: no input makes a decoder panic, and valid Unicode
// text encoded in each Unicode charset decodes back to itself.
func FuzzCharsetDecoders(f *testing.F) {
	for _, s := range []string{"", "a", "ünï😀", "\xd8\x00", "\x8f\x00\x41", "\xff\xfe\xfd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, dec := range charsetDecoders {
			if out := dec(s); len(s) > 0 && len(out) == 0 {
				t.Errorf("%s: %X decodes to nothing", name, s)
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		var be, le, u32 []byte
		for _, u := range utf16.Encode([]rune(s)) {
			be = binary.BigEndian.AppendUint16(be, u)
			le = binary.LittleEndian.AppendUint16(le, u)
		}
		for _, r := range s {
			u32 = binary.BigEndian.AppendUint32(u32, uint32(r))
		}
		for cs, in := range map[string][]byte{"utf8mb4": []byte(s), "utf16": be, "utf16le": le, "utf32": u32} {
			if got := charsetDecoders[cs](string(in)); got != s {
				t.Errorf("%s %X decodes to %q, want %q", cs, in, got, s)
			}
		}
	})
}

// TestExcludedColumnCharsetNotDecoded: a column in source.exclude_columns
// is never published, so a charset readside cannot decode does not stop
// its table; the same column published does, naming it.
func TestExcludedColumnCharsetNotDecoded(t *testing.T) {
	tm := &replication.TableMapEvent{Schema: []byte("db"), Table: []byte("t"), ColumnCount: 2,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR}, ColumnMeta: []uint16{0, 40},
		ColumnName: [][]byte{[]byte("id"), []byte("g")}, PrimaryKey: []uint64{0},
		DefaultCharset: []uint64{99}, NullBitmap: []byte{0}, SignednessBitmap: []byte{0}}
	charsetOf := func(uint64) string { return "utf64" }
	if _, err := newTable(tm, "topic", map[string]bool{"g": true}, nil, charsetOf); err != nil {
		t.Errorf("excluded column in an undecodable charset: %v", err)
	}
	_, err := newTable(tm, "topic", nil, nil, charsetOf)
	if err == nil || !strings.Contains(err.Error(), `table db.t: column g: character set "utf64" cannot be decoded`) {
		t.Errorf("published column in an undecodable charset: %v, want it refused by name", err)
	}
}
