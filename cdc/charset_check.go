package cdc

import (
	"context"
	"fmt"
	"strings"

	"github.com/readside/readside/config"
)

// checkCharsets refuses the captured columns whose charset readside
// cannot decode (undecodableColumns), excluded columns aside.
func (s *sourceDB) checkCharsets(ctx context.Context, cfg config.Config) []Finding {
	excluded := map[string]bool{}
	for _, c := range cfg.Source.ExcludeColumns {
		excluded[c] = true
	}
	cols, err := s.undecodableColumns(ctx, cfg.Source.Tables)
	if err != nil {
		return []Finding{{Severity: "error", What: fmt.Sprintf("reading the captured columns' character sets: %v", err)}}
	}
	var out []Finding
	for _, c := range cols {
		if excluded[c.table+"."+c.column] {
			continue
		}
		out = append(out, Finding{Severity: "error", What: fmt.Sprintf("table %s column %s is in character set %s, which readside cannot decode: the tailer would stop at the table's first binlog row", c.table, c.column, c.charset),
			Fix: fmt.Sprintf("convert the column to utf8mb4 (ALTER TABLE %s MODIFY %s ... CHARACTER SET utf8mb4), or exclude it (source.exclude_columns: [%s.%s])", c.table, c.column, c.table, c.column)})
	}
	if len(out) == 0 {
		out = append(out, Finding{Severity: "ok", What: "every text, ENUM and SET column of the captured tables is in a character set readside decodes as the server converts it"})
	}
	return out
}

type columnCharset struct{ table, column, charset string }

// undecodableColumns names each column of the captured tables whose
// character set has no decoder in charsetDecoders (none of MariaDB's or
// MySQL's today; a future server's could), so check refuses it before the
// tailer meets it at the table's first binlog row. ENUM and SET columns
// count too: their member names are in the column's charset.
func (s *sourceDB) undecodableColumns(ctx context.Context, tables []string) ([]columnCharset, error) {
	var out []columnCharset
	for _, t := range tables {
		db, name, _ := strings.Cut(t, ".")
		rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, CHARACTER_SET_NAME FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CHARACTER_SET_NAME IS NOT NULL ORDER BY ORDINAL_POSITION`, db, name)
		if err != nil {
			return nil, fmt.Errorf("reading information_schema.COLUMNS: %w", err)
		}
		for rows.Next() {
			var col, charset string
			if err := rows.Scan(&col, &charset); err != nil {
				rows.Close()
				return nil, err
			}
			if _, ok := charsetDecoders[charset]; !ok && charset != "binary" {
				out = append(out, columnCharset{t, col, charset})
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
