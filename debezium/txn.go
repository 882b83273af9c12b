package debezium

// provide.transaction.metadata: Debezium's transaction block in each
// streamed change (its id, the change's order in the transaction and in
// its table) and the BEGIN and END records of the transaction topic. The
// counting follows Debezium's TransactionContext: every change record
// counts (a primary key change is a delete and a create, two), a
// tombstone does not, snapshot rows belong to no transaction.

import (
	"slices"
	"strconv"
	"unicode/utf16"
)

// Block is a change's place in its source transaction: the envelope's
// transaction block.
type Block struct {
	ID string
	// TotalOrder is the change's position among the transaction's
	// changes, from 1; DataCollectionOrder among those of its table.
	TotalOrder, DataCollectionOrder int64
}

// Collection is one table's count of changes in a transaction (the END
// record's data_collections entry).
type Collection struct {
	Name  string // db.table
	Count int64
}

// Txn counts the changes of the open source transaction. Its zero value
// is ready, with no transaction open.
type Txn struct {
	id     string
	total  int64
	counts map[string]int64
	order  []string // the tables in the order of their first change
	// capacity is the table size of Debezium's per-table HashMap, which
	// decides the END record's order: it grows with the tables of a
	// transaction and, like a cleared Java HashMap, never shrinks.
	capacity int
}

// Begin opens the transaction id, dropping whatever was open.
func (x *Txn) Begin(id string) {
	x.id, x.total, x.order = id, 0, x.order[:0]
	clear(x.counts)
}

// Open reports an open transaction.
func (x *Txn) Open() bool { return x.id != "" }

// ID is the open transaction's id.
func (x *Txn) ID() string { return x.id }

// End closes the open transaction.
func (x *Txn) End() { x.Begin("") }

// Total is the number of changes counted in the open transaction.
func (x *Txn) Total() int64 { return x.total }

// Event counts one change of table (db.table) and is its block.
func (x *Txn) Event(table string) Block {
	if x.counts == nil {
		x.counts = map[string]int64{}
	}
	x.total++
	n, seen := x.counts[table]
	if !seen {
		x.order = append(x.order, table)
		x.grow(len(x.order))
	}
	x.counts[table] = n + 1
	return Block{ID: x.id, TotalOrder: x.total, DataCollectionOrder: n + 1}
}

// grow doubles the capacity as java.util.HashMap does once it holds more
// than three quarters of it.
func (x *Txn) grow(size int) {
	if x.capacity == 0 {
		x.capacity = 16
	}
	for size > x.capacity*3/4 {
		x.capacity *= 2
	}
}

// Collections are the open transaction's per-table counts in the order
// Debezium lists them: the iteration order of its java.util.HashMap
// (bucket by the spread String.hashCode, then insertion order). The order
// means nothing, but matching it keeps the records identical.
func (x *Txn) Collections() []Collection {
	out := make([]Collection, len(x.order))
	for i, name := range x.order {
		out[i] = Collection{Name: name, Count: x.counts[name]}
	}
	capacity := max(x.capacity, 16)
	slices.SortStableFunc(out, func(a, b Collection) int {
		return int(javaBucket(a.Name, capacity)) - int(javaBucket(b.Name, capacity))
	})
	return out
}

// javaBucket is the bucket of key in a java.util.HashMap of capacity
// (a power of two): String.hashCode over UTF-16 code units, spread by
// xoring its upper half into the lower.
func javaBucket(key string, capacity int) uint32 {
	var h uint32
	for _, u := range utf16.Encode([]rune(key)) {
		h = 31*h + uint32(u)
	}
	return (h ^ h>>16) & uint32(capacity-1)
}

// The transaction topic's Connect schemas, as the JSON converter writes
// them.
const (
	txnKeySchema   = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","version":1}`
	txnValueSchema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"status"},{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":true,"field":"event_count"},` +
		`{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":false,"field":"data_collection"},{"type":"int64","optional":false,"field":"event_count"}],"optional":true,"name":"event.collection","version":1},"optional":true,"field":"data_collections"},` +
		`{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataValue","version":1}`
)

// TxnKey appends the transaction topic's record key of transaction id;
// schemas is the JSON converter's schemas.enable.
func TxnKey(buf []byte, id string, schemas bool) []byte {
	if schemas {
		buf = append(buf, `{"schema":`+txnKeySchema+`,"payload":`...)
	}
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, id)
	buf = append(buf, '}')
	if schemas {
		buf = append(buf, '}')
	}
	return buf
}

// TxnBegin appends the BEGIN record's value of transaction id, begun at
// tsMs (ms since the epoch).
func TxnBegin(buf []byte, id string, tsMs int64, schemas bool) []byte {
	return appendTxnValue(buf, "BEGIN", id, tsMs, nil, schemas)
}

// TxnEnd appends the END record's value of x's open transaction, ended at
// tsMs.
func (x *Txn) TxnEnd(buf []byte, tsMs int64, schemas bool) []byte {
	return appendTxnValue(buf, "END", x.id, tsMs, x, schemas)
}

// appendTxnValue appends a transaction record's value: event_count and
// data_collections from end, null for a BEGIN (end nil).
func appendTxnValue(buf []byte, status, id string, tsMs int64, end *Txn, schemas bool) []byte {
	if schemas {
		buf = append(buf, `{"schema":`+txnValueSchema+`,"payload":`...)
	}
	buf = append(buf, `{"status":"`+status+`","id":`...)
	buf = appendString(buf, id)
	if end == nil {
		buf = append(buf, `,"event_count":null,"data_collections":null`...)
	} else {
		buf = append(buf, `,"event_count":`...)
		buf = strconv.AppendInt(buf, end.total, 10)
		buf = append(buf, `,"data_collections":[`...)
		for i, c := range end.Collections() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"data_collection":`...)
			buf = appendString(buf, c.Name)
			buf = append(buf, `,"event_count":`...)
			buf = strconv.AppendInt(buf, c.Count, 10)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"ts_ms":`...)
	buf = strconv.AppendInt(buf, tsMs, 10)
	buf = append(buf, '}')
	if schemas {
		buf = append(buf, '}')
	}
	return buf
}

// appendBlock appends the envelope's transaction member: b, or null.
func appendBlock(buf []byte, b *Block) []byte {
	if b == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, b.ID)
	buf = append(buf, `,"total_order":`...)
	buf = strconv.AppendInt(buf, b.TotalOrder, 10)
	buf = append(buf, `,"data_collection_order":`...)
	buf = strconv.AppendInt(buf, b.DataCollectionOrder, 10)
	return append(buf, '}')
}
