package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// Event is the part of a change envelope (docs/events.md) the projector
// reads.
type Event struct {
	Op      Op
	Version uint64
	// Before and After are the row images, nil when absent or null:
	// the columns' JSON values as the tailer wrote them (slices of the
	// record value: read-only).
	Before *Image
	After  *Image
	// Schema is shared by the events of one table shape: read-only.
	Schema   *Schema
	Source   *Source
	SourceTS int64 // Source.TS, 0 when absent
	// SnapshotFirst: the first row of a Debezium connector's snapshot run
	// (source.snapshot "first"), which Build tells apart from the start of
	// a topic.
	SnapshotFirst bool
}

// Source is the part of an event's source position the projector uses.
type Source struct {
	TS   int64  `json:"ts_sec"`
	GTID string `json:"gtid"`
}

// DecodeEvent parses a record value.
//
// It is a hand-written scanner rather than encoding/json, which costs
// about 70% of a projector's CPU on narrow rows (reflection, a separate
// validation pass, a copy of every column value). It accepts exactly the
// JSON encoding/json accepts and fills the same fields (FuzzDecodeEvent
// checks it against encoding/json), but leaves column values as slices of
// the record instead of copies.
func DecodeEvent(b []byte) (Event, error) {
	d := Decoder{single: true}
	return d.Decode(b)
}

// Decoder decodes a run of events, such as one poll's, and keeps what
// consecutive events share — the schema member, the source position's
// transaction, the column names — so each is decoded once rather than
// per event. Events are mostly one table's and come a source transaction
// at a time. A Decoder is not safe for concurrent use; its zero value is
// ready.
type Decoder struct {
	schemaRaw []byte // the last schema member decoded (a validated JSON object)
	schema    *Schema
	gtidRaw   []byte // the last source.gtid member, raw, and its value
	gtid      string
	source    *Source           // the last source decoded: read-only, shared by events equal to it
	sourceRaw []byte            // source's member, raw (a validated JSON object), when decoded alone
	names     map[string]string // raw (quoted) column name → name
	// layouts are the column lists of the last images decoded, the most
	// recent first: a table's images name their columns in the same
	// order, so an image's names are one comparison each with the
	// layout's, and its images share it.
	layouts []*Layout
	built   []colName // an image's names while they differ from layouts[0]
	// single: this Decoder decodes one event (DecodeEvent), so keeping
	// anything for the next would only cost copies and a map.
	single bool
	spare  []*Image // images given back (recycle), for the next events
}

// newImage is an empty row image.
func (d *Decoder) newImage() *Image {
	if n := len(d.spare); n > 0 {
		im := d.spare[n-1]
		d.spare = d.spare[:n-1]
		return im
	}
	return &Image{vals: make([]json.RawMessage, 0, 8)}
}

// recycle takes e's row images back for the events decoded after it. Its
// caller is done with e and with anything that could hold its images:
// what Projection.Writes and ParentWrites keep of an image is copied.
func (d *Decoder) Recycle(e Event) {
	for _, im := range [2]*Image{e.Before, e.After} {
		if im != nil && len(d.spare) < 2 {
			clear(im.vals)
			im.cols, im.vals = nil, im.vals[:0]
			d.spare = append(d.spare, im)
		}
	}
}

// maxNames bounds a Decoder's column names (many tables, or schema changes).
const maxNames = 4096

// maxLayouts bounds the column lists a Decoder keeps (a poll is mostly
// one table's, or a join's few).
const maxLayouts = 8

// Decode parses a record value (see DecodeEvent).
func (d *Decoder) Decode(b []byte) (Event, error) {
	var e Event
	s := scanner{b: b, d: d}
	var schema []byte
	var known *Schema
	var op string // checked by finish, with the rest
	err := s.object(func(key []byte) error {
		switch string(key) {
		case `"` + FieldOp + `"`:
			_, err := s.stringInto(&op)
			return err
		case `"` + FieldVersion + `"`:
			return s.uintInto(&e.Version)
		case `"` + FieldBefore + `"`:
			return s.image(&e.Before)
		case `"` + FieldAfter + `"`:
			return s.image(&e.After)
		case `"` + FieldSource + `"`:
			return s.source(&e.Source)
		case `"` + FieldSchema + `"`:
			raw, sc, err := s.schemaValue()
			schema, known = raw, sc
			return err
		case `"` + FieldDB + `"`, `"` + FieldTable + `"`, `"` + FieldKey + `"`, `"` + FieldTxn + `"`:
			// Members the projector does not read, named as the tailer
			// writes them: skipped without the case-folding check below.
			_, err := s.value()
			return err
		}
		if keyFolds(key) {
			// encoding/json matches member names case-insensitively; such
			// a member is not what the tailer writes: take the slow path.
			return errFoldedKey
		}
		_, err := s.value()
		return err
	})
	if err == nil {
		s.ws()
		if s.i != len(s.b) {
			err = s.errorf("data after the event")
		}
	}
	if errors.Is(err, errFoldedKey) {
		return decodeEventStd(b)
	}
	if err != nil {
		return Event{}, fmt.Errorf("decoding change event: %w", err)
	}
	if known != nil {
		e.Schema = known
		schema = nil
	}
	e, err = e.finish(op, schema)
	if err == nil && known == nil && e.Schema != nil && !d.single {
		d.schemaRaw, d.schema = bytes.Clone(schema), e.Schema
	}
	return e, err
}

// decodeEventStd decodes with encoding/json: envelopes not written by the
// tailer (member names differing in case only).
func decodeEventStd(b []byte) (Event, error) {
	var w struct {
		Op      string                     `json:"op"`
		Version uint64                     `json:"version"`
		Before  map[string]json.RawMessage `json:"before"`
		After   map[string]json.RawMessage `json:"after"`
		Source  *Source                    `json:"source"`
		Schema  json.RawMessage            `json:"schema"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("decoding change event: %w", err)
	}
	e := Event{Version: w.Version, Before: ImageOf(w.Before), After: ImageOf(w.After), Source: w.Source}
	return e.finish(w.Op, w.Schema)
}

func (e Event) finish(op string, schema []byte) (Event, error) {
	if len(schema) > 0 && string(schema) != "null" {
		sc, err := schemas.get(schema)
		if err != nil {
			return e, fmt.Errorf("decoding change event: %w", err)
		}
		e.Schema = sc
	}
	var ok bool
	if e.Op, ok = ParseOp(op); !ok {
		return e, fmt.Errorf("change event with unknown op %q", op)
	}
	if e.Version == 0 {
		return e, fmt.Errorf("change event without a version")
	}
	if e.Source != nil {
		e.SourceTS = e.Source.TS
	}
	return e, nil
}

var errFoldedKey = errors.New("member name differs from a field name in case only")

// keyFolds reports whether a raw member name is one of the envelope's
// field names in another case (or escaped), which encoding/json would
// still match.
func keyFolds(raw []byte) bool {
	for _, c := range raw {
		if c >= 'A' && c <= 'Z' || c == '\\' || c >= 0x80 {
			return true
		}
	}
	return false
}

// Schema is the schema member of an event.
type Schema = struct {
	Columns map[string]string `json:"columns"`
}

// schemaCache shares the decoded schema member between events: every
// event of a table carries the same one, and decoding its column map is
// a third of an event's decoding. Read-only once cached.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*Schema
}

var schemas = &schemaCache{m: map[string]*Schema{}}

// schemaValue scans the schema member. When its bytes are those of the
// schema the decoder last decoded — a complete JSON object already
// validated, and a JSON object ends where its bytes end — they are taken
// without a second scan, with that schema (sc): the schema is a third of
// a narrow event's bytes.
func (s *scanner) schemaValue() (raw []byte, sc *Schema, err error) {
	s.ws()
	if d := s.d; d.schema != nil && bytes.HasPrefix(s.b[s.i:], d.schemaRaw) {
		raw = s.b[s.i : s.i+len(d.schemaRaw)]
		s.i += len(raw)
		return raw, d.schema, nil
	}
	raw, err = s.value()
	return raw, nil, err
}

func (c *schemaCache) get(raw []byte) (*Schema, error) {
	c.mu.Lock()
	s, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s = new(Schema)
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= 1024 { // many tables or schema changes: start over
		clear(c.m)
	}
	c.m[string(raw)] = s
	c.mu.Unlock()
	return s, nil
}

// image decodes a row image: the columns' raw values, in order. null
// clears it; a repeated member adds to the same image (as encoding/json
// adds to the same map).
func (s *scanner) image(dst **Image) error {
	if null, err := s.null(); null || err != nil {
		*dst = nil
		return err
	}
	d, im := s.d, *dst
	if im == nil {
		im = d.newImage()
		*dst = im
	}
	// The names are compared with the last layout's while they match;
	// from the first that differs they are collected in d.built.
	var last *Layout
	if len(d.layouts) > 0 {
		last = d.layouts[0]
	}
	k, matching := len(im.vals), true
	d.built = d.built[:0]
	if k > 0 && im.cols != last { // a repeated member after another layout's
		d.built = append(d.built, im.cols.cols...)
		matching = false
	}
	err := s.object(func(key []byte) error {
		if matching && last != nil && k < len(last.cols) && last.cols[k].raw == string(key) {
			k++
		} else {
			if matching {
				if last != nil {
					d.built = append(d.built, last.cols[:k]...)
				}
				matching = false
			}
			name, err := d.name(key)
			if err != nil {
				return err
			}
			d.built = append(d.built, colName{string(key), name})
			k++
		}
		raw, err := s.value()
		im.vals = append(im.vals, raw)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case matching && last != nil && k == len(last.cols):
		im.cols = last
	case matching && k == 0:
		im.cols = emptyLayout
	default:
		if matching { // a prefix of the last layout
			d.built = append(d.built, last.cols[:k]...)
		}
		im.cols = d.layout(d.built)
	}
	return nil
}

// layout returns the kept layout with cols' names, moved to the front, or
// a new one (kept when the Decoder keeps anything).
func (d *Decoder) layout(cols []colName) *Layout {
	for i, l := range d.layouts {
		if l.sameRaw(cols) {
			copy(d.layouts[1:i+1], d.layouts[:i])
			d.layouts[0] = l
			return l
		}
	}
	l := newLayout(slices.Clone(cols))
	if !d.single {
		if len(d.layouts) < maxLayouts {
			d.layouts = append(d.layouts, nil)
		}
		copy(d.layouts[1:], d.layouts)
		d.layouts[0] = l
	}
	return l
}

// source decodes the source member's ts_sec and gtid. An event whose
// source equals the previous one's (the events of a source transaction)
// shares its Source.
func (s *scanner) source(dst **Source) error {
	s.ws()
	d, start, first := s.d, s.i, *dst == nil
	if first && len(d.sourceRaw) > 0 && bytes.HasPrefix(s.b[s.i:], d.sourceRaw) {
		// The bytes of the last source member decoded, a complete JSON
		// object: the same value (see schemaValue). Consecutive events
		// of a rows event have the same source.
		s.i += len(d.sourceRaw)
		*dst = d.source
		return nil
	}
	if null, err := s.null(); null || err != nil {
		*dst = nil
		return err
	}
	var src Source
	if !first { // a repeated member adds to the first, as in encoding/json
		src = **dst
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case `"` + SourceTSSec + `"`:
			raw, err := s.value()
			if err != nil || string(raw) == "null" {
				return err
			}
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return s.errorf("source.ts_sec: want an integer, got %s", raw)
			}
			src.TS = v
			return nil
		case `"` + SourceGTID + `"`:
			return s.gtidInto(&src.GTID)
		}
		if keyFolds(key) {
			return errFoldedKey
		}
		_, err := s.value()
		return err
	})
	if err != nil {
		return err
	}
	if d.source != nil && *d.source == src {
		*dst = d.source
	} else {
		p := new(Source) // allocated here, not as src: most events share the last one
		*p = src
		d.source, *dst = p, p
	}
	d.sourceRaw = d.sourceRaw[:0] // a repeated member's source is not its raw bytes
	if first && !d.single {
		d.sourceRaw = append(d.sourceRaw, s.b[start:s.i]...)
	}
	return nil
}

// gtidInto decodes source.gtid (or null, which leaves dst alone), reusing
// the previous event's string when the raw bytes are the same.
func (s *scanner) gtidInto(dst *string) error {
	s.ws()
	if d := s.d; d.gtidRaw != nil && bytes.HasPrefix(s.b[s.i:], d.gtidRaw) {
		// A JSON string ends at its closing quote: the same bytes are the
		// same complete value.
		s.i += len(d.gtidRaw)
		*dst = d.gtid
		return nil
	}
	raw, err := s.stringInto(dst)
	if err == nil && raw != nil && !s.d.single {
		s.d.gtidRaw, s.d.gtid = bytes.Clone(raw), *dst
	}
	return err
}

// name decodes a raw (quoted) column name, each distinct one once.
func (d *Decoder) name(raw []byte) (string, error) {
	if n, ok := d.names[string(raw)]; ok {
		return n, nil
	}
	n, err := Unquote(raw)
	if err != nil || d.single {
		return n, err
	}
	if d.names == nil || len(d.names) >= maxNames {
		d.names = make(map[string]string, 16)
	}
	d.names[string(raw)] = n
	return n, nil
}
