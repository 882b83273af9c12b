package cdc

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// serverCharsets lists the test bed's SHOW CHARACTER SET with each
// charset's longest character, binary aside, and logs the registry's
// charsets the server lacks (gb18030 on MariaDB).
func serverCharsets(t *testing.T, db *sql.DB) (names []string, maxlen map[string]int) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT CHARACTER_SET_NAME, MAXLEN FROM information_schema.CHARACTER_SETS ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	maxlen = map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		if name != "binary" {
			names = append(names, name)
			maxlen[name] = n
		}
	}
	var lacking []string
	for name := range charsetDecoders {
		if _, ok := maxlen[name]; !ok && name != "utf8" {
			lacking = append(lacking, name)
		}
	}
	slices.Sort(lacking)
	t.Logf("the test bed has %d character sets; it lacks %v, which this test cannot compare", len(names), lacking)
	return names, maxlen
}

// convertRaw asks the server for HEX(x) and HEX(CONVERT(x USING utf8mb4))
// of each input as a string literal in charset: with a binary client and
// the charset as the connection's, the literal's bytes reach CONVERT as
// they were sent, unchecked, as a stored value's would (the Unicode
// charsets left-pad an input cut short to whole code units).
func convertRaw(t *testing.T, conn *sql.Conn, charset string, inputs [][]byte) (raw, converted [][]byte) {
	t.Helper()
	mustExec(t, conn, "SET character_set_client=binary, character_set_connection="+charset+", character_set_results=binary")
	var q strings.Builder
	q.WriteString("SELECT ")
	for i, in := range inputs {
		if i > 0 {
			q.WriteString(", ")
		}
		lit := "'" + escapeLiteral(in) + "'"
		fmt.Fprintf(&q, "CONVERT(HEX(%s) USING ascii), CONVERT(HEX(CONVERT(%s USING utf8mb4)) USING ascii)", lit, lit)
	}
	hexes := make([]string, 2*len(inputs))
	dest := make([]any, len(hexes))
	for i := range hexes {
		dest[i] = &hexes[i]
	}
	if err := conn.QueryRowContext(t.Context(), q.String()).Scan(dest...); err != nil {
		t.Fatalf("converting from %s: %v", charset, err)
	}
	for i := 0; i < len(hexes); i += 2 {
		r, err1 := hex.DecodeString(hexes[i])
		c, err2 := hex.DecodeString(hexes[i+1])
		if err1 != nil || err2 != nil {
			t.Fatalf("server hex %q %q", hexes[i], hexes[i+1])
		}
		raw, converted = append(raw, r), append(converted, c)
	}
	return raw, converted
}

// escapeLiteral escapes NUL, quote and backslash, all a binary client's
// string literal needs.
func escapeLiteral(b []byte) string {
	var e []byte
	for _, c := range b {
		switch c {
		case 0:
			e = append(e, '\\', '0')
		case '\\', '\'':
			e = append(e, '\\', c)
		default:
			e = append(e, c)
		}
	}
	return string(e)
}

// charsetSamples are inputs for charset: every byte alone and all 256 in
// one string; for multi-byte charsets every two-byte sequence with a lead
// from 0x80 (and for ujis/eucjpms every 0x8F-prefixed three-byte one),
// which covers each table entry; and random strings mixing valid
// characters, cut ones and stray bytes, to check the steps chain as the
// server's do (rng fixed: a failure reproduces).
func charsetSamples(charset string, maxlen int, rng *rand.Rand) [][]byte {
	var in [][]byte
	all := make([]byte, 256)
	for b := range 256 {
		in = append(in, []byte{byte(b)})
		all[b] = byte(b)
	}
	in = append(in, all)
	if maxlen == 1 {
		return in
	}
	if multiByteTables[charset] != nil {
		for lead := 0x80; lead <= 0xFF; lead++ {
			for trail := range 256 {
				in = append(in, []byte{byte(lead), byte(trail)})
			}
		}
		if charset == "ujis" || charset == "eucjpms" {
			for second := range 256 {
				for third := range 256 {
					in = append(in, []byte{0x8F, byte(second), byte(third)})
				}
			}
		}
	}
	// Bytes that matter to some charset: ASCII, CJK leads and trails,
	// UTF-8 leads and continuations, UTF-16 surrogate halves, and utf32's
	// zero bytes and values past U+10FFFF.
	alphabet := []byte{0x00, 0x00, 0x00, 0x01, 0x10, 0x11, 0x30, 0x39, 0x41, 0x5C, 0x7E, 0x7F, 0x80, 0x81, 0x8E, 0x8F, 0x90,
		0x9F, 0xA0, 0xA1, 0xBF, 0xC0, 0xC2, 0xD8, 0xDB, 0xDC, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFE, 0xFF}
	for range 1500 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		in = append(in, b)
	}
	// Valid supplementary characters in each Unicode encoding, alone and
	// between stray bytes.
	for _, s := range []string{"\xf0\x9f\x98\x80", "\xd8\x3d\xde\x00", "\x3d\xd8\x00\xde", "\x00\x01\xf6\x00", "\x00\x10\xff\xff", "\xdb\xff\xdf\xff"} {
		in = append(in, []byte(s), []byte("A"+s), []byte(s+"\xff"))
	}
	return in
}

// TestCharsetDecodersMatchServer: every character set of the test bed's
// server is decoded exactly as the server's own CONVERT(x USING utf8mb4)
// converts the same bytes — every byte of a single-byte set, every
// two-byte (and 0x8F three-byte) sequence of a CJK set, and random
// strings of valid, cut and invalid sequences for all, supplementary
// characters included — byte for byte, '?' for what the server cannot
// convert, skipping as many bytes as it does.
func TestCharsetDecodersMatchServer(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer conn.Raw(func(any) error { return driver.ErrBadConn }) // its charsets are changed: not back to the pool
	names, maxlen := serverCharsets(t, bed.MySQL.DB())
	rng := rand.New(rand.NewPCG(40, 1))
	for _, cs := range names {
		dec, err := charsetDecoder(cs)
		if err != nil {
			t.Errorf("the server's character set %s: %v", cs, err)
			continue
		}
		inputs := charsetSamples(cs, maxlen[cs], rng)
		bad := 0
		for start := 0; start < len(inputs); start += 256 {
			raw, want := convertRaw(t, conn, cs, inputs[start:min(start+256, len(inputs))])
			for i := range raw {
				if got := dec(string(raw[i])); got != string(want[i]) {
					if bad++; bad <= 5 {
						t.Errorf("%s: %X decodes to %X, the server converts it to %X", cs, raw[i], got, want[i])
					}
				}
			}
		}
		if bad > 5 {
			t.Errorf("%s: %d of %d inputs differ from the server", cs, bad, len(inputs))
		}
	}
}

// published is the JSON string a change event carries for text the
// server converts to b: bytes that are no UTF-8 (the three-byte
// surrogates ucs2 and utf32 convert to) are U+FFFD, one per byte, on
// both paths (appendJSONString).
func published(b []byte) string {
	var out []byte
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}

// TestCharsetColumnsThroughBothPaths: a table with a TEXT column in every
// character set of the test bed, and ENUM and SET columns in non-UTF-8
// ones, is snapshotted and then written live (inserts and an update of
// the same values); every published value is the server's
// CONVERT(col USING utf8mb4) of what it stores — all 256 bytes of each
// single-byte set (0x00 and trailing spaces included), and for the
// multi-byte sets CJK, supplementary characters, well-formed codes
// without a code point and invalid bytes (which the server stores as it
// does, written under sql_mode=”).
func TestCharsetColumnsThroughBothPaths(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src := bed.MySQL
	names, maxlen := serverCharsets(t, src.DB())
	db, err := src.CreateDatabase(ctx, "charsets")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, conn, "SET NAMES utf8mb4")
	mustExec(t, conn, "SET SESSION sql_mode = ''")

	var defs, cols []string
	for _, cs := range names {
		defs = append(defs, fmt.Sprintf("c_%s TEXT CHARACTER SET %s", cs, cs))
		cols = append(cols, "c_"+cs)
	}
	// Members spelled in UTF-8 here; the server stores them in the
	// column's charset, and the binlog's table map carries them so.
	members := map[string]string{
		"latin2": "'łódź','żółw'", "cp1251": "'да','нет'", "koi8r": "'да','нет'", "greek": "'αβ','γδ'",
		"big5": "'漢字','中文'", "sjis": "'かな','ｶﾅ'", "ujis": "'漢字','かな'", "euckr": "'한국어','나'",
		"gbk": "'汉字','中文'", "utf16": "'😀','ü'", "utf32": "'𝄞','ü'", "ucs2": "'ü','€'", "macroman": "'ü','π'",
	}
	var enumCharsets []string
	for cs := range members {
		if _, ok := maxlen[cs]; ok {
			enumCharsets = append(enumCharsets, cs)
		}
	}
	slices.Sort(enumCharsets)
	for _, cs := range enumCharsets {
		defs = append(defs, fmt.Sprintf("e_%s ENUM(%s) CHARACTER SET %s, s_%s SET(%s) CHARACTER SET %s", cs, members[cs], cs, cs, members[cs], cs))
		cols = append(cols, "e_"+cs, "s_"+cs)
	}
	mustExec(t, conn, fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY, %s)", db, strings.Join(defs, ", ")))

	// Row 1: all 256 bytes for single-byte sets; for the others a sample
	// text the server encodes, then bytes it may not take. Row 2: for the
	// table-decoded CJK sets well-formed codes without a code point (the
	// server keeps them and converts each to one '?').
	allBytes := make([]byte, 256)
	for b := range allBytes {
		allBytes[b] = byte(b)
	}
	const sample = "Aü€漢字かなｶﾅ한국어汉字😀𝄞 "
	value := func(cs string, row int) string {
		if maxlen[cs] == 1 {
			if row == 1 {
				return fmt.Sprintf("_binary x'%X'", allBytes)
			}
			return fmt.Sprintf("_binary x'%X'", append(slices.Clone(allBytes[0x80:]), "  "...)) // trailing spaces kept by TEXT
		}
		invalid := map[string]string{ // cut and stray sequences
			"utf8mb4": "F09F98C328ED9FBFEDA080", "utf8mb3": "F09F9880E282", "utf16": "D83D0041DC00", "utf16le": "3DD84100",
			"utf32": "0011000000000041", "ucs2": "D800DFFF", "ujis": "8FA1A18FFEFEA1", "eucjpms": "8FA1A18FFEFEA1",
		}[cs]
		if invalid == "" {
			invalid = "FF80A1"
		}
		if row == 1 {
			return fmt.Sprintf("CONCAT(CAST(CONVERT(_utf8mb4'%s' USING %s) AS BINARY), x'%s')", sample, cs, invalid)
		}
		var unmapped []byte
		if t, ok := multiByteTables[cs]; ok {
			for lead := 0x81; lead <= 0xFE && len(unmapped) < 40; lead++ {
				for trail := 0x40; trail <= 0xFE && len(unmapped) < 40; trail++ {
					if row := t.pair[lead-0x80]; row != nil && row[trail] == '?' {
						unmapped = append(unmapped, byte(lead), byte(trail))
					}
				}
			}
		}
		return fmt.Sprintf("CONCAT(x'%X', CAST(CONVERT(_utf8mb4'%s' USING %s) AS BINARY))", unmapped, sample, cs)
	}
	insert := func(id, row int) string {
		var vals []string
		for _, cs := range names {
			vals = append(vals, value(cs, row))
		}
		for range enumCharsets {
			vals = append(vals, fmt.Sprint(row), fmt.Sprint(row+1)) // ENUM by index, SET by bits
		}
		return fmt.Sprintf("INSERT INTO `%s`.t (id, %s) VALUES (%d, %s)", db, strings.Join(cols, ", "), id, strings.Join(vals, ", "))
	}
	mustExec(t, conn, insert(1, 1))
	mustExec(t, conn, insert(2, 2))

	// What the server converts each stored value to, by id.
	expect := func() map[int]map[string]string {
		var exprs []string
		for _, c := range cols {
			exprs = append(exprs, fmt.Sprintf("HEX(CONVERT(%s USING utf8mb4))", c))
		}
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT id, %s FROM `%s`.t", strings.Join(exprs, ", "), db))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int]map[string]string{}
		for rows.Next() {
			var id int
			vals := make([]string, len(cols))
			dest := []any{&id}
			for i := range vals {
				dest = append(dest, &vals[i])
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			m := map[string]string{}
			for i, c := range cols {
				b, _ := hex.DecodeString(vals[i])
				m[c] = published(b)
			}
			out[id] = m
		}
		return out
	}
	before := expect()
	compare := func(e testEvent, img map[string]any, want map[string]string) {
		t.Helper()
		id := fmt.Sprint(img["id"])
		for _, c := range cols {
			got, ok := img[c].(string)
			if !ok {
				t.Errorf("%s of row %s column %s: %T %v, want a string", e.Op, id, c, img[c], img[c])
				continue
			}
			if got != want[c] {
				t.Errorf("%s of row %s column %s: published %X, the server converts it to %X", e.Op, id, c, got, want[c])
			}
		}
	}
	idOf := func(img map[string]any) int {
		var id int
		fmt.Sscan(fmt.Sprint(img["id"]), &id)
		return id
	}

	cfg := tailerConfig(t, bed, db+".t")
	cfg.Source.Snapshot.Mode = config.SnapshotInitial
	startTailer(t, cfg)
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t"))
	var shape testSchema
	for _, e := range cons.next(2, 60*time.Second) {
		if e.Op != "r" {
			t.Fatalf("event %s before the snapshot's reads", e.Op)
		}
		compare(e, e.After, before[idOf(e.After)])
		shape = *e.Schema
	}
	waitForTailer(t, bed, cfg)

	mustExec(t, conn, fmt.Sprintf("INSERT INTO `%s`.t SELECT id+2, %s FROM `%s`.t WHERE id <= 2", db, strings.Join(cols, ", "), db))
	var sets []string
	for _, c := range cols {
		sets = append(sets, fmt.Sprintf("a.%s = b.%s", c, c))
	}
	mustExec(t, conn, fmt.Sprintf("UPDATE `%s`.t a JOIN `%s`.t b ON b.id = 2 SET %s WHERE a.id = 1", db, db, strings.Join(sets, ", ")))
	after := expect()
	var ops []string
	for _, e := range cons.next(3, 60*time.Second) {
		id := idOf(e.After)
		ops = append(ops, fmt.Sprintf("%s%d", e.Op, id))
		// The snapshot (information_schema) and the binlog (the table
		// map) describe the table alike, its collations included.
		if e.Schema.Version != shape.Version {
			t.Errorf("%s of row %d: schema version %s, the snapshot's %s: the two paths describe the table differently", e.Op, id, e.Schema.Version, shape.Version)
		}
		switch e.Op {
		case "c":
			compare(e, e.After, after[id])
		case "u":
			compare(e, e.Before, before[id])
			compare(e, e.After, after[id])
		}
	}
	if got := strings.Join(ops, " "); !sameMultiset(got, "c3 c4 u1") {
		t.Errorf("live events %s, want c3 c4 u1", got)
	}
	// A DDL changing only collations (which values compare equal; the
	// binlog's column types and lengths stay) is a new shape: projectors
	// compare their read tables with each (an aggregate grouping by such
	// a column cannot follow it).
	mustExec(t, conn, fmt.Sprintf("ALTER TABLE `%s`.t MODIFY c_utf8mb4 TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, MODIFY c_latin1 TEXT CHARACTER SET latin1 COLLATE latin1_bin", db))
	mustExec(t, conn, fmt.Sprintf("UPDATE `%s`.t SET id = 5 WHERE id = 4", db))
	for _, e := range cons.next(2, 60*time.Second) {
		if e.Schema.Version == shape.Version {
			t.Errorf("%s after a DDL changing two columns' collations: schema version %s unchanged", e.Op, e.Schema.Version)
		}
		if !maps.Equal(e.Schema.Columns, shape.Columns) {
			t.Errorf("%s after a DDL changing collations only: columns %v, before %v", e.Op, e.Schema.Columns, shape.Columns)
		}
	}
	t.Logf("%d columns in %d character sets, ENUM and SET in %d, compared through the snapshot and the binlog", len(cols), len(names), len(enumCharsets))
}

// TestUndecodableCharsetRefused: should a server ever have a character
// set readside cannot decode (simulated by taking armscii8 and geostd8 out
// of the registry), check refuses each captured column in it, naming the
// table, the column, the charset and the fix, but not an excluded column;
// and the tailer, run anyway, stops at the table's first binlog row with
// an error naming them too, instead of publishing wrong text.
func TestUndecodableCharsetRefused(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "undecodable")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY, ok TEXT CHARACTER SET latin2, a VARCHAR(10) CHARACTER SET armscii8, e ENUM('x','y') CHARACTER SET armscii8, g TEXT CHARACTER SET geostd8)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".t")
	cfg.Source.ExcludeColumns = []string{db + ".t.g"}

	findings := func() (errs []Finding) {
		for _, f := range CheckSource(ctx, cfg) {
			if f.Severity == "error" {
				errs = append(errs, f)
			}
		}
		return errs
	}
	if errs := findings(); len(errs) != 0 {
		t.Fatalf("check with every charset decodable: %v", errs)
	}
	for _, cs := range []string{"armscii8", "geostd8"} {
		saved := charsetDecoders[cs]
		delete(charsetDecoders, cs)
		t.Cleanup(func() { charsetDecoders[cs] = saved })
	}
	errs := findings()
	if len(errs) != 2 {
		t.Fatalf("check found %d errors, want one for each of columns a and e: %v", len(errs), errs)
	}
	for i, col := range []string{"a", "e"} {
		what := fmt.Sprintf("table %s.t column %s is in character set armscii8", db, col)
		if !strings.Contains(errs[i].What, what) || !strings.Contains(errs[i].Fix, "utf8mb4") || !strings.Contains(errs[i].Fix, db+".t."+col) {
			t.Errorf("check says %q (fix %q), want %q and the fix naming utf8mb4 and source.exclude_columns", errs[i].What, errs[i].Fix, what)
		}
	}

	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- tl.Run(runCtx) }()
	waitForTailer(t, bed, cfg)
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.t VALUES (1, 'ł', 'a', 'x', 'g')", db)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		want := fmt.Sprintf("table %s.t: column a: character set \"armscii8\" cannot be decoded", db)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "utf8mb4") {
			t.Errorf("tailer stopped with %v, want %q and the fix", err, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the tailer did not stop at a row in a charset it cannot decode")
	}
}
