package sinks

// FLOAT columns read into Go. The text protocol every sink connection
// speaks (interpolateParams) prints a FLOAT with six significant digits:
// 16777215 comes back as 16777200, 1.2345678 as 1.23457. A value readside
// reads from a sink table and then writes or matches again — a stored
// contribution's group and values, a distinct value, a joined group —
// would become another float32: a group row "1.23457" beside the real
// one, a distinct value whose reference count is never seen to reach 0.
// A DOUBLE prints the shortest text that reads back as the same double,
// and every float32 is a double: so a SELECT into Go reads such a column
// as `col + 0e0`, the same value as a DOUBLE, which binds back to the
// same float32 (projections' floatValue binds the events' FLOATs so too).
// `+ 0e0` rather than CAST(… AS DOUBLE), which MySQL has only from
// 8.0.17; it reads −0 as 0, which every comparison takes for one value.

import (
	"sync"

	"github.com/readside/readside/projections"
)

// floatColumns holds, per projection (*projections.Projection), its sink
// tables' FLOAT columns: table → column → true (learnSinkColumns). A
// projection whose tables were never read has none.
var floatColumns sync.Map

// exactRead is ref, a column of p's sink table as a statement writes it
// ("c.`g_price`"), as a SELECT whose values readside reads into Go must
// select it: as a DOUBLE when the column is a FLOAT.
func exactRead(p *projections.Projection, table, ref string) string {
	if floatColumn(p, table, columnName(ref)) {
		return "(" + ref + " + 0e0)"
	}
	return ref
}

// exactReads is exactRead of each of refs.
func exactReads(p *projections.Projection, table string, refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = exactRead(p, table, r)
	}
	return out
}

// floatColumn reports whether column col of p's sink table is a FLOAT.
func floatColumn(p *projections.Projection, table, col string) bool {
	v, ok := floatColumns.Load(p)
	return ok && v.(map[string]map[string]bool)[table][col]
}
