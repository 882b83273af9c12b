package projections

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"strconv"
)

// Value is one column's value on its way to the sink: SQL NULL, text (a
// number's exact digits or a string's characters), bytes (a binary
// column's) or an unsigned integer (a bit column's pattern).
//
// Text is usually a slice of the polled record's value rather than a
// copy: a decoded value was one allocation and one interface conversion
// per column, the projector's largest share of garbage
// (bench/results/history/tuning-log.md, entry 32). So a batch's values keep the polled
// records' bytes (the decompressed fetch buffers) alive until the batch
// is applied, even where the writes drop their records (Write.From, see
// prepare): ~20 MiB more at the projector's narrow-insert drain peak.
// That relies on those bytes never being reused: readside gives franz-go
// no decompression or record pools and never recycles records. Read-only.
type Value struct {
	b    []byte
	u    uint64
	kind ValueKind
}

// ValueKind says which of a Value's forms it holds.
type ValueKind uint8

const (
	NullValue  ValueKind = iota // SQL NULL
	TextValue                   // Bytes is the text
	BytesValue                  // Bytes is a binary value
	UintValue                   // Uint is the value
)

// Kind is the value's form.
func (v *Value) Kind() ValueKind { return v.kind }

// Bytes is the text or binary value (read-only).
func (v *Value) Bytes() []byte { return v.b }

// Uint is an unsigned value.
func (v *Value) Uint() uint64 { return v.u }

// Clone is v with bytes of its own, for keeping past the batch whose
// records it may point into.
func (v Value) Clone() Value {
	v.b = bytes.Clone(v.b)
	return v
}

// Value makes it a database/sql parameter: nil, a string, []byte or a
// uint64 (statements sent with parameters; see sinks).
func (v *Value) Value() (driver.Value, error) {
	switch v.kind {
	case TextValue:
		return string(v.b), nil
	case BytesValue:
		return v.b, nil
	case UintValue:
		return v.u, nil
	}
	return nil, nil
}

func (v Value) String() string {
	switch v.kind {
	case TextValue:
		return strconv.Quote(string(v.b))
	case BytesValue:
		return fmt.Sprintf("0x%x", v.b)
	case UintValue:
		return strconv.FormatUint(v.u, 10)
	}
	return "NULL"
}

// ValueOf makes a value of a Go one — nil, a string, []byte, an integer
// (as its decimal text) or a uint64 (as an unsigned integer) — for
// writes made outside Build (tests, tools).
func ValueOf(x any) Value {
	switch x := x.(type) {
	case nil:
		return Value{}
	case string:
		return Value{kind: TextValue, b: []byte(x)}
	case []byte:
		if x == nil {
			return Value{}
		}
		return Value{kind: BytesValue, b: x}
	case int:
		return Value{kind: TextValue, b: strconv.AppendInt(nil, int64(x), 10)}
	case int64:
		return Value{kind: TextValue, b: strconv.AppendInt(nil, x, 10)}
	case uint64:
		return Value{kind: UintValue, u: x}
	}
	panic(fmt.Sprintf("projections.ValueOf: a %T", x))
}

// ValueOfBits is a BIT column's value as a server returns it, its bytes
// big-endian: the unsigned number they hold (a BIT compares as a number
// with a parameter, as a DECIMAL with bytes), keeping the bytes, which
// are what its shard_by value hashes (ShardValue).
func ValueOfBits(b []byte) Value {
	var u uint64
	for _, x := range b {
		u = u<<8 | uint64(x)
	}
	return Value{kind: UintValue, u: u, b: bytes.Clone(b)}
}

// ValuesOf is ValueOf of each.
func ValuesOf(xs ...any) []Value {
	vs := make([]Value, len(xs))
	for i, x := range xs {
		vs[i] = ValueOf(x)
	}
	return vs
}
