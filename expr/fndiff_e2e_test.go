package expr_test

// A matrix form of the differential harness (differential_test.go), for
// the time and JSON functions' large generated inputs: every expression
// goes through Parse, Check against the table's columns, FromEvent of each
// value as the tailer publishes it and Eval, and all of them are compared
// with one SELECT on the server, byte for byte and NULL for NULL. A table
// of Check's types must hold the server's values unchanged, and each type
// must be the server's own (CREATE TABLE … AS SELECT) or wider.

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/expr"
)

// matrix is a table under test: its columns and its rows' values, read
// once, for any number of expression sets.
type matrix struct {
	conn   *sql.Conn
	db     string
	cols   []expr.Column
	events [][][]byte // per row (in id order), per column
}

// newMatrix creates table t with the columns and rows (SQL literals) in a
// session set up as verify's (session), and reads its rows as events.
func newMatrix(t *testing.T, cols []diffCol, rows [][]string) *matrix {
	t.Helper()
	conn, db := session(t)
	var ddl []string
	for _, c := range cols {
		ddl = append(ddl, quoteIdent(c.name)+" "+c.def)
	}
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, "+strings.Join(ddl, ", ")+")")
	for from := 0; from < len(rows); from += 500 {
		var values []string
		for i, r := range rows[from:min(from+500, len(rows))] {
			values = append(values, "("+strconv.Itoa(from+i)+", "+strings.Join(r, ", ")+")")
		}
		mustExec(t, conn, "INSERT INTO t VALUES "+strings.Join(values, ", "))
	}
	return (&matrix{conn: conn, db: db}).reread(t)
}

// reread reads table t's columns and rows again, after changes.
func (m *matrix) reread(t *testing.T) *matrix {
	t.Helper()
	m = &matrix{conn: m.conn, db: m.db, cols: readColumns(t, m.conn, m.db, "t")}
	names := make([]string, len(m.cols))
	for i, c := range m.cols {
		names[i] = quoteIdent(c.Name)
	}
	for _, r := range m.query(t, "SELECT "+strings.Join(names, ", ")+" FROM t ORDER BY id") {
		ev := make([][]byte, len(m.cols))
		for i, c := range m.cols {
			ev[i] = eventJSON(t, r[i], c.Def)
		}
		m.events = append(m.events, ev)
	}
	return m
}

// query runs q through the text protocol: each value is the server's own
// text, nil for NULL.
func (m *matrix) query(t *testing.T, q string) [][][]byte {
	t.Helper()
	rs, err := m.conn.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatalf("%.300s: %v", q, err)
	}
	defer rs.Close()
	names, _ := rs.Columns()
	var out [][][]byte
	for rs.Next() {
		raw := make([]sql.RawBytes, len(names))
		ptrs := make([]any, len(raw))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([][]byte, len(raw))
		for i, b := range raw {
			if b != nil {
				row[i] = append([]byte{}, b...)
			}
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (m *matrix) schema(name string) (expr.Column, bool) {
	for _, c := range m.cols {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return expr.Column{}, false
}

// compare evaluates every expression on every row in Go and on the
// server (through conn, or the matrix's own session when nil) and, with
// checkTypes, checks Check's types. It stops after 30 differences.
func (m *matrix) compare(t *testing.T, conn *sql.Conn, texts []string, checkTypes bool) {
	t.Helper()
	if conn == nil {
		conn = m.conn
	}
	exprs := make([]*expr.Expr, len(texts))
	types := make([]expr.Type, len(texts))
	sqls := make([]string, len(texts))
	for i, text := range texts {
		e, err := expr.Parse(text)
		if err == nil {
			types[i], err = e.Check(m.schema)
		}
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		exprs[i], sqls[i] = e, e.SQL(quoteIdent)
	}
	q := "SELECT " + strings.Join(sqls, ", ") + " FROM t ORDER BY id"
	server := (&matrix{conn: conn}).query(t, q)
	if len(server) != len(m.events) {
		t.Fatalf("the server gave %d rows, want %d", len(server), len(m.events))
	}
	bad := 0
	for r, ev := range m.events {
		for i, e := range exprs {
			row := make([]expr.Datum, len(e.Columns()))
			for j, name := range e.Columns() {
				for k, c := range m.cols {
					if strings.EqualFold(c.Name, name) {
						var err error
						if row[j], err = expr.FromEvent(ev[k], c.Def); err != nil {
							t.Fatalf("FromEvent(%s, %s): %v", ev[k], c.Def, err)
						}
					}
				}
			}
			got, err := e.Eval(row)
			want := server[r][i]
			switch {
			case err != nil:
				t.Errorf("%s on row %d %s: Go error %v, server %s", texts[i], r, showEvents(ev), err, showBytes(want))
			case got.IsNull() != (want == nil) || want != nil && got.Text() != string(want):
				t.Errorf("%s on row %d %s: Go %s, server %s", texts[i], r, showEvents(ev), show(got.IsNull(), got.Text()), showBytes(want))
			case got.IsNull() && !types[i].Nullable:
				t.Errorf("%s on row %d: NULL, but Check says NOT NULL", texts[i], r)
			default:
				continue
			}
			if bad++; bad == 30 {
				t.Fatal("too many differences")
			}
		}
	}
	if checkTypes && bad == 0 {
		m.checkTypes(t, texts, sqls, types, server)
	}
}

// checkTypes stores every expression's server value in a column of
// Check's type and reads it back unchanged, and compares each type with
// the one the server gives the expression.
func (m *matrix) checkTypes(t *testing.T, texts, sqls []string, types []expr.Type, server [][][]byte) {
	t.Helper()
	defs := make([]string, len(types))
	names := make([]string, len(types))
	as := make([]string, len(types))
	for i, typ := range types {
		names[i] = fmt.Sprintf("c%d", i)
		defs[i] = names[i] + " " + typ.Column + " NULL"
		as[i] = sqls[i] + " AS " + names[i]
	}
	mustExec(t, m.conn, "DROP TABLE IF EXISTS held, ctas")
	mustExec(t, m.conn, "CREATE TABLE held (id INT PRIMARY KEY, "+strings.Join(defs, ", ")+")")
	// Not strict: evaluating a string that is no date warns, and strict
	// mode would make that an error; what the columns keep is compared
	// below instead.
	mustExec(t, m.conn, "SET sql_mode = ''")
	mustExec(t, m.conn, "INSERT INTO held SELECT id, "+strings.Join(sqls, ", ")+" FROM t")
	mustExec(t, m.conn, "CREATE TABLE ctas AS SELECT "+strings.Join(as, ", ")+" FROM t")
	mustExec(t, m.conn, "SET sql_mode = 'STRICT_ALL_TABLES'")
	back := m.query(t, "SELECT "+strings.Join(names, ", ")+" FROM held ORDER BY id")
	for r := range back {
		for i := range types {
			if (back[r][i] == nil) != (server[r][i] == nil) || string(back[r][i]) != string(server[r][i]) {
				t.Fatalf("%s on row %d: a %s column holds %s, the expression gave %s", texts[i], r, types[i].Column, showBytes(back[r][i]), showBytes(server[r][i]))
			}
		}
	}
	for i, c := range readColumns(t, m.conn, m.db, "ctas") {
		switch typ := types[i]; {
		case strings.EqualFold(c.Def, typ.Column):
		case wider(typ.Column, c.Def) || widerText(typ.Column, c.Def):
			t.Logf("%s: Check's type %s is wider than the server's %s, which cannot hold some values", texts[i], typ.Column, c.Def)
		default:
			t.Errorf("%s: Check's type %s, the server's %s", texts[i], typ.Column, c.Def)
		}
	}
}

// widerText reports whether a is a TEXT type larger than b (a VARCHAR or
// a smaller TEXT type) of the same character set and collation.
func widerText(a, b string) bool {
	rank := func(s string) int {
		kind, _, _ := strings.Cut(s, " ")
		for i, k := range []string{"varchar", "text", "mediumtext", "longtext"} {
			if strings.HasPrefix(kind, k) {
				return i
			}
		}
		return -1
	}
	_, restA, _ := strings.Cut(a, " ")
	_, restB, _ := strings.Cut(b, " ")
	return restA == restB && rank(a) > rank(b) && rank(b) >= 0
}

func showEvents(ev [][]byte) string {
	parts := make([]string, len(ev))
	for i, v := range ev {
		parts[i] = string(v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func showBytes(b []byte) string {
	if b == nil {
		return "NULL"
	}
	return strconv.Quote(string(b))
}
