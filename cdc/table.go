package cdc

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"

	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
)

// table is a captured table as the binlog describes it at one position:
// the column names, types and primary key come from the TABLE_MAP event's
// full metadata, never from the current schema, so an ALTER TABLE cannot
// misalign old rows with new columns.
type table struct {
	db, name string
	topic    string
	columns  []column
	pk       []int // column indexes of the key: the primary key, or source.keys
	// versioned: a system-versioned table, whose column rowEnd tells a
	// current row from a past version (system_versioning.go).
	versioned bool
	rowEnd    int
	allIdx    []int // 0..len(columns)-1, built once

	// What the cache compares to tell whether a new TABLE_MAP describes the
	// same shape (MySQL reuses table ids and re-sends the map every
	// transaction).
	colTypes []byte
	colMeta  []uint16
	colNames []string
	nullBits []byte // the map's column nullability: a key column made nullable rebuilds the table
	// colls are the map's collation metadata (text, then ENUM and SET
	// columns): a DDL changing a column's collation alone rebuilds the
	// table, whose schema version then changes (setCollations).
	colls [4][]uint64
	// tracked: built from the schema history, not from names in the map
	// (which has none); the cache then compares types only, and a DDL
	// clears it.
	tracked bool

	// events counts published events by op, resolved once per table
	// rather than per event (a label lookup hashes every time).
	events map[event.Op]prometheus.Counter

	// sizeHint is the size of the last event encoded per op slot
	// (opSlot), the next one's buffer capacity.
	sizeHint [3]int

	// schema is the pre-encoded `"schema":{...}` member of every envelope.
	schema        []byte
	schemaVersion string

	// nullable reports a column's nullability (the table map's, or
	// information_schema's for a snapshot); dbz is the table's encoder
	// under kafka.format: debezium, built on first use; under
	// debezium-avro dbzAvro writes it in Avro with the registry's ids of
	// its key and value schemas.
	nullable func(i int) bool
	dbz      *debezium.Table
	dbzAvro  *debezium.Avro
	keyID    int
	valueID  int
}

// newTable builds the table from a TABLE_MAP event.
// keyCols are its source.keys columns, nil to key it by its primary key.
func newTable(tm *replication.TableMapEvent, topic string, excluded map[string]bool, keyCols []string, charsetOf func(uint64) string) (*table, error) {
	t := &table{db: string(tm.Schema), name: string(tm.Table), topic: topic,
		colTypes: bytes.Clone(tm.ColumnType), colMeta: slices.Clone(tm.ColumnMeta), colNames: tm.ColumnNameString(), nullBits: bytes.Clone(tm.NullBitmap)}
	qualified := t.db + "." + t.name
	if len(t.colNames) != int(tm.ColumnCount) {
		return nil, fmt.Errorf("table %s: the binlog carries no column names: set binlog_row_metadata=FULL on the source (MySQL >= 8.0.1, MariaDB >= 10.5); "+
			"events written while it was not FULL stay without names, so if it is FULL already (this event is older), start over from a new checkpoint with a snapshot "+
			"(docs/operations.md, \"Schema history\", recovery 2)", qualified)
	}
	for i, name := range t.colNames {
		col, err := newColumn(tm, i, name, charsetOf)
		if excludedUndecodable(err, excluded[name]) {
			col, err = column{name: name, kind: kindText}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", qualified, err)
		}
		col.excluded = excluded[name]
		t.columns = append(t.columns, col)
	}
	var pk []int
	for _, i := range tm.PrimaryKey {
		if int(i) >= len(t.columns) {
			return nil, fmt.Errorf("table %s: primary key column %d out of range", qualified, i)
		}
		pk = append(pk, int(i))
	}
	if err := t.setKey(pk, keyCols, mapNullable(tm)); err != nil {
		return nil, err
	}
	t.encodeSchema()
	return t, nil
}

// mapNullable is the column nullability a TABLE_MAP carries (in every
// binlog_row_metadata mode).
func mapNullable(tm *replication.TableMapEvent) func(int) bool {
	return func(i int) bool {
		known, null := tm.Nullable(i)
		return known && null
	}
}

// counter is the events counter for op on this table.
func (t *table) counter(vec *prometheus.CounterVec, op event.Op) prometheus.Counter {
	c, ok := t.events[op]
	if !ok {
		if t.events == nil {
			t.events = map[event.Op]prometheus.Counter{}
		}
		c = vec.WithLabelValues(t.db+"."+t.name, string(op))
		t.events[op] = c
	}
	return c
}

// sameShape reports whether tm describes the table this was built from.
func (t *table) sameShape(tm *replication.TableMapEvent) bool {
	if !bytes.Equal(t.colTypes, tm.ColumnType) || !slices.Equal(t.colMeta, tm.ColumnMeta) || !bytes.Equal(t.nullBits, tm.NullBitmap) {
		return false
	}
	if !t.sameCollations(tm) {
		return false
	}
	if t.tracked {
		return len(tm.ColumnName) == 0
	}
	if len(t.colNames) != len(tm.ColumnName) {
		return false
	}
	for i, n := range tm.ColumnName {
		if string(n) != t.colNames[i] {
			return false
		}
	}
	return true
}

// encodeSchema pre-encodes the envelope's schema member. Its version is a
// hash of the published column names and types, of the text columns'
// collations (table_collations.go) and of the ENUM and SET members (a
// member respelled changes no type name), so consumers can cache by it
// and see at a glance that a DDL changed the shape.
func (t *table) encodeSchema() {
	for i := range t.columns {
		c := &t.columns[i]
		c.member = append(appendJSONString(nil, c.name), ':')
	}
	h := fnv.New64a()
	cols, _ := t.appendObject(nil, t.all(), func(buf []byte, c *column, _ int) ([]byte, error) {
		h.Write([]byte(c.name))
		h.Write([]byte{0})
		h.Write([]byte(c.typeName))
		h.Write([]byte{0})
		if c.collation != "" {
			h.Write([]byte(c.collation))
			h.Write([]byte{0})
		}
		for _, m := range c.members {
			h.Write([]byte(m))
			h.Write([]byte{1})
		}
		return appendJSONString(buf, c.typeName), nil
	})
	t.schemaVersion = fmt.Sprintf("%016x", h.Sum64())
	var b []byte
	b = append(b, `"`+event.FieldSchema+`":{"`+event.SchemaVersion+`":`...)
	b = appendJSONString(b, t.schemaVersion)
	b = append(b, `,"`+event.SchemaColumns+`":`...)
	b = append(b, cols...)
	b = append(b, '}')
	t.schema = b
}

// valueAppender appends column i's value of some row as JSON.
type valueAppender func(buf []byte, c *column, i int) ([]byte, error)

// appendObject appends a JSON object of the given columns (by index),
// skipping excluded ones, with values from value.
func (t *table) appendObject(buf []byte, indexes []int, value valueAppender) ([]byte, error) {
	buf = append(buf, '{')
	first := true
	var err error
	for _, i := range indexes {
		c := &t.columns[i]
		if c.excluded {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		if c.member != nil {
			buf = append(buf, c.member...)
		} else {
			buf = append(appendJSONString(buf, c.name), ':')
		}
		if buf, err = value(buf, c, i); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// all lists every column index, for appendObject.
func (t *table) all() []int {
	if len(t.allIdx) != len(t.columns) {
		t.allIdx = make([]int, len(t.columns))
		for i := range t.allIdx {
			t.allIdx[i] = i
		}
	}
	return t.allIdx
}

// appendRow appends a binlog row as a JSON object of the published columns.
func (t *table) appendRow(buf []byte, row []any) ([]byte, error) {
	return t.appendObject(buf, t.all(), func(buf []byte, c *column, i int) ([]byte, error) { return c.appendValue(buf, row[i]) })
}

// appendKey appends the primary key of a binlog row as a JSON object in key
// column order: the Kafka record key, identical for every change of the
// row (snapshot reads included, see appendSQLKey).
func (t *table) appendKey(buf []byte, row []any) ([]byte, error) {
	return t.appendObject(buf, t.pk, func(buf []byte, c *column, i int) ([]byte, error) { return c.appendValue(buf, row[i]) })
}

// keyChanged reports whether an update moved the row to another primary key.
func (t *table) keyChanged(before, after []any) bool {
	for _, i := range t.pk {
		if !valuesEqual(before[i], after[i]) {
			return true
		}
	}
	return false
}

// opSlot indexes table.sizeHint: creates, updates (two images), deletes.
func opSlot(op event.Op) int {
	switch op {
	case event.OpUpdate:
		return 1
	case event.OpDelete:
		return 2
	}
	return 0
}

func valuesEqual(a, b any) bool {
	// Every update compares its key columns: the common key types compare
	// directly (for two values of one integer type or two strings, == is
	// exactly "same printed form"); fmt.Sprint allocates per call.
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case nil:
		return b == nil
	case int64:
		if y, ok := b.(int64); ok {
			return x == y
		}
	case int32:
		if y, ok := b.(int32); ok {
			return x == y
		}
	case uint64:
		if y, ok := b.(uint64); ok {
			return x == y
		}
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case decimal.Decimal:
		if y, ok := b.(decimal.Decimal); ok {
			return x.String() == y.String()
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Equal(y)
		}
	}
	// The other scalar types (and mixed types) compare by their printed
	// form.
	return fmt.Sprint(a) == fmt.Sprint(b)
}
