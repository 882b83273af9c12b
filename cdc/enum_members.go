package cdc

import (
	"context"
	"fmt"

	"github.com/readside/readside/internal/sourcedb"
)

// exactMembers reads an ENUM or SET column's n member names from the
// server, its temporary table in the signal database
// (sourcedb.ExactMembers). Without the grant it needs, a binlog with
// binlog_row_metadata=FULL carries the exact names too.
func (s *sourceDB) exactMembers(ctx context.Context, db, table, column, kind string, n int) ([]string, error) {
	m, err := sourcedb.ExactMembers(ctx, s.db, s.scratchDB, db, table, column, kind, n)
	if err != nil {
		return nil, fmt.Errorf("%w, or set binlog_row_metadata=FULL, which carries the names", err)
	}
	return m, nil
}
