package expr_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDifferentialRandom: seeded random rows (EXPR_SEED overrides; the
// seed is logged) of integers and decimals of several scales, with NULLs
// and extremes mixed in, through arithmetic, division scales, DIV, MOD,
// CAST and comparisons: the exact and the int64 decimal paths alike.
func TestDifferentialRandom(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("EXPR_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("EXPR_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	dec := func(ip, fp int) string {
		s := strings.TrimLeft(digits(1+r.IntN(ip)), "0")
		if s == "" {
			s = "0"
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		if fp > 0 {
			s += "." + digits(fp)
		}
		return s
	}
	tbl := diffTable{cols: []diffCol{{"i", "INT"}, {"bi", "BIGINT"}, {"u", "INT UNSIGNED"}, {"d", "DECIMAL(18,6)"},
		{"d2", "DECIMAL(30,10)"}, {"d3", "DECIMAL(5,0)"}, {"s", "VARCHAR(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}}}
	words := []string{"'abc'", "'ABC'", "'Abc '", "'b'", "''", "'é'", "'E'", "'10'", "'9.5'"}
	for range 60 {
		row := []string{dec(9, 0), dec(18, 0), strings.TrimPrefix(dec(9, 0), "-"), dec(12, 6), dec(20, 10), dec(5, 0), words[r.IntN(len(words))]}
		for j := range row {
			if r.IntN(12) == 0 {
				row[j] = "NULL"
			}
		}
		tbl.rows = append(tbl.rows, row)
	}
	tbl.rows = append(tbl.rows,
		[]string{"0", "0", "0", "0", "0", "0", "'0'"},
		[]string{"2147483647", "9223372036854775807", "4294967295", "999999999999.999999", "99999999999999999999.9999999999", "99999", "'zzzzzzzz'"},
		[]string{"-2147483648", "-9223372036854775808", "0", "-999999999999.999999", "-99999999999999999999.9999999999", "-99999", "'        '"},
		[]string{"1", "-1", "1", "0.000001", "0.0000000001", "1", "'1'"})
	differential(t, tbl, []string{
		"i + d", "i - d2", "i * d", "d / i", "d2 / d", "d * d2", "d / d3", "d3 / 7", "i / 7", "bi / 3", "u / 11",
		"i DIV d3", "d DIV i", "d2 DIV d", "d % i", "d2 % d", "MOD(bi, d3)", "u % 7", "(d + d2) / 3", "d * 1.5 - i",
		"d / 3 * 3", "d / 7 = d / 7", "i / 3 = 0.3333", "d / i > 0.5", "d2 / d3 < d", "d IN (d2 / 1, 0)",
		"CAST(d AS DECIMAL(10,2))", "CAST(d2 AS SIGNED)", "CAST(d / 7 AS DECIMAL(20,12))", "CAST(d AS UNSIGNED)",
		"CASE WHEN d > 0 THEN d ELSE i END", "IF(d3 > 0, d2, bi)", "COALESCE(d, d2, i)", "bi + i", "bi * 3", "bi - u",
		"u - i", "s = 'abc'", "s < 'b'", "s + d", "s = d3", "i = s", "-d2", "d2 * d2", "d2 * d * d3",
	})
}
