package projections

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
)

// MaxKeyBytes bounds a read key's encoded text (the tombstone table's key).
const MaxKeyBytes = 2048

// Write is one effect on a read table.
type Write struct {
	Kind    WriteKind
	Key     string  // canonical text of the read key (tombstones, coalescing)
	Values  []Value // every read column in Projection.Columns order (upserts), or the key columns (deletes)
	Version uint64
	// KeyspaceID routes the row to a shard: Vitess's keyspace id of its
	// shard_by value (keyspace.ID; 0 when the projection has no shard_by).
	KeyspaceID uint64
	// Parents holds, for upserts, the child's reference to each join's
	// parent, in Projection.Joins order.
	Parents []ParentRef
	// From is the record the write came from (for dead-lettering).
	From *Record
}

// ParentRef is a child row's join key for one join.
type ParentRef struct {
	Key    string  // canonical text; "" when a key column is NULL (no parent)
	Values []Value // the key values, in Join.On order
}

// ParentWrite is one parent-row change for a join: the new state of the
// parent row under its join key (Values nil when the row is absent —
// deleted — as of Version), or a truncation of the parent table.
type ParentWrite struct {
	Join      int // index into Projection.Joins
	Key       string
	KeyValues []Value // in Join.On order
	Values    []Value // in Join.Columns order; nil: no parent row
	Version   uint64
	Truncate  bool
	From      *Record
}

// WriteKind says what a Write does.
type WriteKind uint8

const (
	Upsert   WriteKind = iota // insert or move forward to Version
	Delete                    // remove, and remember Version so nothing older comes back
	Truncate                  // remove every row older than Version
)

// Writes maps one event of the projection's own source table to its
// effects on the read table. An update that changes the read key (a key
// move) deletes the old read row and writes the new one, both at the
// event's version; entering or leaving the where filter works the same.
//
// The result depends only on the event itself, never on what came before
// it, so that the newest version of each row decides the read table no
// matter in which order or how often events arrive:
//   - c passing the filter upserts; failing it writes nothing (the row did
//     not exist before a c, so the read key's previous event already
//     removed it).
//   - r passing upserts; failing deletes (a snapshot or repair may face a
//     stale read row).
//   - u upserts the after image if it passes, and deletes the before
//     image's read key if that passed and the key moved or the after image
//     fails.
//   - d deletes the before image's read key if it passed.
func (p *Projection) Writes(e event.Event) ([]Write, error) { return p.appendWrites(nil, e, nil) }

// appendWrites appends Writes(e) to dst (a batch's writes: no slice per
// event); after an error dst comes back as it was. ps, when not nil,
// carries the image plan from event to event.
func (p *Projection) appendWrites(dst []Write, e event.Event, ps *plans) ([]Write, error) {
	if e.Op == event.OpTruncate {
		return append(dst, Write{Kind: Truncate, Version: e.Version}), nil
	}
	var afterIn, beforeIn bool
	var err error
	if e.Op != event.OpDelete {
		if afterIn, err = p.passes(e.After, "after"); err != nil {
			return dst, err
		}
	}
	if e.Op == event.OpUpdate || e.Op == event.OpDelete {
		if beforeIn, err = p.passes(e.Before, "before"); err != nil {
			return dst, err
		}
	}
	one := func(w Write, err error) ([]Write, error) {
		if err != nil {
			return dst, err
		}
		return append(dst, w), nil
	}
	switch e.Op {
	case event.OpCreate, event.OpRead:
		switch {
		case afterIn:
			return one(p.upsert(e, e.After, ps))
		case e.Op == event.OpRead && p.nullKey(e.After, e.Schema, ps):
			// Kept out by the filter (NullableKeys): no read row can have
			// a NULL key, so there is nothing to delete.
			return dst, nil
		case e.Op == event.OpRead:
			return one(p.delete(e, e.After, ps))
		}
		return dst, nil
	case event.OpDelete:
		if !beforeIn {
			return dst, nil
		}
		return one(p.delete(e, e.Before, ps))
	}
	// An update: the old read key's delete, when the key moved or the row left
	// the filter, goes before the upsert.
	var up Write
	if afterIn {
		if up, err = p.upsert(e, e.After, ps); err != nil {
			return dst, err
		}
	}
	if beforeIn {
		if e.Before == nil { // no filter to say so: passes takes a missing image
			return dst, fmt.Errorf("%s event without a before image", e.Op)
		}
		oldKey, err := p.keyText(e.Before, p.plan(ps, e.Before, e.Schema), nil)
		if err != nil {
			return dst, err
		}
		if !afterIn || oldKey != up.Key {
			del, err := p.delete(e, e.Before, ps)
			if err != nil {
				return dst, err
			}
			dst = append(dst, del)
		}
	}
	if afterIn {
		dst = append(dst, up)
	}
	return dst, nil
}

func (p *Projection) passes(img *event.Image, which string) (bool, error) {
	if p.Where == nil {
		return true, nil
	}
	if img == nil {
		return false, fmt.Errorf("event without a %s image", which)
	}
	ok, err := p.Where.Match(img)
	if err != nil {
		return false, fmt.Errorf("projections.%s.where on the %s image: %w", p.Name, which, err)
	}
	return ok, nil
}

// ParentWrites maps one event of join j's parent table to the parent
// state changes it makes: the new parent row under its join key, the old
// key left without a parent when the key itself changed (same version),
// or a truncation.
func (p *Projection) ParentWrites(j int, e event.Event) ([]ParentWrite, error) {
	return p.Joins[j].writes(j, e)
}

// writes maps one event of the join's parent table to its parent state
// changes, each tagged j (ParentWrites).
func (join *Join) writes(j int, e event.Event) ([]ParentWrite, error) {
	switch e.Op {
	case event.OpTruncate:
		return []ParentWrite{{Join: j, Truncate: true, Version: e.Version}}, nil
	case event.OpCreate, event.OpRead:
		w, err := join.state(j, e, e.After, true)
		return []ParentWrite{w}, err
	case event.OpDelete:
		w, err := join.state(j, e, e.Before, false)
		return []ParentWrite{w}, err
	}
	up, err := join.state(j, e, e.After, true)
	if err != nil {
		return nil, err
	}
	old, err := join.state(j, e, e.Before, false)
	if err != nil {
		return nil, err
	}
	if old.Key == up.Key {
		return []ParentWrite{up}, nil
	}
	return []ParentWrite{old, up}, nil
}

func (join *Join) state(j int, e event.Event, img *event.Image, present bool) (ParentWrite, error) {
	if img == nil {
		return ParentWrite{}, fmt.Errorf("%s event of %s.%s without the image it needs", e.Op, join.ParentDB, join.ParentTbl)
	}
	w := ParentWrite{Join: j, Version: e.Version}
	var b strings.Builder
	for i, on := range join.On {
		raw, ok := img.Get(on.Parent)
		if !ok {
			return w, fmt.Errorf("join key of %s.%s: %w", join.ParentDB, join.ParentTbl, &missingColumn{on.Parent})
		}
		if string(raw) == "null" {
			return w, fmt.Errorf("join key column %q of %s.%s is NULL: join on the parent's primary key", on.Parent, join.ParentDB, join.ParentTbl)
		}
		if i > 0 {
			b.WriteByte(0)
		}
		b.Write(raw)
		v, err := bindValue(img, on.Parent, e)
		if err != nil {
			return w, err
		}
		w.KeyValues = append(w.KeyValues, v)
	}
	w.Key = b.String()
	if !present {
		return w, nil
	}
	w.Values = make([]Value, len(join.Columns))
	for i, c := range join.Columns {
		v, err := bindValue(img, c.Source, e)
		if err != nil {
			return w, err
		}
		w.Values[i] = v
	}
	return w, nil
}

func (p *Projection) upsert(e event.Event, img *event.Image, ps *plans) (Write, error) {
	if img == nil {
		return Write{}, fmt.Errorf("%s event without an after image", e.Op)
	}
	pl := p.plan(ps, img, e.Schema)
	vals := make([]Value, len(p.Columns))
	var err error
	for i := range p.Columns {
		if vals[i], err = p.value(img, pl, i); err != nil {
			return Write{}, err
		}
	}
	key, err := p.keyText(img, pl, vals)
	if err != nil {
		return Write{}, err
	}
	w := Write{Kind: Upsert, Key: key, Values: vals, Version: e.Version, KeyspaceID: p.keyspaceID(vals, e.Schema)}
	for ji, j := range p.Joins {
		ref := ParentRef{}
		if j.Via != nil {
			// Its child is a parent row: the sink finds the key in Via's state.
			w.Parents = append(w.Parents, ref)
			continue
		}
		var b strings.Builder
		for i, on := range j.On {
			raw, _ := img.At(pl.joins[ji][i])
			if raw == nil || string(raw) == "null" {
				ref = ParentRef{} // a NULL reference has no parent, as in a LEFT JOIN
				break
			}
			if i > 0 {
				b.WriteByte(0)
			}
			b.Write(raw)
			v, err := bindValue(img, on.Child, e)
			if err != nil {
				return Write{}, err
			}
			ref.Values = append(ref.Values, v)
			ref.Key = b.String()
		}
		w.Parents = append(w.Parents, ref)
	}
	return w, nil
}

// plan is the image plan of img under schema sc, kept in ps when not nil.
func (p *Projection) plan(ps *plans, img *event.Image, sc *event.Schema) *imagePlan {
	if ps == nil {
		ps = new(plans)
	}
	return ps.of(p, img, sc)
}

// keyspaceID routes a row by its shard_by value, vals[0] (shard_by leads
// the key, so it is the first column of upserts and deletes alike).
func (p *Projection) keyspaceID(vals []Value, sc *event.Schema) uint64 {
	if p.ShardBy == "" {
		return 0
	}
	width := 0
	if sc != nil && vals[0].kind == UintValue {
		width = bitWidth(sc.Columns[p.Columns[0].Source])
	}
	if sc != nil && vals[0].kind == TextValue && strings.HasPrefix(sc.Columns[p.Columns[0].Source], "float") {
		// Bound as a double's text (floatValue); routed by the float32's.
		return keyspace.ID(Float32ShardText(vals[0].b))
	}
	return keyspace.ID(ShardValue(vals[0], width))
}

// nullKey reports whether one of img's read key values is NULL.
func (p *Projection) nullKey(img *event.Image, sc *event.Schema, ps *plans) bool {
	if img == nil {
		return false
	}
	pl := p.plan(ps, img, sc)
	for i := range p.Key {
		if pl.args != nil && pl.args[i] != nil {
			// A key that cannot be computed is no read row's key either.
			if v, err := p.computedValue(img, i, pl.args[i]); err != nil || v.kind == NullValue {
				return true
			}
			continue
		}
		if raw, ok := img.At(pl.pos[i]); ok && string(raw) == "null" {
			return true
		}
	}
	return false
}

// value is read column i's value in img: a plain column's event text as
// is, a computed column's expression evaluated.
func (p *Projection) value(img *event.Image, pl *imagePlan, i int) (Value, error) {
	if pl.args != nil && pl.args[i] != nil {
		return p.computedValue(img, i, pl.args[i])
	}
	return bindRaw(img, pl.pos[i], p.Columns[i].Source, pl.kinds[i])
}

// keyText is the read key's values as the tailer encoded them, joined: the
// tailer's encoding is canonical, so equal keys have equal text. A
// computed key value is taken from vals (the row's read values, nil:
// computed here) as its quoted bound text.
func (p *Projection) keyText(img *event.Image, pl *imagePlan, vals []Value) (string, error) {
	var b strings.Builder
	for i := range p.Key {
		if pl.args != nil && pl.args[i] != nil {
			if err := p.appendComputedKey(&b, img, pl, i, vals); err != nil {
				return "", err
			}
			continue
		}
		raw, ok := img.At(pl.pos[i])
		if !ok {
			return "", fmt.Errorf("key column %q: %w", p.Key[i], &missingColumn{p.Columns[i].Source})
		}
		if string(raw) == "null" {
			// Only after DDL made the column nullable: SourceColumns refuses
			// a nullable key column the filter does not keep NULL out of.
			return "", fmt.Errorf("key column %q is NULL in the source row: add where: \"%s IS NOT NULL\" to projections.%s (or make %s NOT NULL in the source again) and restart", p.Key[i], p.Columns[i].Source, p.Name, p.Columns[i].Source)
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
func bindValue(img *event.Image, col string, e event.Event) (Value, error) {
	return bindRaw(img, img.Layout().Pos(col), col, kindOf(e.Schema, col))
}

// bindKind is how a column's event value becomes a SQL parameter, by the
// column's type in the event's schema.
type bindKind uint8

const (
	bindText   bindKind = iota // numbers as their exact text, strings as strings
	bindBits                   // a number: the bit pattern, as an unsigned integer
	bindBinary                 // a base64 string: its bytes
	bindYear                   // a number: as four digits, so 0 stays 0000
	bindFloat                  // a FLOAT's number: as the exact double of its float32
)

func kindOf(sc *event.Schema, col string) bindKind {
	if sc == nil {
		return bindText
	}
	switch t := sc.Columns[col]; {
	case strings.HasPrefix(t, "bit"):
		return bindBits
	case isBinaryType(t):
		return bindBinary
	case t == "year":
		return bindYear
	case strings.HasPrefix(t, "float"):
		return bindFloat
	}
	return bindText
}

// bindRaw binds column col, at position i of img (-1: absent), as kind.
// Text that needs no decoding is a slice of the record (see Value).
func bindRaw(img *event.Image, i int, col string, kind bindKind) (Value, error) {
	raw, ok := img.At(i)
	if !ok {
		return Value{}, &missingColumn{col}
	}
	if string(raw) == "null" {
		return Value{}, nil
	}
	if len(raw) > 0 && raw[0] != '"' {
		if kind == bindBits {
			// A string would be read as the bit pattern of its characters.
			u, err := strconv.ParseUint(string(raw), 10, 64)
			if err != nil {
				return Value{}, fmt.Errorf("column %q: %w", col, err)
			}
			return Value{kind: UintValue, u: u}, nil
		}
		if kind == bindYear && len(raw) < 4 {
			return Value{kind: TextValue, b: YearText(raw)}, nil // the year 0
		}
		if kind == bindFloat {
			return floatValue(raw, col)
		}
		return Value{kind: TextValue, b: raw}, nil // a JSON number, bound as its exact text
	}
	text := raw[1 : len(raw)-1]
	if !event.PlainString(text) {
		s, err := event.Unquote(raw)
		if err != nil {
			return Value{}, fmt.Errorf("column %q: %w", col, err)
		}
		text = []byte(s)
	}
	if kind == bindBinary {
		b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
		n, err := base64.StdEncoding.Decode(b, text)
		if err != nil {
			return Value{}, fmt.Errorf("column %q: binary value is not base64: %w", col, err)
		}
		return Value{kind: BytesValue, b: b[:n]}, nil
	}
	return Value{kind: TextValue, b: text}, nil
}

// YearText is a YEAR's number as four digits, the text that stores the
// same year: a YEAR column reads '0' (the year 0 as an event or the
// server prints it) as 2000, a two-digit year. Years are 0 or 1901-2155,
// so only 0 is short; b is returned when it has four digits.
func YearText(b []byte) []byte {
	if len(b) >= 4 {
		return b
	}
	return append([]byte(strings.Repeat("0", 4-len(b))), b...)
}

// floatValue binds a FLOAT's event number (the shortest text of its
// float32) as the shortest text of the same value as a double. MySQL
// reads a parameter as a double and compares a FLOAT column as one: the
// float32 0.1 is 0.10000000149011612 there, so the text 0.1 would match
// no stored row (a key, a group, a distinct value), and the float32
// maximum, 3.4028235e+38 as shortest text, is above FLT_MAX as a double
// and refused as out of range. The double's text stores the same float32.
func floatValue(raw []byte, col string) (Value, error) {
	f, err := strconv.ParseFloat(string(raw), 32)
	if err != nil {
		return Value{}, fmt.Errorf("column %q: a FLOAT value that is no float32: %w", col, err)
	}
	return Value{kind: TextValue, b: strconv.AppendFloat(nil, f, 'g', -1, 64)}, nil
}

func isBinaryType(t string) bool {
	return strings.HasPrefix(t, "binary") || t == "varbinary" || t == "blob" || t == "geometry"
}
