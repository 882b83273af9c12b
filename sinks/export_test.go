package sinks

import "database/sql"

// BatchDB is the pool batches are applied through (nil when they go one
// statement per round trip), for tests.
func (s *MySQL) BatchDB() *sql.DB { return s.pipe }
