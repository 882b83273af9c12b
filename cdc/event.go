package cdc

import (
	"strconv"
)

// Op is the kind of change an event records (docs/events.md).
type Op byte

const (
	OpCreate   Op = 'c' // row inserted (or moved here by a primary key change)
	OpUpdate   Op = 'u' // row updated in place
	OpDelete   Op = 'd' // row deleted (or moved away by a primary key change)
	OpRead     Op = 'r' // row read by a snapshot
	OpTruncate Op = 't' // table truncated: consumers drop every row of it
)

// source describes where in the binlog an event came from.
type source struct {
	flavor   string
	serverID uint32
	file     string
	pos      uint32
	gtid     string // the transaction's GTID ("" without GTIDs)
	ts       uint32 // commit time, Unix seconds (binlog header resolution)
}

// envelope is everything an event carries besides the row images.
type envelope struct {
	op      Op
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
	buf = append(buf, `,"after":`...)
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
	buf = append(buf, `,"after":`...)
	if after == nil {
		buf = append(buf, "null"...)
	} else if buf, err = t.appendRow(buf, after); err != nil {
		return nil, err
	}
	return appendEventTail(buf, t, e), nil
}

// appendEventHead appends the envelope up to the before image's value.
func appendEventHead(buf []byte, t *table, e envelope, key []byte) []byte {
	buf = append(buf, `{"op":"`...)
	buf = append(buf, byte(e.op))
	buf = append(buf, `","version":`...)
	buf = strconv.AppendUint(buf, e.version, 10)
	buf = append(buf, `,"db":`...)
	buf = appendJSONString(buf, t.db)
	buf = append(buf, `,"table":`...)
	buf = appendJSONString(buf, t.name)
	buf = append(buf, `,"key":`...)
	if key == nil {
		buf = append(buf, "null"...)
	}
	buf = append(buf, key...)
	return append(buf, `,"before":`...)
}

// appendEventTail appends the envelope after the after image.
func appendEventTail(buf []byte, t *table, e envelope) []byte {
	s := e.src
	buf = append(buf, `,"source":{"flavor":"`...)
	buf = append(buf, s.flavor...)
	buf = append(buf, `","server_id":`...)
	buf = strconv.AppendUint(buf, uint64(s.serverID), 10)
	buf = append(buf, `,"file":`...)
	buf = appendJSONString(buf, s.file)
	buf = append(buf, `,"pos":`...)
	buf = strconv.AppendUint(buf, uint64(s.pos), 10)
	buf = append(buf, `,"gtid":`...)
	gtid := len(buf)
	buf = appendJSONString(buf, s.gtid)
	gtidEnd := len(buf)
	buf = append(buf, `,"ts_sec":`...)
	buf = strconv.AppendUint(buf, uint64(s.ts), 10)
	buf = append(buf, `},"txn":{"id":`...)
	buf = append(buf, buf[gtid:gtidEnd]...) // the same string, encoded once
	buf = append(buf, `,"seq":`...)
	buf = strconv.AppendInt(buf, int64(e.txnSeq), 10)
	buf = append(buf, "},"...)
	buf = append(buf, t.schema...)
	return append(buf, '}')
}
