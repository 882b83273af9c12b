package cdc

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// MariaDB's system-versioned tables (WITH SYSTEM VERSIONING) keep every
// past version of a row in the table itself, and the binlog shows how:
// an UPDATE is the current row updated plus an INSERT of the old version
// (its ROW END set to the update's time), a DELETE is an UPDATE that
// closes the row's ROW END. Published as they are, a read model keyed by
// the primary key takes the history row for the row (the old value wins
// over the update) and never loses a deleted row. readside publishes the
// current rows only, as a plain SELECT sees the table and the snapshot
// reads it: a row image is current while its ROW END is the column's
// maximum.

// defaultRowEnd names the ROW END column of a table declared only
// WITH SYSTEM VERSIONING (information_schema does not list it).
const defaultRowEnd = "row_end"

// rowEndColumns reads, of the captured tables, those that are
// system-versioned and the name of each one's ROW END column.
func (s *sourceDB) rowEndColumns(ctx context.Context, captured []string) (map[string]string, error) {
	want := map[string]bool{}
	seen := map[string]bool{}
	var dbs []any
	for _, t := range captured {
		want[t] = true
		if db, _, _ := config.SplitTable(t); !seen[db] {
			seen[db] = true
			dbs = append(dbs, db)
		}
	}
	out := map[string]string{}
	if len(dbs) == 0 {
		return out, nil
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(dbs)), ", ")
	rows, err := s.db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'SYSTEM VERSIONED' AND TABLE_SCHEMA IN ("+in+")", dbs...)
	if err != nil {
		return nil, fmt.Errorf("reading which captured tables are system-versioned: %w", err)
	}
	for rows.Next() {
		var db, name string
		if err := rows.Scan(&db, &name); err != nil {
			rows.Close()
			return nil, err
		}
		if want[db+"."+name] {
			out[db+"."+name] = defaultRowEnd
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, err
	}
	// A ROW END column declared by name (GENERATED ALWAYS AS ROW END).
	rows, err = s.db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE GENERATION_EXPRESSION = 'ROW END' AND TABLE_SCHEMA IN ("+in+")", dbs...)
	if err != nil {
		return nil, fmt.Errorf("reading the ROW END columns of system-versioned tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var db, name, col string
		if err := rows.Scan(&db, &name, &col); err != nil {
			return nil, err
		}
		if _, ok := out[db+"."+name]; ok {
			out[db+"."+name] = col
		}
	}
	return out, rows.Err()
}

// versioningDDL reports a DDL text that may make a table system-versioned
// or not, or rename its ROW END column.
func versioningDDL(sql string) bool {
	l := strings.ToLower(sql)
	return strings.Contains(l, "versioning") || strings.Contains(l, "row end") || strings.Contains(l, "system_time")
}

// setRowEnd marks t system-versioned when rowEnd names one of its
// columns, and takes that column out of its key: MariaDB adds ROW END to
// every unique key of such a table so that past versions can share the
// key, and the key of the current row is the one declared.
func (t *table) setRowEnd(rowEnd string) {
	t.versioned = false
	if rowEnd == "" {
		return
	}
	for i, c := range t.columns {
		if c.name == rowEnd {
			t.rowEnd, t.versioned = i, true
		}
	}
	if !t.versioned || len(t.pk) < 2 {
		return
	}
	pk := t.pk[:0:0]
	for _, i := range t.pk {
		if i != t.rowEnd {
			pk = append(pk, i)
		}
	}
	t.pk = pk
}

// current reports whether a row image of a system-versioned table is the
// current row: its ROW END is the maximum of the column's type (a
// TIMESTAMP's 2038-01-19 03:14:07.999999 UTC, or 2106-02-07 06:28:15.999999
// where MariaDB 11.5 widened it; a BIGINT UNSIGNED transaction id's
// 2^64-1, which the decoder reads as -1).
func (t *table) current(row []any) bool {
	switch v := row[t.rowEnd].(type) {
	case interface{ Unix() int64 }:
		s := v.Unix()
		return s == math.MaxInt32 || s == math.MaxUint32
	case int64:
		return v == -1
	case uint64:
		return v == math.MaxUint64
	}
	return false
}

// currentChange is the change a row event of a system-versioned table
// makes to its current rows: an INSERT of a past version (written by an
// UPDATE) and changes among past versions make none (ok false); an UPDATE
// that closes the current row is its delete; one that makes a past
// version current again, its create.
func (t *table) currentChange(op event.Op, before, after []any) (event.Op, []any, []any, bool) {
	if !t.versioned {
		return op, before, after, true
	}
	was := before != nil && t.current(before)
	is := after != nil && t.current(after)
	switch {
	case was && is:
		return event.OpUpdate, before, after, true
	case was:
		return event.OpDelete, before, nil, true
	case is:
		return event.OpCreate, nil, after, true
	}
	return op, nil, nil, false
}
