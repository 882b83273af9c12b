// Package event is the contract between the tailer, which writes change
// events (cdc), and everything that reads them (projections, verify,
// status): the envelope's op letters and member names (docs/events.md)
// and the names of the topics and consumer groups both sides meet on.
// It holds no I/O: a change to anything here is a change of the wire
// format or of where a deployment's data lives.
package event

// Op is the kind of change an event records: one byte, written in the
// envelope's "op" member as a one-letter string.
type Op byte

const (
	OpCreate   Op = 'c' // row inserted (or moved here by a primary key change)
	OpUpdate   Op = 'u' // row updated in place
	OpDelete   Op = 'd' // row deleted (or moved away by a primary key change)
	OpRead     Op = 'r' // row read by a snapshot or a verify repair
	OpTruncate Op = 't' // table truncated: consumers drop every row of it
)

// Valid reports whether o is one of the ops above.
func (o Op) Valid() bool {
	switch o {
	case OpCreate, OpUpdate, OpDelete, OpRead, OpTruncate:
		return true
	}
	return false
}

// String is the op's wire letter; "" for the zero Op (no op member).
func (o Op) String() string {
	if o == 0 {
		return ""
	}
	return string(rune(o))
}

// ParseOp reads an op member's string value. Anything but one of the
// ops' letters is refused (ok false): a reader must not guess what an
// unknown change means.
func ParseOp(s string) (o Op, ok bool) {
	if len(s) != 1 {
		return 0, false
	}
	o = Op(s[0])
	return o, o.Valid()
}
