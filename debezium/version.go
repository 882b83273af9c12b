package debezium

// The version of a Debezium change, from where the connector read it.
// docs/design/version.md, "Versions of Debezium's events", argues the
// order; in short:
//
//	version = file number << 33 | (pos + row) << 1 | streamed
//
// Within one server's binlog, (file number, pos + row) increases with
// every row change: pos is where the rows event starts and row the
// change's index among its rows, and every row takes at least one byte
// of its event, so pos + row stays below the next event's start. A
// snapshot row (op r) carries the binlog position the snapshot started
// at, where streaming resumes: its low bit is 0, so it sits below every
// streamed change from that position on, including one at the very same
// position. A record the connector writes again after a restart carries
// the same file, pos and row, so it gets the same version and the sinks'
// version guard absorbs it.

import (
	"fmt"
	"strconv"
	"strings"
)

// Widths of the version's parts: binlog file numbers go up to 2^31-1
// (the servers' own limit), positions are 32-bit in the binlog's event
// headers.
const (
	maxFileNumber = 1<<31 - 1
	maxOffset     = 1<<32 - 1
)

// VersionAt is the version of a change Debezium read at file (its name,
// e.g. mariadb-bin.000042), pos and row; snapshot: a snapshot read (op r).
// It refuses what it cannot order, naming why.
func VersionAt(file string, pos, row int64, snapshot bool) (uint64, error) {
	dot := strings.LastIndexByte(file, '.')
	n, err := strconv.ParseUint(file[dot+1:], 10, 64)
	if dot < 0 || err != nil || n > maxFileNumber {
		return 0, fmt.Errorf("Debezium record at source.file %q: no binlog file number (want name.NNNNNN), which its version is made of", file)
	}
	if pos < 0 || row < 0 || pos+row > maxOffset {
		return 0, fmt.Errorf("Debezium record at %s source.pos %d row %d: outside the binlog's 32-bit positions, which its version is made of", file, pos, row)
	}
	v := n<<33 | uint64(pos+row)<<1
	if !snapshot {
		v |= 1
	}
	if v == 0 {
		return 0, fmt.Errorf("Debezium snapshot record at %s position 0: no version below every change after it", file)
	}
	return v, nil
}
