package sinks

import (
	"database/sql"
	"slices"
	"strings"

	"github.com/readside/readside/projections"
)

// cells scans a result row into byte cells and gives each cell back as a
// projections.Value: bytes for a binary column, text otherwise. Which
// columns hold bytes is decided once per read from the column types, not
// per cell.
type cells struct {
	bytes  [][]byte
	dest   []any // for rows.Scan: a pointer to each cell
	binary []bool
	// bits marks BIT columns, whose cells (their bytes) are given back as
	// the unsigned number they hold: bound as bytes, a BIT compares as a
	// DECIMAL with them, which strict mode refuses.
	bits []bool
	// years marks YEAR columns (projections.YearText: the server returns
	// the year 0 as "0").
	years []bool
}

func newCells(types []*sql.ColumnType) *cells {
	c := &cells{bytes: make([][]byte, len(types)), dest: make([]any, len(types)), binary: make([]bool, len(types)), bits: make([]bool, len(types)), years: make([]bool, len(types))}
	for i, ct := range types {
		c.dest[i] = &c.bytes[i]
		switch strings.ToUpper(ct.DatabaseTypeName()) {
		case "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "GEOMETRY":
			c.binary[i] = true
		case "BIT":
			c.bits[i] = true
		case "YEAR":
			c.years[i] = true
		}
	}
	return c
}

// value is cell i of the row scanned last (NULL: the zero Value).
func (c *cells) value(i int) projections.Value {
	if c.bytes[i] == nil {
		return projections.Value{}
	}
	if c.bits[i] {
		return projections.ValueOfBits(c.bytes[i])
	}
	b := slices.Clone(c.bytes[i])
	if c.years[i] {
		b = projections.YearText(b)
	}
	if c.binary[i] {
		return projections.ValueOf(b)
	}
	return projections.ValueOf(string(b))
}
