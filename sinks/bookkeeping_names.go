package sinks

import (
	"context"
	"fmt"
	"strings"
)

// nameCol and topicCol are the types of the bookkeeping columns that hold
// projection, sink and topic names. They compare byte for byte whatever
// the sink database's default collation: under a case- or
// accent-insensitive one (MySQL 8's utf8mb4_0900_ai_ci, MariaDB's
// utf8mb4_general_ci) projections "Orders" and "orders", or "café" and
// "cafe", would share one row of offsets, and a latin1 default would
// store every name outside Latin-1 as question marks.
const (
	nameCol  = "VARCHAR(190) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
	topicCol = "VARCHAR(249) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
)

// binaryNames brings bookkeeping tables created before their name columns
// were binary to nameCol and topicCol, once per sink connection pool. Two
// names the old collation took for one already share rows; from here on
// they are kept apart.
func (s *MySQL) binaryNames(ctx context.Context) error {
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	if s.namesBinary {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, "SELECT TABLE_NAME, COLUMN_NAME, CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS"+
		" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '\\_readside\\_%' AND COLUMN_NAME IN ('projection', 'topic', 'sink', 'to_sink')"+
		" AND DATA_TYPE = 'varchar' AND COALESCE(COLLATION_NAME, '') <> 'utf8mb4_bin' ORDER BY TABLE_NAME, COLUMN_NAME")
	if err != nil {
		return fmt.Errorf("reading the collation of readside's bookkeeping tables: %w", err)
	}
	alters := map[string][]string{}
	var tables []string
	for rows.Next() {
		var table, col string
		var n int64
		if err := rows.Scan(&table, &col, &n); err != nil {
			rows.Close()
			return err
		}
		typ := nameCol
		if n > 190 {
			typ = topicCol
		}
		if _, ok := alters[table]; !ok {
			tables = append(tables, table)
		}
		alters[table] = append(alters[table], "MODIFY "+q(col)+" "+typ+" NOT NULL")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		st := "ALTER TABLE " + q(t) + " " + strings.Join(alters[t], ", ")
		if s.Log != nil {
			// Once per table and sink; it copies the table.
			s.Log.Info("bookkeeping table's name columns made to compare byte for byte", "table", t, "statement", st)
		}
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s (readside's bookkeeping names compare byte for byte): %w", st, err)
		}
	}
	s.namesBinary = true
	return nil
}
