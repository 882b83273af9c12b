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
		n := max((bitWidth+7)/8, 1)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v.u)
		return b[8-min(n, 8):]
	}
	return nil
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
