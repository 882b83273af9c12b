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
}

func newCells(types []*sql.ColumnType) *cells {
	c := &cells{bytes: make([][]byte, len(types)), dest: make([]any, len(types)), binary: make([]bool, len(types))}
	for i, ct := range types {
		c.dest[i] = &c.bytes[i]
		switch strings.ToUpper(ct.DatabaseTypeName()) {
		case "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "GEOMETRY", "BIT":
			c.binary[i] = true
		}
	}
	return c
}

// value is cell i of the row scanned last (NULL: the zero Value).
func (c *cells) value(i int) projections.Value {
	if c.bytes[i] == nil {
		return projections.Value{}
	}
	b := slices.Clone(c.bytes[i])
	if c.binary[i] {
		return projections.ValueOf(b)
	}
	return projections.ValueOf(string(b))
}
