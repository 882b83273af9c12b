package projections

import (
	"encoding/json"
	"sort"
)

// Image is a row image of an event (its before or after member): each
// column's JSON value as the tailer wrote it, in the order it wrote them.
// A table's images share their column names (a layout), so a projection
// finds its columns by position, worked out once per layout (imagePlan),
// rather than by a name lookup per column per row. Read-only once
// decoded; values are slices of the record.
type Image struct {
	cols *layout
	vals []json.RawMessage
}

// layout is the column names of a run of images, in order. Read-only once
// made: images of many events share it.
type layout struct {
	cols []colName
	// index maps a name to its last position (a repeated member's last
	// value wins, as in encoding/json); only for wide layouts, where a
	// linear search would cost more than the map.
	index map[string]int
}

// colName is a column name raw (quoted, as in the record) and decoded.
type colName struct{ raw, name string }

const linearLayout = 16 // layouts up to this many columns are searched, not indexed

func newLayout(cols []colName) *layout {
	l := &layout{cols: cols}
	if len(cols) > linearLayout {
		l.index = make(map[string]int, len(cols))
		for i, c := range cols {
			l.index[c.name] = i
		}
	}
	return l
}

// pos is name's position in the layout (its last, when repeated), or -1.
func (l *layout) pos(name string) int {
	if l.index != nil {
		if i, ok := l.index[name]; ok {
			return i
		}
		return -1
	}
	for i := len(l.cols) - 1; i >= 0; i-- {
		if l.cols[i].name == name {
			return i
		}
	}
	return -1
}

// sameRaw reports whether the layout's raw names are raws.
func (l *layout) sameRaw(cols []colName) bool {
	if len(l.cols) != len(cols) {
		return false
	}
	for i := range cols {
		if l.cols[i].raw != cols[i].raw {
			return false
		}
	}
	return true
}

var emptyLayout = newLayout(nil)

// Get returns column name's value, and whether the image has it.
func (im *Image) Get(name string) (json.RawMessage, bool) {
	if i := im.cols.pos(name); i >= 0 {
		return im.vals[i], true
	}
	return nil, false
}

// Map returns the image as a map (tests, and what reads images by name).
func (im *Image) Map() map[string]json.RawMessage {
	if im == nil {
		return nil
	}
	m := make(map[string]json.RawMessage, len(im.vals))
	for i, c := range im.cols.cols {
		m[c.name] = im.vals[i]
	}
	return m
}

// ImageOf makes an image of m (columns in name order): events not decoded
// by a Decoder (encoding/json's slow path, tests).
func ImageOf(m map[string]json.RawMessage) *Image {
	if m == nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	vals := make([]json.RawMessage, len(names))
	for i, n := range names {
		vals[i] = m[n]
	}
	return ImageFrom(names, vals)
}

// ImageFrom makes an image of the columns names with the values vals, in
// the same order: rows read from elsewhere than a record, such as
// verify's source rows. The raw names are left out: only a Decoder
// compares them, with the layouts it made itself.
func ImageFrom(names []string, vals []json.RawMessage) *Image {
	cols := make([]colName, len(names))
	for i, n := range names {
		cols[i].name = n
	}
	return &Image{cols: newLayout(cols), vals: vals}
}

// imagePlan is where a projection's columns are in the images of one
// layout, and how each value binds under one schema (see Decoder: events
// of a table share both, so the plan is made once per run of them).
type imagePlan struct {
	layout *layout
	schema *eventSchema
	pos    []int      // per Projection.Columns: position in the image, -1 if absent
	kinds  []bindKind // per Projection.Columns
	joins  [][]int    // per join, per On: position of the child's column
	// args are, per computed column, the positions of the source columns
	// its expression reads (nil for a plain column; nil in all when the
	// projection computes none).
	args [][]int
}

// plans caches a projection's last image plan; the zero value is ready.
// Not safe for concurrent use.
type plans struct{ last *imagePlan }

func (ps *plans) of(p *Projection, im *Image, sc *eventSchema) *imagePlan {
	if pl := ps.last; pl != nil && pl.layout == im.cols && pl.schema == sc {
		return pl
	}
	pl := &imagePlan{layout: im.cols, schema: sc, pos: make([]int, len(p.Columns)), kinds: make([]bindKind, len(p.Columns))}
	for i, c := range p.Columns {
		pl.pos[i] = im.cols.pos(c.Source)
		pl.kinds[i] = kindOf(sc, c.Source)
		if c.Computed() && c.Expr != nil {
			if pl.args == nil {
				pl.args = make([][]int, len(p.Columns))
			}
			pl.args[i] = make([]int, 0, len(c.Expr.Columns()))
			for _, name := range c.Expr.Columns() {
				pl.args[i] = append(pl.args[i], im.cols.pos(name))
			}
		}
	}
	for _, j := range p.Joins {
		pos := make([]int, len(j.On))
		for i, on := range j.On {
			pos[i] = im.cols.pos(on.Child)
		}
		pl.joins = append(pl.joins, pos)
	}
	ps.last = pl
	return pl
}

// at is the value at position i, or absent when i is -1.
func (im *Image) at(i int) (json.RawMessage, bool) {
	if i < 0 {
		return nil, false
	}
	return im.vals[i], true
}
