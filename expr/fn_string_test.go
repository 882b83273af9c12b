package expr

import (
	"strings"
	"testing"
)

// colType types a source column as Check does.
func colType(t *testing.T, def string) Type {
	t.Helper()
	typ, err := typeOfDef(def, true)
	if err != nil {
		t.Fatalf("%s: %v", def, err)
	}
	return typ
}

const (
	u4g   = "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
	u4u   = "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
	u4uca = "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci"
	l1    = "varchar(10) CHARACTER SET latin1 COLLATE latin1_swedish_ci"
	l1b   = "varchar(10) CHARACTER SET latin1 COLLATE latin1_bin"
	asc   = "varchar(10) CHARACTER SET ascii COLLATE ascii_general_ci"
	gbk   = "varchar(10) CHARACTER SET gbk COLLATE gbk_chinese_ci"
)

func TestStringFunctionTypes(t *testing.T) {
	lit := func(s string) *Datum { return &Datum{Kind: KindString, S: s, Coll: connectionCollation} }
	litType := func(s string) Type { return stringLit(s, 0).typ }
	for _, c := range []struct {
		why    string
		fn     string
		defs   []string
		consts map[int]*Datum
		want   string // the result column, or the error's start
	}{
		{"a column keeps its collation", "CONCAT", []string{u4u}, nil, "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"},
		{"utf8mb4 holds latin1's characters, so it wins", "CONCAT", []string{u4u, l1}, nil, "varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"},
		{"latin1 holds ascii's", "CONCAT", []string{asc, l1}, nil, "varchar(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"a number becomes text in the connection's collation", "CONCAT", []string{"int(11)"}, nil, "varchar(11) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"a decimal's text has its sign and point", "CONCAT", []string{"decimal(12,2)"}, nil, "varchar(14) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"a binary argument makes the result binary", "CONCAT", []string{u4g, "varbinary(9)"}, nil, "varbinary(19)"},
		{"a double's text takes up to 24 characters (the server says 22 and cuts)", "CONCAT", []string{"double"}, nil, "varchar(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"over 512 characters is a TEXT", "CONCAT", []string{"varchar(600) CHARACTER SET latin1 COLLATE latin1_swedish_ci"}, nil, "text CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"a utf8mb4 TEXT counts its bytes as characters", "CONCAT", []string{"text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, nil, "mediumtext CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"an ENUM is as long as its longest member", "CONCAT", []string{"enum('a','ccc','bé') CHARACTER SET latin1 COLLATE latin1_swedish_ci"}, nil, "varchar(3) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"a SET as all its members and commas", "CONCAT", []string{"set('a','bb','ccc') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, nil, "varchar(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"uca1400 maps to longer characters", "UPPER", []string{u4uca}, nil, "varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci"},
		{"general_ci does not", "LOWER", []string{u4g}, nil, "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"MariaDB counts SUBSTRING's length in bytes", "SUBSTRING", []string{u4g, "int(11)"}, map[int]*Datum{1: {Kind: KindInt, I: 2}}, "varchar(39) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"position 0 is always empty", "SUBSTRING", []string{u4g, "int(11)"}, map[int]*Datum{1: {Kind: KindInt, I: 0}}, "char(0) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"a negative position bounds the length", "SUBSTRING", []string{l1, "int(11)"}, map[int]*Datum{1: {Kind: KindInt, I: -3}}, "varchar(3) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"a constant length bounds it", "SUBSTRING", []string{l1, "int(11)", "int(11)"}, map[int]*Datum{1: {Kind: KindInt, I: 3}, 2: {Kind: KindInt, I: 20}}, "varchar(8) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"LENGTH is an INT", "LENGTH", []string{l1}, nil, "int(10)"},
		{"CRC32 an INT UNSIGNED", "CRC32", []string{"bigint(20)"}, nil, "int(10) unsigned"},
		{"of two collations of one charset the _bin one wins", "CONCAT", []string{l1, l1b}, nil, "varchar(20) CHARACTER SET latin1 COLLATE latin1_bin"},
		{"and if neither is _bin, the charset's _bin", "CONCAT", []string{u4u, u4uca}, nil, "varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"},
		{"utf8mb3 holds latin1", "CONCAT", []string{l1, "varchar(5) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin"}, nil, "varchar(15) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin"},
		{"Eval cannot tell a general_ci column from a literal", "CONCAT", []string{l1, u4g}, nil, "CONCAT of a utf8mb4_general_ci column"},
		{"charsets without known bytes are refused", "LENGTH", []string{gbk}, nil, "LENGTH: strings in collation gbk_chinese_ci"},
		{"a FLOAT's text is not reproduced", "CONCAT", []string{"float"}, nil, "CONCAT: a FLOAT's text"},
		{"a BIT's text is bytes", "CONCAT", []string{"bit(8)"}, nil, "CONCAT: a BIT value"},
		{"JSON needs JSON_VALUE", "LOWER", []string{"json"}, nil, "LOWER does not take a JSON argument"},
		{"a decimal position would round", "SUBSTRING", []string{u4g, "decimal(5,1)"}, nil, "SUBSTRING takes an integer position"},
	} {
		types := make([]Type, len(c.defs))
		consts := make([]*Datum, len(c.defs))
		for i, d := range c.defs {
			types[i] = colType(t, d)
			if v := c.consts[i]; v != nil {
				consts[i] = v
			}
		}
		f, _ := lookup(c.fn)
		got, err := f.Type(types, consts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s: %s%v: error %v, want %s", c.why, c.fn, c.defs, err, c.want)
			}
			continue
		}
		if got.Column != c.want {
			t.Errorf("%s: %s%v = %s, want %s", c.why, c.fn, c.defs, got.Column, c.want)
		}
	}
	// A literal the result charset lacks cannot be converted.
	f, _ := lookup("CONCAT")
	if _, err := f.Type([]Type{colType(t, l1), litType("😀")}, []*Datum{nil, lit("😀")}); err == nil || !strings.Contains(err.Error(), "latin1 lacks") {
		t.Errorf("CONCAT(latin1, '😀'): %v, want a refusal", err)
	}
}

func TestStringFunctionEval(t *testing.T) {
	str := func(s, coll string) Datum { return Datum{Kind: KindString, S: s, Coll: coll} }
	i := func(v int64) Datum { return Datum{Kind: KindInt, I: v} }
	for _, c := range []struct {
		why  string
		fn   string
		args []Datum
		want string // the text, or NULL
	}{
		{"NULL in, NULL out", "CONCAT", []Datum{str("a", "utf8mb4_general_ci"), Null}, "NULL"},
		{"numbers as their digits", "CONCAT", []Datum{str("a", "utf8mb4_general_ci"), i(-12), {Kind: KindDecimal, S: "-0.50", Frac: 2}}, "a-12-0.50"},
		{"latin1 bytes in a binary result", "CONCAT", []Datum{str("é", "latin1_swedish_ci"), {Kind: KindBytes, S: "\xff"}}, "\xe9\xff"},
		{"general_ci's table leaves the Turkish dotless i", "UPPER", []Datum{str("ıi", "utf8mb4_general_ci")}, "II"},
		{"Turkish maps i to İ", "UPPER", []Datum{str("i", "utf8mb4_turkish_ci")}, "İ"},
		{"general_ci does not map beyond the BMP", "LOWER", []Datum{str("𐐀", "utf8mb4_general_ci")}, "𐐀"},
		{"uca1400 does", "LOWER", []Datum{str("𐐀", "utf8mb4_uca1400_ai_ci")}, "𐐨"},
		{"latin1 has no upper ÿ… but Ÿ is in latin1", "UPPER", []Datum{str("ÿ", "latin1_swedish_ci")}, "ÿ"},
		{"binary strings have no case", "UPPER", []Datum{{Kind: KindBytes, S: "abc"}}, "abc"},
		{"a double's exponent has case", "UPPER", []Datum{{Kind: KindDouble, F: 1e300}}, "1E300"},
		{"from the end", "SUBSTRING", []Datum{str("héllo", "utf8mb4_general_ci"), i(-3)}, "llo"},
		{"before the start is empty", "SUBSTRING", []Datum{str("héllo", "utf8mb4_general_ci"), i(-6)}, ""},
		{"position 0 is empty", "SUBSTRING", []Datum{str("héllo", "utf8mb4_general_ci"), i(0)}, ""},
		{"characters, not bytes", "SUBSTRING", []Datum{str("😀é😀", "utf8mb4_general_ci"), i(2), i(1)}, "é"},
		{"a length past the end takes the rest", "SUBSTRING", []Datum{str("abc", "utf8mb4_general_ci"), i(2), i(100)}, "bc"},
		{"a negative length is empty", "SUBSTRING", []Datum{str("abc", "utf8mb4_general_ci"), i(1), i(-1)}, ""},
		{"a huge unsigned length takes the rest", "SUBSTRING", []Datum{str("abc", "utf8mb4_general_ci"), i(1), {Kind: KindUint, U: 1 << 63}}, "abc"},
		{"a position beyond 32 bits is empty", "SUBSTRING", []Datum{str("abc", "utf8mb4_general_ci"), i(1 << 32)}, ""},
		{"binary strings count bytes", "SUBSTRING", []Datum{{Kind: KindBytes, S: "\xc3\xa9x"}, i(2)}, "\xa9x"},
		{"utf8mb4 bytes", "LENGTH", []Datum{str("é😀", "utf8mb4_general_ci")}, "6"},
		{"latin1 bytes", "LENGTH", []Datum{str("é€", "latin1_swedish_ci")}, "2"},
		{"characters", "CHAR_LENGTH", []Datum{str("é😀", "utf8mb4_general_ci")}, "2"},
		{"CRC32 of latin1's bytes", "CRC32", []Datum{str("é", "latin1_swedish_ci")}, "198489425"}, // the server's CRC32(CONVERT('é' USING latin1))
		{"CRC32 of UTF-8 bytes", "CRC32", []Datum{str("é", "utf8mb4_general_ci")}, "235179326"},
		{"CRC32 of a number's digits", "CRC32", []Datum{i(0)}, "4108050209"},
	} {
		f, _ := lookup(c.fn)
		types := make([]Type, len(c.args))
		for k, a := range c.args {
			types[k] = Type{Kind: a.Kind, Coll: a.Coll}
		}
		got, err := f.Eval(c.args, types)
		if err != nil {
			t.Errorf("%s: %s: %v", c.why, c.fn, err)
			continue
		}
		text := "NULL"
		if !got.IsNull() {
			text = got.Text()
		}
		if text != c.want {
			t.Errorf("%s: %s = %q, want %q", c.why, c.fn, text, c.want)
		}
	}
}

// TestLatin1 checks MySQL's latin1 against the bytes the server converts
// (the e2e TestCaseTables takes the repertoire through it too).
func TestLatin1(t *testing.T) {
	for _, c := range []struct {
		why string
		r   rune
		b   byte
		ok  bool
	}{
		{"ASCII is itself", 'A', 'A', true},
		{"the euro sign is Windows-1252's 0x80", '€', 0x80, true},
		{"0x81 is the C1 control, as the server converts it", 0x81, 0x81, true},
		{"ÿ is 0xff", 'ÿ', 0xff, true},
		{"Ÿ is 0x9f", 'Ÿ', 0x9f, true},
		{"no emoji", '😀', 0, false},
	} {
		b, ok := latin1Byte(c.r)
		if ok != c.ok || ok && b != c.b {
			t.Errorf("%s: latin1Byte(%U) = %#x %v", c.why, c.r, b, ok)
		}
	}
}

// BenchmarkStringFunctions: a typical computed column, CONCAT of a latin1
// column, a literal and a number (the collation found per row), and LOWER.
func BenchmarkStringFunctions(b *testing.B) {
	e, err := Parse("CONCAT(LOWER(name), '-', id)")
	if err != nil {
		b.Fatal(err)
	}
	schema := func(n string) (Column, bool) {
		switch n {
		case "name":
			return Column{Name: n, Def: "varchar(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci"}, true
		case "id":
			return Column{Name: n, Def: "bigint(20)"}, true
		}
		return Column{}, false
	}
	if _, err := e.Check(schema); err != nil {
		b.Fatal(err)
	}
	row := []Datum{{Kind: KindString, S: "Ärger Über Öl", Coll: "latin1_swedish_ci"}, {Kind: KindInt, I: 1234567}}
	if e.Columns()[0] != "name" {
		row[0], row[1] = row[1], row[0]
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(row); err != nil {
			b.Fatal(err)
		}
	}
}
