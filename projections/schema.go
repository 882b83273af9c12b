package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SourceColumns reads the source table's column definitions (type,
// charset, nullability) and primary key, so each read column gets exactly
// its source column's type, and checks the declaration against them.
// It returns each read column's definition for the read table's DDL.
func (p *Projection) SourceColumns(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), IS_NULLABLE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, p.SourceDB, p.SourceTbl)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s.%s: %w", p.SourceDB, p.SourceTbl, err)
	}
	defer rows.Close()
	src := map[string]string{}
	nullable := map[string]bool{}
	for rows.Next() {
		var name, typ, cs, coll, null string
		if err := rows.Scan(&name, &typ, &cs, &coll, &null); err != nil {
			return nil, err
		}
		def := typ
		if cs != "" && cs != "binary" {
			def += " CHARACTER SET " + cs + " COLLATE " + coll
		}
		if null == "YES" {
			def += " NULL"
			nullable[name] = true
		} else {
			def += " NOT NULL"
		}
		src[name] = def
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(src) == 0 {
		return nil, fmt.Errorf("projections.%s.from: %s.%s does not exist on the source", p.Name, p.SourceDB, p.SourceTbl)
	}
	pkRows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, p.SourceDB, p.SourceTbl)
	if err != nil {
		return nil, err
	}
	defer pkRows.Close()
	var pk []string
	for pkRows.Next() {
		var c string
		if err := pkRows.Scan(&c); err != nil {
			return nil, err
		}
		pk = append(pk, c)
	}
	var errs []error
	out := map[string]string{}
	for i, c := range p.Columns {
		def, ok := src[c.Source]
		if !ok {
			errs = append(errs, fmt.Errorf("projections.%s.columns.%s: source column %q does not exist in %s.%s", p.Name, c.Name, c.Source, p.SourceDB, p.SourceTbl))
			continue
		}
		if i < len(p.Key) && nullable[c.Source] {
			errs = append(errs, fmt.Errorf("projections.%s.key column %s copies %s, which is nullable in the source: a read key cannot be NULL; key on NOT NULL columns", p.Name, c.Name, c.Source))
		}
		out[c.Name] = def
	}
	if err := p.CheckSourceKey(pk); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}
