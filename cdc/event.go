package cdc

import (
	"strconv"

	"github.com/readside/readside/event"
)

// The envelope's layout (docs/events.md) is fixed: its member names come
// from package event, joined into constant fragments so writing one costs
// an append.

// source describes where in the binlog an event came from.
type source struct {
	flavor   string
	serverID uint32
	file     string
	pos      uint32
	start    uint32 // where the event starts (pos is where it ends)
	gtid     string // the transaction's GTID ("" without GTIDs)
	ts       uint32 // commit time, Unix seconds (binlog header resolution)
}

// envelope is everything an event carries besides the row images.
type envelope struct {
	op      event.Op
	version uint64
	src     *source
	txnSeq  int // index of the event within its source transaction
}

// appendEvent appends the JSON envelope of one change. before and after are
// pre-encoded row objects or nil; key is the pre-encoded primary key.
func appendEvent(buf []byte, t *table, e envelope, key, before, after []byte) []byte {
	buf = appendEventHead(buf, t, e, key)
	if before == nil {
		buf = append(buf, "null"...)
	}
	buf = append(buf, before...)
	buf = append(buf, `,"`+event.FieldAfter+`":`...)
	if after == nil {
		buf = append(buf, "null"...)
	}
	buf = append(buf, after...)
	return appendEventTail(buf, t, e)
}

// appendChange is appendEvent with the row images encoded in place from
// binlog rows (nil for none): the tailer's hot path, one buffer per event
// instead of one per image plus a copy. The output is byte for byte
// appendEvent's (TestAppendChangeMatchesAppendEvent).
func appendChange(buf []byte, t *table, e envelope, key []byte, before, after []any) ([]byte, error) {
	buf = appendEventHead(buf, t, e, key)
	var err error
	if before == nil {
		buf = append(buf, "null"...)
	} else if buf, err = t.appendRow(buf, before); err != nil {
		return nil, err
	}
	buf = append(buf, `,"`+event.FieldAfter+`":`...)
	if after == nil {
		buf = append(buf, "null"...)
	} else if buf, err = t.appendRow(buf, after); err != nil {
		return nil, err
	}
	return appendEventTail(buf, t, e), nil
}

// appendEventHead appends the envelope up to the before image's value.
func appendEventHead(buf []byte, t *table, e envelope, key []byte) []byte {
	buf = append(buf, `{"`+event.FieldOp+`":"`...)
	buf = append(buf, byte(e.op))
	buf = append(buf, `","`+event.FieldVersion+`":`...)
	buf = strconv.AppendUint(buf, e.version, 10)
	buf = appendEventTable(buf, t)
	if key == nil {
		buf = append(buf, "null"...)
	}
	buf = append(buf, key...)
	return append(buf, `,"`+event.FieldBefore+`":`...)
}

// appendEventTable appends the members after the version up to the key's
// value.
func appendEventTable(buf []byte, t *table) []byte {
	buf = append(buf, `,"`+event.FieldDB+`":`...)
	buf = appendJSONString(buf, t.db)
	buf = append(buf, `,"`+event.FieldTable+`":`...)
	buf = appendJSONString(buf, t.name)
	return append(buf, `,"`+event.FieldKey+`":`...)
}

// appendEventTail appends the envelope after the after image.
func appendEventTail(buf []byte, t *table, e envelope) []byte {
	buf = appendEventSource(buf, e.src)
	buf = strconv.AppendInt(buf, int64(e.txnSeq), 10)
	return appendEventSchema(buf, t)
}

// appendEventSource appends the members after the after image up to the
// value of the event's index in its transaction.
func appendEventSource(buf []byte, s *source) []byte {
	buf = append(buf, `,"`+event.FieldSource+`":{"`+event.SourceFlavor+`":"`...)
	buf = append(buf, s.flavor...)
	buf = append(buf, `","`+event.SourceServerID+`":`...)
	buf = strconv.AppendUint(buf, uint64(s.serverID), 10)
	buf = append(buf, `,"`+event.SourceFile+`":`...)
	buf = appendJSONString(buf, s.file)
	buf = append(buf, `,"`+event.SourcePos+`":`...)
	buf = strconv.AppendUint(buf, uint64(s.pos), 10)
	buf = append(buf, `,"`+event.SourceGTID+`":`...)
	gtid := len(buf)
	buf = appendJSONString(buf, s.gtid)
	gtidEnd := len(buf)
	buf = append(buf, `,"`+event.SourceTSSec+`":`...)
	buf = strconv.AppendUint(buf, uint64(s.ts), 10)
	buf = append(buf, `},"`+event.FieldTxn+`":{"`+event.TxnID+`":`...)
	buf = append(buf, buf[gtid:gtidEnd]...) // the same string, encoded once
	return append(buf, `,"`+event.TxnSeq+`":`...)
}

// appendEventSchema appends the rest after the event's index.
func appendEventSchema(buf []byte, t *table) []byte {
	buf = append(buf, "},"...)
	buf = append(buf, t.schema...)
	return append(buf, '}')
}

// readFrame is what the read events of one snapshot chunk share: one
// table and one source (the chunk's high watermark), so only the
// version, the key, the after image and the index differ from row to row.
// appendRead writes from it exactly what appendEvent writes
// (TestAppendReadMatchesAppendEvent), without encoding the shared members
// again for every row.
type readFrame struct {
	table  []byte // appendEventTable
	source []byte // appendEventSource
	schema []byte // appendEventSchema
}

func newReadFrame(t *table, src *source) *readFrame {
	return &readFrame{table: appendEventTable(nil, t), source: appendEventSource(nil, src), schema: appendEventSchema(nil, t)}
}

// appendRead appends the 'r' event of one row, and returns where in buf
// the key's bytes are: the record's key can be that part of its value
// (the envelope's key member is the key as the record carries it).
func (f *readFrame) appendRead(buf []byte, version uint64, txnSeq int, key, after []byte) ([]byte, int) {
	buf = append(buf, `{"`+event.FieldOp+`":"`+string(event.OpRead)+`","`+event.FieldVersion+`":`...)
	buf = strconv.AppendUint(buf, version, 10)
	buf = append(buf, f.table...)
	keyAt := len(buf)
	buf = append(buf, key...)
	buf = append(buf, `,"`+event.FieldBefore+`":null,"`+event.FieldAfter+`":`...)
	buf = append(buf, after...)
	buf = append(buf, f.source...)
	buf = strconv.AppendInt(buf, int64(txnSeq), 10)
	return append(buf, f.schema...), keyAt
}
