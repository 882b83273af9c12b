package sinks

// ENUM index 0, the "invalid value" member a non-strict source stores for
// an invalid value, reads back as '' and is published as "" (docs/
// events.md). Under the sink session's strict sql_mode every way of
// writing it ('' or 0) is refused with 1265, so a row holding it is
// written in a statement of its own without STRICT_ALL_TABLES, and kept
// only if the server's warnings are exactly those index-0 stores:
// anything else it coerced (a value too long, out of range) is returned
// as the error strict mode would have raised. MariaDB only (SET
// STATEMENT); a MySQL sink refuses the row as before.

import (
	"context"
	"fmt"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/projections"
)

// lenientPrefix runs one statement with the session's sql_mode less
// STRICT_ALL_TABLES (so NO_BACKSLASH_ESCAPES, when on, stays on).
const lenientPrefix = "SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR "

// enumZeroColumns is the indexes into p.Columns of the read columns that
// are ENUMs without a ” member: there a "" is index 0. Cached per read
// table until a batch fails (the table may have been altered).
func (s *MySQL) enumZeroColumns(ctx context.Context, p *projections.Projection) ([]int, error) {
	if !s.mariadb {
		return nil, nil
	}
	if v, ok := s.enumZero.Load(p.Table); ok {
		return v.([]int), nil
	}
	cols, err := s.ReadColumns(ctx, p.Table)
	if err != nil {
		return nil, err
	}
	enum := map[string]bool{}
	for _, c := range cols {
		if strings.HasPrefix(c.Type, "enum(") && !hasEmptyMember(c.Type) {
			enum[c.Name] = true
		}
	}
	out := []int{}
	for i, c := range p.Columns {
		if enum[c.Name] {
			out = append(out, i)
		}
	}
	s.enumZero.Store(p.Table, out)
	return out, nil
}

// hasEmptyMember reports whether a COLUMN_TYPE such as enum('a',”) has
// the member ”.
func hasEmptyMember(colType string) bool {
	s := colType[strings.IndexByte(colType, '(')+1:]
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			return false
		}
		s = s[i+1:]
		n := 0
		for len(s) > 0 {
			if s[0] == '\'' && (len(s) < 2 || s[1] != '\'') {
				s = s[1:]
				break
			}
			if s[0] == '\\' || s[0] == '\'' {
				s = s[1:] // the escaped character or the doubled quote's second
			}
			if len(s) > 0 {
				s, n = s[1:], n+1
			}
		}
		if n == 0 {
			return true
		}
	}
}

// upsertEnumZero writes the rows of ups that store index 0, each in a
// lenient statement of its own, and returns the others.
func (a *applier) upsertEnumZero(ups []projections.Write) ([]projections.Write, error) {
	if len(a.zero) == 0 {
		return ups, nil
	}
	plain := make([]projections.Write, 0, len(ups))
	for i := range ups {
		if !enumZeroRow(&ups[i], a.zero) {
			plain = append(plain, ups[i])
			continue
		}
		if err := a.upsertRows(ups[i:i+1], true); err != nil {
			return nil, err
		}
		if err := a.checkEnumZeroWarnings(&ups[i]); err != nil {
			return nil, fmt.Errorf("upserting into %s: %w", a.p.Table, err)
		}
	}
	return plain, nil
}

// enumZeroRow reports whether w stores index 0 in one of the columns.
func enumZeroRow(w *projections.Write, cols []int) bool {
	for _, i := range cols {
		if v := &w.Values[i]; v.Kind() == projections.TextValue && len(v.Bytes()) == 0 {
			return true
		}
	}
	return false
}

// checkEnumZeroWarnings reads the warnings of the lenient upsert of w and
// accepts only "Data truncated" of an index-0 column.
func (a *applier) checkEnumZeroWarnings(w *projections.Write) error {
	allowed := map[string]bool{}
	for _, i := range a.zero {
		if v := &w.Values[i]; v.Kind() == projections.TextValue && len(v.Bytes()) == 0 {
			allowed[fmt.Sprintf("Data truncated for column '%s' at row 1", a.p.Columns[i].Name)] = true
		}
	}
	rows, err := a.query("SHOW WARNINGS")
	if err != nil {
		return err
	}
	defer rows.Close()
	var bad error
	for rows.Next() {
		var level, msg string
		var code uint16
		if err := rows.Scan(&level, &code, &msg); err != nil {
			return err
		}
		if bad == nil && !(code == 1265 && allowed[msg]) {
			bad = &driver.MySQLError{Number: code, Message: msg}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return bad
}
