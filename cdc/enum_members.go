package cdc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// information_schema is utf8mb3 on MariaDB: COLUMN_TYPE (and SHOW CREATE
// TABLE) show a member name's character outside the Basic Multilingual
// Plane ('😀') as '?', so a schema history read from it would publish '?'
// for a member the source stores exactly. A binlog with
// binlog_row_metadata=FULL carries the exact names and needs none of this.

// wideCharsets can hold characters outside the Basic Multilingual Plane.
var wideCharsets = map[string]bool{"utf8mb4": true, "utf16": true, "utf16le": true, "utf32": true, "gb18030": true}

// membersMayBeMasked says whether names read from COLUMN_TYPE may hold a
// '?' that stands for a character information_schema cannot show.
func membersMayBeMasked(charset string, members []string) bool {
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

// exactMembers reads an ENUM or SET column's n member names from the
// server: a temporary copy of the column's definition in the scratch
// database (never written to a ROW binlog) takes each member by its index
// (ENUM) or bit (SET), and reading it back converts each to utf8mb4
// exactly.
func (s *sourceDB) exactMembers(ctx context.Context, db, table, column, kind string, n int) ([]string, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	scratch := s.scratchDB
	if scratch == "" {
		scratch = db
	}
	tmp := quoteIdent(scratch) + ".`_readside_members`"
	fail := func(err error) error {
		return fmt.Errorf("reading the %s member names of %s.%s.%s: information_schema shows a character of one as '?', and the exact names need a temporary table (%w); fix: set binlog_row_metadata=FULL, which carries the names, or GRANT CREATE TEMPORARY TABLES ON %s.* to readside's user",
			kind, db, table, column, err, quoteIdent(scratch))
	}
	if _, err := conn.ExecContext(ctx, "CREATE TEMPORARY TABLE "+tmp+" AS SELECT "+quoteIdent(column)+" AS m FROM "+quoteIdent(db)+"."+quoteIdent(table)+" LIMIT 0"); err != nil {
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
