package projections

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// ShardValue is the bytes Vitess hashes (keyspace.ID) for a value of a
// shard_by column: MySQL's text for the column's type, as a client reads it and as VTGate
// receives it when a client writes that canonical text. Integers, DECIMAL
// (with its scale), date-time types and strings (UTF-8: VTGate talks
// utf8mb4) are their text, binary types their bytes, BIT(n) its pattern in
// ceil(n/8) big-endian bytes (bitWidth is n; ignored for other values).
// NULL hashes no bytes, as sqltypes.NULL does in Vitess (the same id as
// ”); read keys are never NULL, so it reaches no sink.
func ShardValue(v Value, bitWidth int) []byte {
	switch v.kind {
	case TextValue, BytesValue:
		return v.b
	case UintValue:
		if v.b != nil {
			return v.b // read from a server: its own bytes (ValueOfBits)
		}
		n := max((bitWidth+7)/8, 1)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v.u)
		return b[8-min(n, 8):]
	}
	return nil
}

// Float32ShardText is the text a FLOAT shard_by value hashes, whatever
// text it comes in (a double's, as readside binds and reads FLOATs, or
// the shortest float32 text the events carry): the shortest text of its
// float32, so the projector, verify and a reshard's copy route a row
// alike. text is returned as is when it is no number.
func Float32ShardText(text []byte) []byte {
	f, err := strconv.ParseFloat(string(text), 32)
	if err != nil {
		return text
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 32)
}

// bitWidth is n of an event schema type "bit(n)" (0 for any other type).
func bitWidth(typ string) int {
	inner, ok := strings.CutPrefix(typ, "bit(")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(inner, ")"))
	return n
}

func xxhashString(s string) uint64 { return xxhash.Sum64String(s) }
