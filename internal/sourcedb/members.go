package sourcedb

// ENUM and SET member names as the server stores them. information_schema
// is utf8mb3 on MariaDB: COLUMN_TYPE (and SHOW CREATE TABLE) show a
// member name's character outside the Basic Multilingual Plane ('😀') as
// '?', so a name read from there may not be the name a row holds. The
// tailer's schema history and a projection's read-table definition both
// read the exact names from the server when that may be so.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/internal/sqlquote"
)

// wideCharsets can hold characters outside the Basic Multilingual Plane
// (binary: any bytes, a member's UTF-8 ones among them).
var wideCharsets = map[string]bool{"utf8mb4": true, "utf16": true, "utf16le": true, "utf32": true, "gb18030": true, "binary": true}

// MembersMayBeMasked says whether names read from COLUMN_TYPE may hold a
// '?' that stands for a character information_schema cannot show.
func MembersMayBeMasked(charset string, members []string) bool {
	if !wideCharsets[charset] {
		return false
	}
	for _, m := range members {
		if strings.Contains(m, "?") {
			return true
		}
	}
	return false
}

// ExactMembers reads an ENUM or SET (kind) column's n member names from
// the server: a temporary copy of the column's definition in database
// scratch ("": the table's own; temporary tables are never written to a
// ROW binlog) takes each member by its index (ENUM) or bit (SET), and
// reading it back converts each to utf8mb4 exactly.
func ExactMembers(ctx context.Context, db *sql.DB, scratch, schema, table, column, kind string, n int) ([]string, error) {
	if scratch == "" {
		scratch = schema
	}
	fail := func(err error) error {
		fix := "GRANT CREATE TEMPORARY TABLES ON " + sqlquote.Ident(scratch) + ".* to readside's user"
		var me *driver.MySQLError
		if errors.As(err, &me) && (me.Number == 1291 || me.Number == 1097) {
			// Duplicated value in ENUM/SET: the source took members equal
			// under the column's collation in a non-strict sql_mode; a
			// strict session (and so a read table) refuses them.
			fix = "make the members distinct under the column's collation (the source accepted equal ones in a non-strict sql_mode; a read table cannot hold them)"
		}
		err = fmt.Errorf("reading the %s member names of %s.%s.%s: information_schema shows a character of one as '?', and the exact names need a temporary table (%w); fix: %s",
			kind, schema, table, column, err, fix)
		if errors.As(err, new(*driver.MySQLError)) {
			// The server refused (the grant): a problem the message
			// names, not the source out of reach.
			return errors.New(err.Error())
		}
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fail(err)
	}
	defer conn.Close()
	tmp := sqlquote.Ident(scratch) + ".`_readside_members`"
	if _, err := conn.ExecContext(ctx, "CREATE TEMPORARY TABLE "+tmp+" AS SELECT "+sqlquote.Ident(column)+" AS m FROM "+sqlquote.Qualified(schema, table)+" LIMIT 0"); err != nil {
		return nil, fail(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TEMPORARY TABLE IF EXISTS "+tmp) //nolint:errcheck // the session ends with the connection
	var values strings.Builder
	for i := range n {
		if i > 0 {
			values.WriteByte(',')
		}
		v := uint64(i + 1)
		if kind == "SET" {
			v = 1 << i
		}
		values.WriteString("(" + strconv.FormatUint(v, 10) + ")")
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO "+tmp+" (m) VALUES "+values.String()); err != nil {
		return nil, fail(err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT CONVERT(m USING utf8mb4) FROM "+tmp+" ORDER BY m+0")
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	out := make([]string, 0, n)
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, fail(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	if len(out) != n {
		return nil, fail(fmt.Errorf("%d names read back, COLUMN_TYPE lists %d", len(out), n))
	}
	return out, nil
}

// ParseMembers reads the member names of a COLUMN_TYPE such as
// "enum('a','b')" or "set(...)".
func ParseMembers(colType string) []string {
	open := strings.IndexByte(colType, '(')
	if open < 0 {
		return nil
	}
	var out []string
	s := colType[open+1:]
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			return out
		}
		s = s[i+1:]
		var b strings.Builder
		for len(s) > 0 {
			if s[0] == '\'' {
				if len(s) > 1 && s[1] == '\'' {
					b.WriteByte('\'')
					s = s[2:]
					continue
				}
				s = s[1:]
				break
			}
			if s[0] == '\\' && len(s) > 1 {
				b.WriteString(unescape(s[1]))
				s = s[2:]
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		out = append(out, b.String())
	}
}

// unescape is what a backslash followed by c stands for in a MySQL string
// literal; COLUMN_TYPE shows a NUL, newline or carriage return in a member
// name this way.
func unescape(c byte) string {
	switch c {
	case '0':
		return "\x00"
	case 'n':
		return "\n"
	case 'r':
		return "\r"
	case 't':
		return "\t"
	case 'b':
		return "\b"
	case 'Z':
		return "\x1a"
	case '%', '_': // kept escaped, for LIKE
		return "\\" + string(c)
	}
	return string(c)
}

// MembersType writes an ENUM or SET column type with the given member
// names, escaped as MariaDB's COLUMN_TYPE escapes them: a quote doubled;
// a backslash, NUL, newline and CR behind a backslash; a tab and ^Z as
// they are.
func MembersType(kind string, members []string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(kind) + "(")
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("'" + memberEscaper.Replace(m) + "'")
	}
	return b.String() + ")"
}

var memberEscaper = strings.NewReplacer("\\", "\\\\", "'", "''", "\x00", "\\0", "\n", "\\n", "\r", "\\r")
