// Package rowdecode is how go-mysql decodes the binlog's rows events for
// readside: the tailer's decoding, shared with bench's raw parse limit B0
// so that B0 decodes exactly as the tailer does. Internal: nothing outside
// readside's own modules uses it.
package rowdecode

import (
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Options sets how go-mysql decodes row values. Decimals come as
// go-mysql's own exact text with the column's scale instead of
// decimal.Decimal, which cost a parse and a StringFixed per value (~10% of
// a narrow drain). DATETIME and TIMESTAMP come as time.Time, formatted by
// the tailer: go-mysql's string path is one fmt.Sprintf per value (~9%);
// zero and pre-1970 DATETIMEs still come as strings. Integers come as
// signed (Signless). A config without its own RowsEventDecodeFunc gets one
// that decodes every rows event that way.
func Options(c *replication.BinlogSyncerConfig) {
	c.UseDecimal = false
	c.ParseTime = true
	c.TimestampStringLocation = time.UTC
	if c.RowsEventDecodeFunc == nil {
		c.RowsEventDecodeFunc = func(e *replication.RowsEvent, data []byte) error {
			pos, err := e.DecodeHeader(data)
			if err != nil {
				return err
			}
			return Signless(e, pos, data)
		}
	}
}

// Signless decodes the rows of e, whose header ends at pos, with every
// integer read as signed: go-mysql builds a map of the table's signedness
// for every row it decodes (5% of the tailer's CPU on a backlog drain,
// bench/results/history/tuning-log.md, entry 26), and without it reads every integer as
// signed, which the tailer's columns reinterpret at their width. A shallow
// copy of the table map per rows event: the table map itself is shared and
// keeps its signedness for building the columns.
func Signless(e *replication.RowsEvent, pos int, data []byte) error {
	tm := e.Table
	if len(tm.SignednessBitmap) > 0 {
		c := *tm
		c.SignednessBitmap = nil
		e.Table = &c
	}
	err := e.DecodeData(pos, data)
	e.Table = tm
	return err
}
