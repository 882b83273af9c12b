package expr_test

// The differential harness: the same expression evaluated by Go (Eval
// over FromEvent of each value as the tailer publishes it) and by the
// test bed's MariaDB (SELECT), compared byte for byte and NULL for NULL
// on every row of a generated table; and Check's column type shown to
// hold the server's value unchanged. The sessions run as verify's and the
// rebuild's do: time_zone '+00:00', utf8mb4 with utf8mb4_general_ci.

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/expr"
)

type diffCol struct{ name, def string }

// diffTable is a source table: columns and rows of SQL literals.
type diffTable struct {
	cols []diffCol
	rows [][]string
}

// session is one connection set up as verify's sessions are.
func session(t *testing.T) (*sql.Conn, string) {
	t.Helper()
	if server == nil {
		t.Skip("e2e: needs MariaDB; run `make e2e` (or set E2E=1)")
	}
	ctx := t.Context()
	db, err := server.CreateDatabase(ctx, "expr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Exec(context.Background(), "DROP DATABASE `"+db+"`") })
	conn, err := server.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for _, s := range []string{"USE `" + db + "`", "SET time_zone = '+00:00'", "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci",
		"SET sql_mode = 'STRICT_ALL_TABLES'", "SET div_precision_increment = 4"} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return conn, db
}

type serverValue struct {
	null bool
	text string
	err  string
}

// differential runs every expression over the table on both sides.
func differential(t *testing.T, tbl diffTable, exprs []string) {
	t.Helper()
	differentialParsed(t, tbl, exprs, expr.Parse)
}

// differentialParsed is differential with the texts read by parse
// (expr.ParseCondition for where filters).
func differentialParsed(t *testing.T, tbl diffTable, exprs []string, parse func(string) (*expr.Expr, error)) {
	t.Helper()
	conn, db := session(t)
	var ddl []string
	for _, c := range tbl.cols {
		ddl = append(ddl, "`"+c.name+"` "+c.def)
	}
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, "+strings.Join(ddl, ", ")+")")
	for i, r := range tbl.rows {
		mustExec(t, conn, fmt.Sprintf("INSERT INTO t VALUES (%d, %s)", i, strings.Join(r, ", ")))
	}
	cols := readColumns(t, conn, db, "t")
	schema := func(name string) (expr.Column, bool) {
		for _, c := range cols {
			if strings.EqualFold(c.Name, name) {
				return c, true
			}
		}
		return expr.Column{}, false
	}
	events := readEvents(t, conn, cols, len(tbl.rows))

	for _, text := range exprs {
		e, err := parse(text)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		typ, err := e.Check(schema)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		want := serverValues(t, conn, "SELECT "+e.SQL(quoteIdent)+" FROM t WHERE id = ?", len(tbl.rows))
		ok := make([]string, 0, len(tbl.rows))
		for i := range tbl.rows {
			row := make([]expr.Datum, len(e.Columns()))
			for j, name := range e.Columns() {
				for k, c := range cols {
					if strings.EqualFold(c.Name, name) {
						if row[j], err = expr.FromEvent(events[i][k], c.Def); err != nil {
							t.Fatalf("FromEvent(%s, %s): %v", events[i][k], c.Def, err)
						}
					}
				}
			}
			got, err := e.Eval(row)
			w := want[i]
			switch {
			case err != nil || w.err != "":
				if err == nil || w.err == "" {
					t.Errorf("%s on row %d %v: Go error %v, server error %q", text, i, tbl.rows[i], err, w.err)
				}
				continue
			case got.IsNull() != w.null || got.Text() != w.text:
				t.Errorf("%s on row %d %v: Go %s, server %s", text, i, tbl.rows[i], show(got.IsNull(), got.Text()), show(w.null, w.text))
				continue
			}
			if !typ.Nullable && got.IsNull() {
				t.Errorf("%s on row %d: NULL, but Check says the type is NOT NULL", text, i)
			}
			ok = append(ok, strconv.Itoa(i))
		}
		if len(ok) > 0 {
			checkStored(t, conn, db, e, typ, ok, want)
		}
	}
}

// checkStored shows that a read column of Check's type holds the
// server's values unchanged (strict mode: a value it cannot hold fails).
func checkStored(t *testing.T, conn *sql.Conn, db string, e *expr.Expr, typ expr.Type, ids []string, want []serverValue) {
	t.Helper()
	ctx := t.Context()
	mustExec(t, conn, "DROP TABLE IF EXISTS t2")
	null := "NOT NULL"
	if typ.Nullable {
		null = "NULL"
	}
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t2 (id INT PRIMARY KEY, v "+typ.Column+" "+null+")"); err != nil {
		t.Errorf("%s: CREATE TABLE with Check's type %q: %v", e, typ.Column, err)
		return
	}
	// Not strict: a string read as a number warns, and strict mode would
	// make that an error; what the column keeps is compared below instead.
	mustExec(t, conn, "SET sql_mode = ''")
	defer mustExec(t, conn, "SET sql_mode = 'STRICT_ALL_TABLES'")
	if _, err := conn.ExecContext(ctx, "INSERT INTO t2 SELECT id, "+e.SQL(quoteIdent)+" FROM t WHERE id IN ("+strings.Join(ids, ",")+")"); err != nil {
		t.Errorf("%s: storing into Check's type %s %s: %v", e, typ.Column, null, err)
		return
	}
	stored := serverValues(t, conn, "SELECT v FROM t2 WHERE id = ?", len(want))
	mustExec(t, conn, "DROP TABLE IF EXISTS t3")
	mustExec(t, conn, "CREATE TABLE t3 AS SELECT "+e.SQL(quoteIdent)+" AS v FROM t WHERE id IN ("+strings.Join(ids, ",")+")")
	if ctas := readColumns(t, conn, db, "t3"); len(ctas) == 1 && (!strings.EqualFold(ctas[0].Def, typ.Column) || ctas[0].Nullable != typ.Nullable) {
		if wider(typ.Column, ctas[0].Def) && ctas[0].Nullable == typ.Nullable {
			t.Logf("%s: Check's type %s is wider than the server's %s, which cuts some values", e, typ.Column, ctas[0].Def)
			return
		}
		t.Errorf("%s: Check's type %s (nullable %v), the server's %s (nullable %v)", e, typ.Column, typ.Nullable, ctas[0].Def, ctas[0].Nullable)
	}
	for _, id := range ids {
		i, _ := strconv.Atoi(id)
		if digits := strings.Count(want[i].text, "") - 1 - strings.Count(want[i].text, "-") - strings.Count(want[i].text, "."); typ.Kind == expr.KindDecimal && digits > 65 {
			continue // beyond DECIMAL(65): no column can hold it, the server's own included
		}
		if stored[i] != want[i] {
			t.Errorf("%s on row %d: a %s column stores %s, the expression is %s", e, i, typ.Column, show(stored[i].null, stored[i].text), show(want[i].null, want[i].text))
		}
	}
}

func show(null bool, text string) string {
	if null {
		return "NULL"
	}
	return strconv.Quote(text)
}

func quoteIdent(n string) string { return "`" + strings.ReplaceAll(n, "`", "``") + "`" }

func mustExec(t *testing.T, conn *sql.Conn, q string) {
	t.Helper()
	if _, err := conn.ExecContext(t.Context(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// serverValues runs q (one ? for the row id) for ids 0…n-1, through the
// text protocol so the values are the server's own text.
func serverValues(t *testing.T, conn *sql.Conn, q string, n int) []serverValue {
	t.Helper()
	out := make([]serverValue, n)
	for i := range n {
		query := strings.Replace(q, "?", strconv.Itoa(i), 1)
		var v sql.RawBytes
		rows, err := conn.QueryContext(t.Context(), query)
		if err == nil {
			if rows.Next() {
				err = rows.Scan(&v)
				out[i] = serverValue{null: v == nil, text: string(v)}
			}
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = rows.Err()
			}
		}
		if err != nil {
			out[i] = serverValue{err: err.Error()}
		}
	}
	return out
}

// readColumns gives the table's columns as projections/schema.go reads
// them: COLUMN_TYPE with the charset and collation of a character column.
func readColumns(t *testing.T, conn *sql.Conn, db, table string) []expr.Column {
	t.Helper()
	rows, err := conn.QueryContext(t.Context(), `SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), IS_NULLABLE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME <> 'id' ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []expr.Column
	for rows.Next() {
		var name, def, cs, coll, nullable string
		if err := rows.Scan(&name, &def, &cs, &coll, &nullable); err != nil {
			t.Fatal(err)
		}
		if cs != "" && !strings.EqualFold(def, "json") {
			def += " CHARACTER SET " + cs + " COLLATE " + coll
		}
		out = append(out, expr.Column{Name: name, Def: def, Nullable: nullable == "YES"})
	}
	return out
}

// readEvents gives each row's values as the tailer publishes them
// (docs/events.md "Values"), built from the server's text.
func readEvents(t *testing.T, conn *sql.Conn, cols []expr.Column, n int) [][][]byte {
	t.Helper()
	var sel []string
	for _, c := range cols {
		q := quoteIdent(c.Name)
		if d := strings.ToLower(c.Def); strings.HasPrefix(d, "bit") || strings.HasPrefix(d, "float") {
			q += "+0" // BIT as its number; FLOAT widened exactly (its own text has 6 digits)
		}
		sel = append(sel, q)
	}
	out := make([][][]byte, n)
	for i := range n {
		rows, err := conn.QueryContext(t.Context(), "SELECT "+strings.Join(sel, ", ")+" FROM t WHERE id = "+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for j := range vals {
			ptrs[j] = &vals[j]
		}
		if !rows.Next() {
			t.Fatalf("row %d missing", i)
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out[i] = make([][]byte, len(cols))
		for j, c := range cols {
			out[i][j] = eventJSON(t, vals[j], c.Def)
		}
		rows.Close()
	}
	return out
}

func eventJSON(t *testing.T, v []byte, def string) []byte {
	if v == nil {
		return []byte("null")
	}
	d := strings.ToLower(def)
	base, _, _ := strings.Cut(d, "(")
	base, _, _ = strings.Cut(base, " ")
	switch base {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year", "bit":
		return append([]byte(nil), v...)
	case "float", "double":
		bits := 64
		if base == "float" {
			bits = 32
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			t.Fatalf("%s value %s: %v", def, v, err)
		}
		if bits == 32 {
			return strconv.AppendFloat(nil, float64(float32(f)), 'g', -1, 32)
		}
		return strconv.AppendFloat(nil, f, 'g', -1, 64)
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		b, _ := json.Marshal(base64.StdEncoding.EncodeToString(v))
		return b
	}
	b, _ := json.Marshal(string(v))
	return b
}

// wider reports whether a is the varchar or varbinary b with room for
// more (the type MySQL gives a double as text, or BINARY(n) of a
// multi-byte string, cuts the longest values).
func wider(a, b string) bool {
	var na, nb int
	kind, _, _ := strings.Cut(a, "(")
	if kind != "varchar" && kind != "varbinary" {
		return false
	}
	_, errA := fmt.Sscanf(a, kind+"(%d)", &na)
	_, errB := fmt.Sscanf(b, kind+"(%d)", &nb)
	_, restA, _ := strings.Cut(a, ")")
	_, restB, _ := strings.Cut(b, ")")
	return errA == nil && errB == nil && na > nb && restA == restB
}
