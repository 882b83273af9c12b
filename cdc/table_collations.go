package cdc

import (
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
)

// A column's collation decides which of its values the source compares
// equal ('a' and 'A' under utf8mb4_general_ci, not under utf8mb4_bin),
// so a DDL that changes only it changes what an aggregate's groups and
// distinct values are. The binlog's column type and metadata stay the
// same; the collation ids of the TABLE_MAP's metadata do not. The
// table's schema version (encodeSchema) therefore hashes each column's
// collation name, the same on the binlog and the snapshot path, and the
// projectors, which compare their read tables with every new shape,
// refuse what they cannot follow (sinks/drift.go, Column.Groups).

// mapCollations are a TABLE_MAP's collation metadata: the default and
// per-column collations of its text columns, then of its ENUM and SET
// columns.
func mapCollations(tm *replication.TableMapEvent) [4][]uint64 {
	return [4][]uint64{slices.Clone(tm.DefaultCharset), slices.Clone(tm.ColumnCharset),
		slices.Clone(tm.EnumSetDefaultCharset), slices.Clone(tm.EnumSetColumnCharset)}
}

// sameCollations reports whether tm carries the collation metadata t was
// built from.
func (t *table) sameCollations(tm *replication.TableMapEvent) bool {
	return slices.Equal(t.colls[0], tm.DefaultCharset) && slices.Equal(t.colls[1], tm.ColumnCharset) &&
		slices.Equal(t.colls[2], tm.EnumSetDefaultCharset) && slices.Equal(t.colls[3], tm.EnumSetColumnCharset)
}

// setCollations names the collation of each text, ENUM and SET column
// from tm's metadata (collationOf maps an id to its name, from the
// source's information_schema) and encodes the schema member again, its
// version now covering them.
func (t *table) setCollations(tm *replication.TableMapEvent, collationOf func(uint64) string) {
	t.colls = mapCollations(tm)
	text, enumSet := tm.CollationMap(), tm.EnumSetCollationMap()
	for i := range t.columns {
		c := &t.columns[i]
		switch c.kind {
		case kindText:
			if id, ok := text[i]; ok {
				c.collation = collationOf(id)
			}
		case kindEnum, kindSet:
			if id, ok := enumSet[i]; ok {
				c.collation = collationOf(id)
			}
		}
	}
	t.encodeSchema()
}
