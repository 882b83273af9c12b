package expr_test

// The differential check of the string and number functions: a table of
// generated rows on the test bed's MariaDB; each case is one function call
// over its columns and literals, computed by the server (SELECT) and by
// the function's Eval in Go, compared byte for byte with NULL-ness; and
// the result type Go's Type gives compared with the column CREATE TABLE …
// AS SELECT makes (wider only where the server's column cuts values:
// FLOOR and CEIL of a DOUBLE, whose DOUBLE(17,0) cuts beyond 1e17, and a
// DOUBLE's text, 24 characters where the server says 22).

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/expr"
)

// fnArg is one argument of a call: a column of the table or a literal.
type fnArg struct {
	col string      // column name, or "" for a literal
	lit *expr.Datum // the literal's value
	sql string      // the literal as SQL
	typ expr.Type   // the literal's type, as the parser gives it
}

func col(name string) fnArg { return fnArg{col: name} }

// strLit is a string literal (utf8mb4_general_ci, the connection's).
func strLit(s string) fnArg {
	d := expr.Datum{Kind: expr.KindString, S: s, Coll: "utf8mb4_general_ci"}
	n := utf8Len(s)
	column := fmt.Sprintf("varchar(%d) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", n)
	if n == 0 {
		column = "char(0) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
	}
	return fnArg{lit: &d, sql: "'" + strings.ReplaceAll(s, "'", "''") + "'", typ: expr.Type{Kind: expr.KindString, Column: column, Coll: "utf8mb4_general_ci"}}
}

// intLit is an integer literal, typed as MariaDB types it.
func intLit(v int64) fnArg {
	d := expr.Datum{Kind: expr.KindInt, I: v}
	s := strconv.FormatInt(v, 10)
	name := "int"
	if len(s) > 10 {
		name = "bigint"
	}
	return fnArg{lit: &d, sql: s, typ: expr.Type{Kind: expr.KindInt, Column: fmt.Sprintf("%s(%d)", name, len(s))}}
}

func nullLit() fnArg {
	return fnArg{lit: &expr.Datum{}, sql: "NULL", typ: expr.Type{Kind: expr.KindNull, Column: "binary(0)", Nullable: true}}
}

func utf8Len(s string) int { return len([]rune(s)) }

// fnCase is one call to check.
type fnCase struct {
	fn   string
	args []fnArg
}

func (c fnCase) sql() string {
	var parts []string
	for _, a := range c.args {
		if a.col != "" {
			parts = append(parts, "`"+a.col+"`")
		} else {
			parts = append(parts, a.sql)
		}
	}
	return c.fn + "(" + strings.Join(parts, ", ") + ")"
}

// fnTable is the generated source table: its columns' types and its rows
// as Go reads them (what the projector would have from events).
type fnTable struct {
	cols  map[string]int
	types []expr.Type
	rows  [][]expr.Datum
}

// loadTable reads the table's column definitions and rows back from the
// server as Datums (strings as UTF-8 with their collation, decimals and
// temporal values as their exact text).
func loadTable(t *testing.T, conn *sql.Conn, table string) *fnTable {
	t.Helper()
	ctx := t.Context()
	rows, err := conn.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''),
		COALESCE(NUMERIC_SCALE, DATETIME_PRECISION, 0), IS_NULLABLE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		t.Fatal(err)
	}
	ft := &fnTable{cols: map[string]int{}}
	var sel []string
	for rows.Next() {
		var name, dt, ct, cs, coll, null string
		var frac int
		if err := rows.Scan(&name, &dt, &ct, &cs, &coll, &frac, &null); err != nil {
			t.Fatal(err)
		}
		typ := expr.Type{Column: ct, Nullable: null == "YES", Frac: uint8(frac)}
		q := "`" + name + "`"
		switch {
		case cs != "" && cs != "binary":
			typ.Kind, typ.Coll = expr.KindString, coll
			typ.Column += " CHARACTER SET " + cs + " COLLATE " + coll
			q = "CONVERT(" + q + " USING utf8mb4)"
		case strings.Contains(dt, "binary") || strings.Contains(dt, "blob"):
			typ.Kind = expr.KindBytes
		case strings.HasSuffix(dt, "int") || dt == "year":
			typ.Kind = expr.KindInt
			if strings.Contains(ct, "unsigned") || dt == "year" {
				typ.Kind = expr.KindUint
			}
		case dt == "decimal":
			typ.Kind = expr.KindDecimal
		case dt == "double" || dt == "float":
			typ.Kind = expr.KindDouble
		case dt == "date":
			typ.Kind = expr.KindDate
			q = "CAST(" + q + " AS CHAR)"
		case dt == "datetime" || dt == "timestamp":
			typ.Kind = expr.KindDatetime
			q = "CAST(" + q + " AS CHAR)"
		case dt == "time":
			typ.Kind = expr.KindTime
			q = "CAST(" + q + " AS CHAR)"
		default:
			t.Fatalf("column %s: type %s not handled by the test", name, dt)
		}
		ft.cols[name] = len(ft.types)
		ft.types = append(ft.types, typ)
		sel = append(sel, q)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	data, err := conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	for data.Next() {
		raw := make([]sql.RawBytes, len(sel))
		ptrs := make([]any, len(raw))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := data.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]expr.Datum, len(raw))
		for i, b := range raw {
			row[i] = datumOf(t, b, ft.types[i])
		}
		ft.rows = append(ft.rows, row)
	}
	if err := data.Err(); err != nil {
		t.Fatal(err)
	}
	return ft
}

func datumOf(t *testing.T, b []byte, typ expr.Type) expr.Datum {
	t.Helper()
	if b == nil {
		return expr.Null
	}
	s := string(b)
	d := expr.Datum{Kind: typ.Kind, S: s, Frac: typ.Frac, Coll: typ.Coll}
	var err error
	switch typ.Kind {
	case expr.KindInt:
		d.S = ""
		d.I, err = strconv.ParseInt(s, 10, 64)
	case expr.KindUint:
		d.S = ""
		d.U, err = strconv.ParseUint(s, 10, 64)
		if strings.HasPrefix(typ.Column, "year") {
			d.S = fmt.Sprintf("%04d", d.U) // as FromEvent gives a YEAR
		}
	case expr.KindDouble:
		d.S = ""
		if strings.HasPrefix(typ.Column, "float") {
			// A FLOAT is widened to a double from its float32 value.
			var f float64
			f, err = strconv.ParseFloat(s, 32)
			d.F = float64(float32(f))
		} else {
			d.F, err = strconv.ParseFloat(s, 64)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkCases runs every case on the server and in Go and compares values
// and result types, a batch of cases per statement (one CREATE TABLE …
// AS SELECT and one SELECT each) to keep the test fast on a loaded box.
func checkCases(t *testing.T, conn *sql.Conn, ft *fnTable, table string, cases []fnCase) {
	t.Helper()
	type prepared struct {
		c     fnCase
		f     *expr.Func
		types []expr.Type
		typ   expr.Type
	}
	var ready []prepared
	for _, c := range cases {
		f, ok := expr.LookupFunc(c.fn)
		if !ok {
			t.Fatalf("%s is not registered", c.fn)
		}
		types := make([]expr.Type, len(c.args))
		consts := make([]*expr.Datum, len(c.args))
		for i, a := range c.args {
			if a.col != "" {
				types[i] = ft.types[ft.cols[a.col]]
			} else {
				types[i], consts[i] = a.typ, a.lit
			}
		}
		typ, err := f.Type(types, consts)
		if err != nil {
			t.Errorf("%s: Type: %v", c.sql(), err)
			continue
		}
		ready = append(ready, prepared{c, f, types, typ})
	}
	const batch = 25
	for len(ready) > 0 {
		n := min(batch, len(ready))
		part := ready[:n]
		ready = ready[n:]
		var sel []string
		for i, p := range part {
			sel = append(sel, fmt.Sprintf("%s AS v%d", p.c.sql(), i))
		}
		// The result types against CREATE TABLE … AS SELECT.
		mustExec(t, conn, "CREATE TABLE ty ENGINE=Aria AS SELECT "+strings.Join(sel, ", ")+" FROM "+table+" LIMIT 0")
		server := serverColumns(t, conn, "ty")
		mustExec(t, conn, "DROP TABLE ty")
		for i, p := range part {
			sc := server[i]
			switch {
			case p.typ.Column == sc.def:
			case p.typ.Column == "double" && sc.def == "double(17,0)" && p.c.fn != "ABS",
				wider(p.typ.Column, sc.def) && hasDouble(p.types):
				t.Logf("%s: type %q is wider than the server's %q, which cuts some values", p.c.sql(), p.typ.Column, sc.def)
			default:
				t.Errorf("%s: type %q, the server's %q", p.c.sql(), p.typ.Column, sc.def)
			}
			if p.typ.Nullable != sc.nullable {
				t.Errorf("%s: nullable %v, the server's %v", p.c.sql(), p.typ.Nullable, sc.nullable)
			}
		}
		// The values, row by row.
		rows, err := conn.QueryContext(t.Context(), "SELECT "+strings.Join(sel, ", ")+" FROM "+table+" ORDER BY id")
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(sel, ", "), err)
		}
		bad := make([]int, n)
		got := make([]sql.RawBytes, n)
		ptrs := make([]any, n)
		for i := range got {
			ptrs[i] = &got[i]
		}
		for r := 0; rows.Next(); r++ {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for k, p := range part {
				args := make([]expr.Datum, len(p.c.args))
				for i, a := range p.c.args {
					if a.col != "" {
						args[i] = ft.rows[r][ft.cols[a.col]]
					} else {
						args[i] = *a.lit
					}
				}
				d, err := p.f.Eval(args, p.types)
				want, gotText := "NULL", "NULL"
				if got[k] != nil {
					want = string(got[k])
				}
				if err != nil {
					gotText = "error: " + err.Error()
				} else if !d.IsNull() {
					gotText = goText(d)
				}
				if gotText != want && !(d.Kind == expr.KindDouble && sameDouble(d.F, want)) {
					if bad[k]++; bad[k] <= 5 {
						t.Errorf("%s, row %d %s: Go %q, server %q", p.c.sql(), r+1, describeArgs(args), gotText, want)
					}
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
}

func hasDouble(types []expr.Type) bool {
	for _, t := range types {
		if t.Kind == expr.KindDouble {
			return true
		}
	}
	return false
}

type serverColumn struct {
	def      string // COLUMN_TYPE, with CHARACTER SET and COLLATE for a character column
	nullable bool
}

// serverColumns are a table's columns as information_schema gives them.
func serverColumns(t *testing.T, conn *sql.Conn, table string) []serverColumn {
	t.Helper()
	rows, err := conn.QueryContext(t.Context(), `SELECT COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), IS_NULLABLE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []serverColumn
	for rows.Next() {
		var ct, cs, coll, null string
		if err := rows.Scan(&ct, &cs, &coll, &null); err != nil {
			t.Fatal(err)
		}
		if cs != "" {
			ct += " CHARACTER SET " + cs + " COLLATE " + coll
		}
		out = append(out, serverColumn{ct, null == "YES"})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func describeArgs(args []expr.Datum) string {
	var parts []string
	for _, a := range args {
		if a.IsNull() {
			parts = append(parts, "NULL")
		} else {
			parts = append(parts, strconv.Quote(goText(a)))
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// goText is a value as the server sends it to a utf8mb4 client.
func goText(d expr.Datum) string {
	switch d.Kind {
	case expr.KindInt:
		return strconv.FormatInt(d.I, 10)
	case expr.KindUint:
		return strconv.FormatUint(d.U, 10)
	case expr.KindDouble:
		return strconv.FormatFloat(d.F, 'g', -1, 64)
	}
	return d.S
}

func sameDouble(f float64, server string) bool {
	v, err := strconv.ParseFloat(server, 64)
	return err == nil && math.Float64bits(v) == math.Float64bits(f)
}

// seededRand is a generator whose seed the log shows; FNCHECK_SEED
// replays one.
func seededRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FNCHECK_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (FNCHECK_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}
