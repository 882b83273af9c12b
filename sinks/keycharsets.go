package sinks

// Key matches over text in another character set. MariaDB compares a
// column list against a list of two or more rows — (a, b) IN ((?, ?),
// (?, ?)) — without converting the rows' utf8mb4 literals to the columns'
// character sets: a latin1 column holding 'ü' matches no row of the list,
// a utf16 column none at all (MariaDB 10.11; one row, a one-column IN list
// and = are converted). A batch's key match then silently finds nothing:
// a count(distinct) over a utf16 group stayed 0, a group's rows were not
// moved. So keyIn binds the parameter of such a column as
// CONVERT(? USING <its charset>), which MariaDB compares as it should
// (and looks up row by row). Which columns those are is read from the
// sink's own tables, once per projection, before its statements are
// rendered: the tables' definitions are what the server compares. The
// conversion is given the column's collation too: CONVERT alone yields
// the character set's default one (latin1_swedish_ci), which the server
// refuses to compare with a column under another (latin1_german2_ci,
// latin1_bin: "Illegal mix of collations").

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/readside/readside/projections"
)

// ambiguousCharset marks a column name two of a projection's tables
// define with different character sets: keyIn cannot tell which one a
// statement names, and matches by equalities joined by OR instead, which
// the server converts.
const ambiguousCharset = "?"

// listScanned marks (after the conversion its parameters need, if any) a
// column name one of a projection's tables defines as ENUM or SET:
// MariaDB 10.11 reads (a, b) IN ((?, ?), (?, ?)) over such a column by
// scanning the whole table (EXPLAIN: type ALL, or index), where the same
// keys as equalities joined by OR are looked up in the index (range), so
// keyIn matches by equalities. A read table keyed by (status, id) would
// otherwise scan every row for every batch's deletes and fills: a
// 300,000-row load ran at ~1,000 rows/s.
const listScanned = "\x00"

// keyCharsets holds, per projection (*projections.Projection), its sink
// tables' text columns by name whose character set a utf8mb4 literal is
// not compared in (anything but utf8mb4, utf8mb3 and ascii): the
// placeholder that converts a parameter to the column's set and collation
// ("CONVERT(? USING latin1) COLLATE latin1_german2_ci"), or
// ambiguousCharset. A projection whose tables were never read has none,
// and keyIn renders plain placeholders.
var keyCharsets sync.Map

// learnSinkColumns reads what rendering p's statements needs of its sink
// tables' columns, unless it is known: the character sets of text columns
// (keyCharsets) and the FLOAT columns (floatColumns, floatread.go).
func (s *MySQL) learnSinkColumns(ctx context.Context, p *projections.Projection) error {
	if _, ok := keyCharsets.Load(p); ok {
		return nil
	}
	tables := append([]string{p.Table}, StateTables(p, p.Table)...)
	for _, j := range p.Joins {
		tables = append(tables, j.StateTable(p), j.PendingTable(p))
	}
	args := make([]any, len(tables))
	for i, t := range tables {
		args[i] = t
	}
	rows, err := s.db.QueryContext(ctx, "SELECT TABLE_NAME, COLUMN_NAME, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), DATA_TYPE FROM information_schema.COLUMNS"+
		" WHERE TABLE_SCHEMA = DATABASE() AND (CHARACTER_SET_NAME IS NOT NULL OR DATA_TYPE = 'float') AND TABLE_NAME IN ("+placeholders(len(tables))+")", args...)
	if err != nil {
		return fmt.Errorf("reading the column types of the tables of %s: %w", p.Table, err)
	}
	charsets, floats, err := scanSinkColumns(rows)
	if err != nil {
		return fmt.Errorf("reading the column types of the tables of %s: %w", p.Table, err)
	}
	floatColumns.Store(p, floats)
	keyCharsets.Store(p, charsets)
	return nil
}

// forgetSinkColumns drops what learnSinkColumns knew of p's tables (their
// columns changed).
func forgetSinkColumns(p *projections.Projection) {
	keyCharsets.Delete(p)
	floatColumns.Delete(p)
}

func scanSinkColumns(rows *sql.Rows) (charsets map[string]string, floats map[string]map[string]bool, err error) {
	defer rows.Close()
	seen := map[string]string{} // column → the conversion its parameters need, "" for none
	charsets, floats = map[string]string{}, map[string]map[string]bool{}
	for rows.Next() {
		var table, col, cs, coll, typ string
		if err := rows.Scan(&table, &col, &cs, &coll, &typ); err != nil {
			return nil, nil, err
		}
		if strings.EqualFold(typ, "float") {
			if floats[table] == nil {
				floats[table] = map[string]bool{}
			}
			floats[table][col] = true
		}
		if cs == "" {
			continue
		}
		cs = strings.ToLower(cs)
		switch cs {
		case "utf8mb4", "utf8mb3", "utf8", "ascii":
			cs = ""
		default:
			cs = "CONVERT(? USING " + cs + ") COLLATE " + strings.ToLower(coll)
		}
		if strings.EqualFold(typ, "enum") || strings.EqualFold(typ, "set") {
			cs += listScanned
		}
		prev, ok := seen[col]
		switch {
		case !ok:
			seen[col] = cs
			if cs != "" {
				charsets[col] = cs
			}
		case prev != cs:
			charsets[col] = ambiguousCharset
		}
	}
	return charsets, floats, rows.Err()
}

// keyPlaces are the placeholders of cols (as a statement writes them,
// alias and quotes included) in a key match of p, and whether the match
// must be equalities joined by OR (a column is ambiguous, or an ENUM or
// SET).
func keyPlaces(p *projections.Projection, cols []string) (places []string, byEqualities bool) {
	var m map[string]string
	if v, ok := keyCharsets.Load(p); ok {
		m = v.(map[string]string)
	}
	places = make([]string, len(cols))
	for i, c := range cols {
		cs, scanned := strings.CutSuffix(m[columnName(c)], listScanned)
		byEqualities = byEqualities || scanned
		switch cs {
		case "":
			places[i] = "?"
		case ambiguousCharset:
			places[i], byEqualities = "?", true
		default:
			places[i] = cs
		}
	}
	return places, byEqualities
}

// columnName is the column a statement's column reference names:
// "s1.`k_id`" → "k_id".
func columnName(ref string) string {
	if !strings.HasSuffix(ref, "`") {
		return ref[strings.LastIndexByte(ref, '.')+1:]
	}
	i := len(ref) - 2
	for i >= 0 {
		if ref[i] == '`' {
			if i > 0 && ref[i-1] == '`' {
				i -= 2 // a quoted backtick
				continue
			}
			break
		}
		i--
	}
	return strings.ReplaceAll(ref[i+1:len(ref)-1], "``", "`")
}
