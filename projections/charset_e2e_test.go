package projections_test

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestCharsetsIntoAReadTable: a source table with a TEXT column in every
// character set of the test bed and ENUM and SET columns in non-UTF-8
// ones, projected into a read table (whose columns keep the source's
// charsets), rows snapshotted, then inserted and updated live: each read
// value's HEX(CONVERT(col USING utf8mb4)) equals the source's — all 256
// bytes of each single-byte set, CJK, supplementary characters, codes
// without a code point and invalid bytes (stored by the source as '?').
// The source's ucs2 and utf32 surrogates convert to bytes that are no
// UTF-8; events carry them as U+FFFD, one per byte (docs/events.md), and
// that is what the read table holds.
func TestCharsetsIntoAReadTable(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	srcName, err := bed.MySQL.CreateDatabase(ctx, "charsets")
	if err != nil {
		t.Fatal(err)
	}
	sinkName, err := bed.MySQL.CreateDatabase(ctx, "charsetreads")
	if err != nil {
		t.Fatal(err)
	}
	src := openUTC(t, bed.MySQL.AdminDSN()+srcName)
	src.SetMaxOpenConns(1) // one session: its sql_mode below
	sinkRead := openUTC(t, bed.MySQL.AdminDSN()+sinkName)
	exec := func(q string) {
		t.Helper()
		if _, err := src.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.300s: %v", q, err)
		}
	}
	exec("SET SESSION sql_mode = ''") // invalid bytes are stored as '?', with a warning

	rows, err := src.QueryContext(ctx, "SELECT CHARACTER_SET_NAME, MAXLEN FROM information_schema.CHARACTER_SETS WHERE CHARACTER_SET_NAME <> 'binary' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	maxlen := map[string]int{}
	var charsets []string
	for rows.Next() {
		var cs string
		var n int
		if err := rows.Scan(&cs, &n); err != nil {
			t.Fatal(err)
		}
		charsets = append(charsets, cs)
		maxlen[cs] = n
	}
	rows.Close()
	var defs, cols []string
	for _, cs := range charsets {
		defs = append(defs, fmt.Sprintf("c_%s TEXT CHARACTER SET %s", cs, cs))
		cols = append(cols, "c_"+cs)
	}
	// utf8mb4, utf16 and utf32 members outside the Basic Multilingual
	// Plane: MariaDB's information_schema and SHOW CREATE TABLE show them
	// as '?' (one a column, or the server refuses the duplicate '?'), so
	// the read table takes the exact names from the server
	// (resolveMembers) and still shows no drift (a quote, a tab and a
	// backslash in the names too: the server's COLUMN_TYPE escapes some).
	members := map[string]string{"latin2": "'łódź','żółw'", "cp1251": "'да','нет'", "big5": "'漢字','中文'",
		"ujis": "'漢字','かな'", "utf16": "'€','𝄞'", "ucs2": "'ü','€'", "sjis": "'かな','ｶﾅ'",
		"utf8mb4": "'👍 it''s','o\tk\\\\b'", "utf32": "'x','😀'",
		// The binary set: members that differ only in case or a trailing
		// space are distinct, and the read column must keep the set.
		"binary": "'a','A','a ','😀'"}
	var enums []string
	for cs := range members {
		if maxlen[cs] > 0 || cs == "binary" {
			enums = append(enums, cs)
		}
	}
	slices.Sort(enums)
	for _, cs := range enums {
		defs = append(defs, fmt.Sprintf("e_%s ENUM(%s) CHARACTER SET %s, s_%s SET(%s) CHARACTER SET %s", cs, members[cs], cs, cs, members[cs], cs))
		cols = append(cols, "e_"+cs, "s_"+cs)
	}
	// Of the binary set with no member information_schema masks: its
	// type alone must carry the set.
	defs = append(defs, "e_plain_binary ENUM('a','A','b ') CHARACTER SET binary")
	cols = append(cols, "e_plain_binary")
	exec(fmt.Sprintf("CREATE TABLE t (id INT PRIMARY KEY, %s)", strings.Join(defs, ", ")))

	all := make([]byte, 256)
	for b := range all {
		all[b] = byte(b)
	}
	const sample = "Aü€漢字かなｶﾅ한국어汉字😀𝄞  "
	insert := func(id, variant int) {
		t.Helper()
		var vals []string
		for _, cs := range charsets {
			switch {
			case maxlen[cs] == 1 && variant == 1:
				vals = append(vals, fmt.Sprintf("x'%X'", all))
			case maxlen[cs] == 1:
				vals = append(vals, fmt.Sprintf("x'%X'", all[0x80:]))
			case variant == 1:
				vals = append(vals, fmt.Sprintf("CONCAT(CAST(CONVERT(_utf8mb4'%s' USING %s) AS BINARY), x'FF80A1D800DFFF')", sample, cs))
			default: // well-formed codes without a code point in several sets, before the sample
				vals = append(vals, fmt.Sprintf("CONCAT(x'A3E1C6A18FA1A1', CAST(CONVERT(_utf8mb4'%s' USING %s) AS BINARY))", sample, cs))
			}
		}
		for range enums {
			vals = append(vals, fmt.Sprint(variant), fmt.Sprint(variant+1))
		}
		vals = append(vals, fmt.Sprint(variant+1))
		exec(fmt.Sprintf("INSERT INTO t (id, %s) VALUES (%d, %s)", strings.Join(cols, ", "), id, strings.Join(vals, ", ")))
	}
	insert(1, 1)
	insert(2, 2)

	columns := map[string]string{"row_id": "id"}
	for _, c := range cols {
		columns[c] = c
	}
	sink := config.Sink{DSN: config.Secret(bed.MySQL.AdminDSN() + sinkName)}
	cfg := bed.Config("charsets", srcName+".t")
	cfg.Source.Snapshot.Mode = "initial"
	cfg.Sinks = map[string]config.Sink{"reads": sink}
	cfg.Projections = map[string]config.Projection{"charset_reads": {From: srcName + ".t", Sink: "reads", Key: []string{"row_id"}, Columns: columns}}
	p, ddl := compileOne(ctx, t, bed, cfg)
	sk := openSink(ctx, t, sink, ddl)
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := sk.Drifts(ctx, p, types); err != nil || len(ds) != 0 {
		t.Fatalf("the read table just created drifts from its plan: %+v (%v)", ds, err)
	}
	runTailer(t, bed, cfg)
	stop := startProjector(t, p, sk, cfg.Kafka.Brokers)
	defer stop()

	// Live: the same values again, and an update of a snapshotted row.
	insert(3, 1)
	insert(4, 2)
	var sets []string
	for _, c := range cols {
		sets = append(sets, fmt.Sprintf("a.%s = b.%s", c, c))
	}
	exec(fmt.Sprintf("UPDATE t a JOIN t b ON b.id = 2 SET %s WHERE a.id = 1", strings.Join(sets, ", ")))

	query := func(key, table string) string {
		out := []string{key + " AS row_id"}
		for _, c := range cols {
			out = append(out, fmt.Sprintf("HEX(CONVERT(%s USING utf8mb4)) AS %s", c, c))
		}
		return "SELECT " + strings.Join(out, ", ") + " FROM " + table + " ORDER BY row_id"
	}
	var want, got [][]string
	deadline := time.Now().Add(120 * time.Second)
	for {
		want, got = publishedRows(t, rowsOf(t, src, query("id", "t"))), rowsOf(t, sinkRead, query("row_id", "charset_reads"))
		if fmt.Sprint(want) == fmt.Sprint(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read table differs from the source after 120s:\n%s", matrixDiff(want, got))
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("%d rows of %d columns in %d character sets equal in the read table", len(want), len(cols), len(charsets))
}

// publishedRows rewrites each source value (name=HEX) as events carry it:
// bytes that are no UTF-8 become U+FFFD, one per byte.
func publishedRows(t *testing.T, rows [][]string) [][]string {
	for _, row := range rows {
		for i, cell := range row[1:] {
			name, h, _ := strings.Cut(cell, "=")
			b, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
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
			row[i+1] = name + "=" + strings.ToUpper(hex.EncodeToString(out))
		}
	}
	return rows
}
