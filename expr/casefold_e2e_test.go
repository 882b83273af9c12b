package expr_test

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"fmt"
	"go/format"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/readside/readside/expr"
)

// caseCharsets are the charsets whose case tables casefold_table.go holds,
// with the characters each has (its whole repertoire, in code point order).
var caseCharsets = []struct {
	name  string
	chars func() string
}{
	{"utf8mb4", func() string { return codePoints(0x10FFFF) }},
	{"utf8mb3", func() string { return codePoints(0xFFFF) }},
	{"latin1", latin1Chars},
	{"ascii", func() string { return codePoints(0x7F) }},
}

func codePoints(max rune) string {
	var b strings.Builder
	for r := rune(0); r <= max; r++ {
		if r < 0xD800 || r > 0xDFFF {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// latin1Chars are latin1's 256 characters, in byte order, as the server
// converts them to UTF-8.
func latin1Chars() string {
	var b strings.Builder
	for i := 0; i < 256; i++ {
		b.WriteString(expr.Latin1Char(byte(i)))
	}
	return b.String()
}

// TestCaseTables derives LOWER's and UPPER's mapping and length factors of
// every collation of every charset the string functions take from the
// server, and checks casefold_table.go equals them. With
// GENERATE=1 it rewrites casefold_table.go from the server.
func TestCaseTables(t *testing.T) {
	ctx := t.Context()
	conn := dbConn(t, "casefold")
	update := os.Getenv("GENERATE") == "1"

	gen := map[string]caseDerived{}
	muls := map[string][2]int64{}
	var colls []string
	for _, cs := range caseCharsets {
		chars := cs.chars()
		tbl := "all_" + cs.name
		mustExec(t, conn, fmt.Sprintf("CREATE TABLE %s (x LONGTEXT CHARACTER SET %s COLLATE %s_bin)", tbl, cs.name, cs.name))
		execArgs(t, conn, fmt.Sprintf("INSERT INTO %s VALUES (CONVERT(? USING %s))", tbl, cs.name), chars)
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT CHAR_LENGTH(x) FROM "+tbl).Scan(&n); err != nil || n != utf8.RuneCountInString(chars) {
			t.Fatalf("%s: the repertoire went in as %d characters (%v), sent %d", cs.name, n, err, utf8.RuneCountInString(chars))
		}
		names := collationsOf(t, conn, cs.name)
		colls = append(colls, names...)
		if update {
			for _, c := range names {
				var lo, up string
				q := fmt.Sprintf("SELECT CONVERT(LOWER(x COLLATE %s) USING utf8mb4), CONVERT(UPPER(x COLLATE %s) USING utf8mb4) FROM %s", c, c, tbl)
				if err := conn.QueryRowContext(ctx, q).Scan(&lo, &up); err != nil {
					t.Fatal(err)
				}
				if utf8.RuneCountInString(lo) != utf8.RuneCountInString(chars) || utf8.RuneCountInString(up) != utf8.RuneCountInString(chars) {
					t.Fatalf("%s maps case to a different number of characters: not one character at a time", c)
				}
				gen[c] = caseDerived{pairsOf(chars, lo), pairsOf(chars, up)}
			}
		} else {
			checkCaseTables(t, conn, tbl, cs.name, chars, names)
		}
		for c, m := range caseMuls(t, conn, cs.name, names) {
			muls[c] = m
			if update {
				continue
			}
			lo, up, _ := expr.CaseMul(c)
			if lo != m[0] || up != m[1] {
				t.Errorf("%s: length factors LOWER %d UPPER %d on the server, %d %d in casefold_table.go", c, m[0], m[1], lo, up)
			}
		}
	}
	if update {
		writeCaseTables(t, colls, gen, muls)
		return
	}
	if known := expr.CaseCollations(); len(known) != len(colls) {
		t.Errorf("casefold_table.go knows %d collations, the server has %d: run this test with GENERATE=1", len(known), len(colls))
	}
}

// checkCaseTables compares the server's LOWER and UPPER of every collation
// in names with Go's. Mapping the whole repertoire takes the server a few
// hundredths of a second per collation, so only the first collation of
// each group sharing a Go table maps it all; the others map the characters
// any table maps (the only ones a grouping mistake could show in).
func checkCaseTables(t *testing.T, conn *sql.Conn, tbl, cs, chars string, names []string) {
	t.Helper()
	var union strings.Builder
	seen := map[rune]bool{}
	for _, m := range expr.CaseTables {
		for from, to := range m {
			for _, r := range []rune{from, to} {
				if !seen[r] && strings.ContainsRune(chars, r) {
					seen[r] = true
					union.WriteRune(r)
				}
			}
		}
	}
	mustExec(t, conn, fmt.Sprintf("CREATE TABLE u_%s (x LONGTEXT CHARACTER SET %s COLLATE %s_bin)", cs, cs, cs))
	execArgs(t, conn, fmt.Sprintf("INSERT INTO u_%s VALUES (CONVERT(? USING %s))", cs, cs), union.String())
	probes := map[bool]string{true: chars, false: union.String()}
	full := map[[2]int]bool{}
	type job struct {
		coll  string
		upper bool
		table int
		whole bool
	}
	var jobs []job
	var sel []string
	for _, c := range names {
		lo, up, ok := expr.CaseTablesOf(c)
		if !ok {
			t.Errorf("the server has collation %s, casefold_table.go does not: run this test with GENERATE=1", c)
			continue
		}
		whole := !full[[2]int{lo, up}]
		full[[2]int{lo, up}] = true
		col := map[bool]string{true: "a.x", false: "u.x"}[whole]
		for _, upper := range []bool{false, true} {
			fn, table := "LOWER", lo
			if upper {
				fn, table = "UPPER", up
			}
			jobs = append(jobs, job{c, upper, table, whole})
			sel = append(sel, fmt.Sprintf("MD5(CONVERT(%s(%s COLLATE %s) USING utf8mb4))", fn, col, c))
		}
	}
	if len(sel) == 0 {
		return
	}
	sums := make([]string, len(sel))
	ptrs := make([]any, len(sums))
	for i := range sums {
		ptrs[i] = &sums[i]
	}
	q := fmt.Sprintf("SELECT %s FROM %s a, u_%s u", strings.Join(sel, ", "), tbl, cs)
	if err := conn.QueryRowContext(t.Context(), q).Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	goSums := map[[2]any]string{}
	for i, j := range jobs {
		k := [2]any{j.table, j.whole}
		if _, ok := goSums[k]; !ok {
			sum := md5.Sum([]byte(expr.MapWith(probes[j.whole], expr.CaseTables[j.table])))
			goSums[k] = hex.EncodeToString(sum[:])
		}
		if goSums[k] != sums[i] {
			t.Errorf("%s: Go's %s differs from the server's for some character of %s: run this test with GENERATE=1", j.coll, map[bool]string{false: "LOWER", true: "UPPER"}[j.upper], cs)
		}
	}
}

// caseDerived is one collation's LOWER and UPPER pairs (pairsOf).
type caseDerived struct{ lower, upper string }

// pairsOf is the mapping from chars to mapped as "from to from to …",
// only the characters that change.
func pairsOf(chars, mapped string) string {
	var b strings.Builder
	m := []rune(mapped)
	for i, r := range []rune(chars) {
		if m[i] != r {
			b.WriteRune(r)
			b.WriteRune(m[i])
		}
	}
	return b.String()
}

// caseMuls derives each collation's LOWER and UPPER length factors from
// the columns CREATE TABLE … AS SELECT makes of a VARCHAR(1).
func caseMuls(t *testing.T, conn *sql.Conn, cs string, colls []string) map[string][2]int64 {
	t.Helper()
	src, dst := "mul_"+cs, "mul2_"+cs
	mustExec(t, conn, fmt.Sprintf("CREATE TABLE %s (c VARCHAR(1) CHARACTER SET %s)", src, cs))
	var sel []string
	for i, c := range colls {
		sel = append(sel, fmt.Sprintf("LOWER(c COLLATE %s) AS l%d, UPPER(c COLLATE %s) AS u%d", c, i, c, i))
	}
	mustExec(t, conn, fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM %s", dst, strings.Join(sel, ", "), src))
	rows, err := conn.QueryContext(t.Context(), "SELECT COLUMN_NAME, CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		i, _ := strconv.Atoi(name[1:])
		m := out[colls[i]]
		m[map[bool]int{true: 0, false: 1}[name[0] == 'l']] = n
		out[colls[i]] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func collationsOf(t *testing.T, conn *sql.Conn, cs string) []string {
	t.Helper()
	rows, err := conn.QueryContext(t.Context(), "SELECT FULL_COLLATION_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE CHARACTER_SET_NAME = ? ORDER BY ID", cs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeCaseTables renders casefold_table.go: the distinct tables, and per
// collation the indexes of its LOWER and UPPER tables and length factors.
func writeCaseTables(t *testing.T, colls []string, gen map[string]caseDerived, muls map[string][2]int64) {
	t.Helper()
	index := map[string]int{}
	var tables []string
	idx := func(pairs string) int {
		if i, ok := index[pairs]; ok {
			return i
		}
		index[pairs] = len(tables)
		tables = append(tables, pairs)
		return len(tables) - 1
	}
	var b strings.Builder
	b.WriteString("// Code generated by TestCaseTables (GENERATE=1 E2E=1 go test -run TestCaseTables ./expr/) from MariaDB 10.11; DO NOT EDIT.\n\npackage expr\n\n")
	b.WriteString("// collationCase is each collation's case mapping.\nvar collationCase = map[string]caseInfo{\n")
	sorted := append([]string(nil), colls...)
	sort.Strings(sorted)
	for _, c := range sorted {
		g := gen[c]
		fmt.Fprintf(&b, "\t%q: {lower: %d, upper: %d, lowerMul: %d, upperMul: %d},\n", c, idx(g.lower), idx(g.upper), muls[c][0], muls[c][1])
	}
	b.WriteString("}\n\n// caseTables are the distinct mappings, each the pairs \"from to\" of the\n// characters that change.\nvar caseTables = []string{\n")
	for _, p := range tables {
		fmt.Fprintf(&b, "\t%s,\n", strconv.QuoteToASCII(p))
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("casefold_table.go", src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote casefold_table.go: %d collations, %d tables", len(colls), len(tables))
}

// dbConn is one admin connection using a new database of its own.
func dbConn(t *testing.T, prefix string) *sql.Conn {
	t.Helper()
	if server == nil {
		t.Skip("e2e: needs MariaDB; run `make e2e` (or set E2E=1)")
	}
	m := server
	ctx := t.Context()
	db, err := m.CreateDatabase(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := m.DB().Conn(context.WithoutCancel(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.ExecContext(context.Background(), "DROP DATABASE `"+db+"`")
		_ = conn.Close()
	})
	mustExec(t, conn, "USE `"+db+"`")
	mustExec(t, conn, "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci, time_zone = '+00:00'")
	return conn
}

// execArgs runs a statement with parameters.
func execArgs(t *testing.T, conn *sql.Conn, q string, args ...any) {
	t.Helper()
	if _, err := conn.ExecContext(t.Context(), q, args...); err != nil {
		if len(q) > 200 {
			q = q[:200] + "…"
		}
		t.Fatalf("%s: %v", q, err)
	}
}
