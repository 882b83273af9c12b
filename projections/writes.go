package projections

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Event is the part of a change envelope (docs/events.md) the projector
// reads.
type Event struct {
	Op      string                     `json:"op"`
	Version uint64                     `json:"version"`
	Before  map[string]json.RawMessage `json:"before"`
	After   map[string]json.RawMessage `json:"after"`
	Schema  *struct {
		Columns map[string]string `json:"columns"`
	} `json:"schema"`
}

// DecodeEvent parses a record value.
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("decoding change event: %w", err)
	}
	switch e.Op {
	case "c", "u", "d", "r", "t":
	default:
		return e, fmt.Errorf("change event with unknown op %q", e.Op)
	}
	if e.Version == 0 {
		return e, fmt.Errorf("change event without a version")
	}
	return e, nil
}

// MaxKeyBytes bounds a read key's encoded text (the tombstone table's key).
const MaxKeyBytes = 2048

// Write is one effect on a read table.
type Write struct {
	Kind    WriteKind
	Key     string // canonical text of the read key (tombstones, coalescing)
	Values  []any  // every read column in Projection.Columns order (upserts), or the key columns (deletes)
	Version uint64
}

// WriteKind says what a Write does.
type WriteKind uint8

const (
	Upsert   WriteKind = iota // insert or move forward to Version
	Delete                    // remove, and remember Version so nothing older comes back
	Truncate                  // remove every row older than Version
)

// Writes maps one event to its effects on p's read table. An update that
// changes the read key (a key move) deletes the old read row and writes the
// new one, both at the event's version.
func (p *Projection) Writes(e Event) ([]Write, error) {
	switch e.Op {
	case "t":
		return []Write{{Kind: Truncate, Version: e.Version}}, nil
	case "c", "r":
		w, err := p.upsert(e, e.After)
		return []Write{w}, err
	case "d":
		w, err := p.delete(e, e.Before)
		return []Write{w}, err
	}
	// "u"
	oldKey, err := p.keyText(e.Before)
	if err != nil {
		return nil, err
	}
	up, err := p.upsert(e, e.After)
	if err != nil {
		return nil, err
	}
	if oldKey == up.Key {
		return []Write{up}, nil
	}
	del, err := p.delete(e, e.Before)
	return []Write{del, up}, err
}

func (p *Projection) upsert(e Event, img map[string]json.RawMessage) (Write, error) {
	if img == nil {
		return Write{}, fmt.Errorf("%s event without an after image", e.Op)
	}
	key, err := p.keyText(img)
	if err != nil {
		return Write{}, err
	}
	vals := make([]any, len(p.Columns))
	for i, c := range p.Columns {
		if vals[i], err = bindValue(img, c.Source, e); err != nil {
			return Write{}, err
		}
	}
	return Write{Kind: Upsert, Key: key, Values: vals, Version: e.Version}, nil
}

func (p *Projection) delete(e Event, img map[string]json.RawMessage) (Write, error) {
	if img == nil {
		return Write{}, fmt.Errorf("%s event without a before image", e.Op)
	}
	key, err := p.keyText(img)
	if err != nil {
		return Write{}, err
	}
	vals := make([]any, len(p.Key))
	for i := range p.Key {
		if vals[i], err = bindValue(img, p.Columns[i].Source, e); err != nil {
			return Write{}, err
		}
	}
	return Write{Kind: Delete, Key: key, Values: vals, Version: e.Version}, nil
}

// keyText is the read key's values as the tailer encoded them, joined: the
// tailer's encoding is canonical, so equal keys have equal text.
func (p *Projection) keyText(img map[string]json.RawMessage) (string, error) {
	var b strings.Builder
	for i := range p.Key {
		raw, ok := img[p.Columns[i].Source]
		if !ok {
			return "", fmt.Errorf("source column %q of key column %q is missing from the event (excluded, or dropped by DDL?)", p.Columns[i].Source, p.Key[i])
		}
		if string(raw) == "null" {
			return "", fmt.Errorf("key column %q is NULL in the source row", p.Key[i])
		}
		if i > 0 {
			b.WriteByte(0)
		}
		b.Write(raw)
	}
	if b.Len() > MaxKeyBytes {
		return "", fmt.Errorf("read key is %d bytes encoded, over the %d bytes readside's tombstones can hold: key on shorter columns", b.Len(), MaxKeyBytes)
	}
	return b.String(), nil
}

// bindValue turns an event value into a SQL parameter: numbers keep their
// exact text, binary columns (base64 in events) become bytes.
func bindValue(img map[string]json.RawMessage, col string, e Event) (any, error) {
	raw, ok := img[col]
	if !ok {
		return nil, fmt.Errorf("source column %q is missing from the event (excluded, or dropped by DDL?)", col)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > 0 && raw[0] != '"' {
		if e.Schema != nil && strings.HasPrefix(e.Schema.Columns[col], "bit") {
			// A string would be read as the bit pattern of its characters.
			return strconv.ParseUint(string(raw), 10, 64)
		}
		return string(raw), nil // a JSON number, bound as its exact text
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("column %q: %w", col, err)
	}
	if e.Schema != nil && isBinaryType(e.Schema.Columns[col]) {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("column %q: binary value is not base64: %w", col, err)
		}
		return b, nil
	}
	return s, nil
}

func isBinaryType(t string) bool {
	return strings.HasPrefix(t, "binary") || t == "varbinary" || t == "blob" || t == "geometry"
}
