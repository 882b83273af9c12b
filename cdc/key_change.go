package cdc

// A captured table's key changed under the tailer. Every event is keyed by
// the table's key columns (the primary key, or source.keys): the record
// key, the row a version belongs to, an aggregate's contribution, a child
// in its parent's array, a tombstone. A DDL that gives the table another
// primary key (ALTER TABLE … DROP PRIMARY KEY, ADD PRIMARY KEY (code)), or
// a config that names other source.keys, re-keys every existing row at
// once: read models built under the old key would hold each row changed
// afterwards twice (an aggregate counted it twice, seen on MariaDB 10.11:
// count 3 for 2 rows), and a read table keyed by the old columns would
// merge rows the source now tells apart. No event says which old key a
// row had, so the tailer stops at the first row event under the new key
// (fail closed), naming both keys and the fixes. The keys it published are
// kept in the checkpoint, so a restart does not forget them.

import (
	"slices"
	"strings"
)

// keyColumns are the names of tbl's key columns, in key order.
func (tbl *table) keyColumns() []string {
	out := make([]string, len(tbl.pk))
	for i, c := range tbl.pk {
		out[i] = tbl.columns[c].name
	}
	return out
}

// checkKey records the key of captured table name's events from tbl on,
// or stops the tailer when it differs from the key its events had before.
func (s *stream) checkKey(name string, tbl *table, pos string) error {
	key := tbl.keyColumns()
	prev, ok := s.keyCols[name]
	if !ok {
		if s.keyCols == nil {
			s.keyCols = map[string][]string{}
		}
		s.keyCols[name] = key
		return nil
	}
	if slices.Equal(prev, key) {
		return nil
	}
	return fatalf("at %s: the key of captured table %s changed from (%s) to (%s): a DDL changed its primary key, or source.keys names other columns. "+
		"Every row's event key changes with it, and no event says which old key a row had: read models built under the old key would hold each row changed from here on twice "+
		"(aggregates would count it twice; a read table keyed by the old columns would merge rows the source now tells apart). "+
		"Fix: to keep the old key, give %s a UNIQUE index on (%s) with those columns NOT NULL and set source.keys {%s: [%s]}, then restart; "+
		"or start over under the new key: a new kafka.transactional_id (or topic prefix) with source.snapshot.mode: initial and the read tables dropped (docs/operations.md, \"Binlog purged\")",
		pos, name, strings.Join(prev, ", "), strings.Join(key, ", "), name, strings.Join(prev, ", "), name, strings.Join(prev, ", "))
}
