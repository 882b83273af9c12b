package event

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
	cols *Layout
	vals []json.RawMessage
}

// Layout is the column names of a run of images, in order. Read-only once
// made: images of many events share it.
type Layout struct {
	cols []colName
	// index maps a name to its last position (a repeated member's last
	// value wins, as in encoding/json); only for wide layouts, where a
	// linear search would cost more than the map.
	index map[string]int
}

// colName is a column name raw (quoted, as in the record) and decoded.
type colName struct{ raw, name string }

const linearLayout = 16 // layouts up to this many columns are searched, not indexed

func newLayout(cols []colName) *Layout {
	l := &Layout{cols: cols}
	if len(cols) > linearLayout {
		l.index = make(map[string]int, len(cols))
		for i, c := range cols {
			l.index[c.name] = i
		}
	}
	return l
}

// Pos is name's position in the layout (its last, when repeated), or -1.
func (l *Layout) Pos(name string) int {
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
func (l *Layout) sameRaw(cols []colName) bool {
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

// Layout is the image's column names: images of one table shape share it,
// so a reader that finds its columns by position (Pos) works them out
// once per layout, comparing layouts by pointer.
func (im *Image) Layout() *Layout { return im.cols }

// Get returns column name's value, and whether the image has it.
func (im *Image) Get(name string) (json.RawMessage, bool) {
	if i := im.Layout().Pos(name); i >= 0 {
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

// At is the value at position i, or absent when i is -1.
func (im *Image) At(i int) (json.RawMessage, bool) {
	if i < 0 {
		return nil, false
	}
	return im.vals[i], true
}

// LayoutOf is a layout of names, in order, for images made by ImageWith:
// a reader of another envelope (package debezium) makes one per table
// shape and shares it between that shape's images, as a Decoder does, so
// a projection works out its columns' positions once per shape.
func LayoutOf(names []string) *Layout {
	cols := make([]colName, len(names))
	for i, n := range names {
		cols[i].name = n
	}
	return newLayout(cols)
}

// Names are the layout's column names, in order.
func (l *Layout) Names() []string {
	out := make([]string, len(l.cols))
	for i, c := range l.cols {
		out[i] = c.name
	}
	return out
}

// Values are the image's values, in its layout's order (shared: the
// caller does not change them).
func (im *Image) Values() []json.RawMessage { return im.vals }

// ImageWith makes an image of vals under the layout l (one value per
// name, in l's order).
func ImageWith(l *Layout, vals []json.RawMessage) *Image {
	return &Image{cols: l, vals: vals}
}
