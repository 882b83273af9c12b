package debezium

// Reading Debezium's change records back into readside's events: the
// inverse of value.go, for projections over topics Debezium's MySQL or
// MariaDB connector writes (input.kind: debezium) and over the tailer's
// own kafka.format: debezium topics.
//
// A value's Debezium encoding depends on its column's type and the
// connector's modes, and the JSON converter's schema block is the only
// part of a record that says which: a bare payload (schemas.enable=false)
// is refused here, naming the fix; schemaless.go reads it with the types
// of the source's live schema. Each value is turned into readside's own
// JSON encoding (docs/events.md, "Values") and each column gets a readside
// type name, so projections bind and compare values exactly as they do
// for readside's envelope.

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/readside/readside/event"
)

// ErrNoSchema is a record without the JSON converter's schema block.
var ErrNoSchema = errors.New("Debezium record without a schema block: readside reads each column's type from it. " +
	"Fix: set input.debezium.schemas.enable: false with the connector's modes (input.debezium.decimal.handling.mode, time.precision.mode, bigint.unsigned.handling.mode) " +
	"to read the types from the source's live schema, or set key.converter.schemas.enable=true and value.converter.schemas.enable=true on the connector (the JSON converter's default)")

// ErrAvroNotJSON is a record value in the Confluent Avro wire format read
// as JSON.
var ErrAvroNotJSON = errors.New("record value in the Confluent Avro wire format (magic byte 0, a 4-byte schema id), not the JSON converter's: " +
	"every record of the topic is. Fix: set input.format: avro and input.schema_registry.url to the connector's registry (do not dead-letter them)")

// conv is how one column's Debezium value becomes readside's.
type conv uint8

const (
	cAsIs      conv = iota // numbers, text, ENUM, SET, JSON and base64 bytes are written alike
	cBool                  // BIT(1): true/false → 1/0
	cBits                  // io.debezium.data.Bits: little-endian bytes → the number
	cDecimal               // Kafka Connect's Decimal: unscaled two's complement + scale → decimal text
	cDate                  // days since the epoch → YYYY-MM-DD
	cMillis                // a datetime in ms since the epoch → YYYY-MM-DD hh:mm:ss.fff
	cMicros                // a datetime in µs since the epoch
	cZoned                 // io.debezium.time.ZonedTimestamp (UTC) → YYYY-MM-DD hh:mm:ss.ffffff
	cMicroTime             // io.debezium.time.MicroTime: µs, negative and over a day kept → [-]hh:mm:ss.ffffff
	cMilliTime             // Kafka Connect's Time: ms of the day
)

// column is one field of a table's value struct, compiled.
type column struct {
	name  string
	conv  conv
	scale int
}

// shape is one table shape: the value schema's columns and what their
// images share.
type shape struct {
	cols   []column
	layout *event.Layout
	schema *event.Schema
}

// Decoder reads Debezium change records. Its zero value is ready; it is
// not safe for concurrent use. Record values of one table shape carry
// the same schema block, compiled once (a shared cache, bounded).
type Decoder struct{}

var shapes = struct {
	sync.Mutex
	m map[string]*shape
}{m: map[string]*shape{}}

// record is a converter record with its schema block.
type record struct {
	Schema  json.RawMessage `json:"schema"`
	Payload json.RawMessage `json:"payload"`
}

// payload is the envelope's members readside reads.
type payload struct {
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
	Source *struct {
		TsMs int64   `json:"ts_ms"`
		GTID *string `json:"gtid"`
		File string  `json:"file"`
		Pos  int64   `json:"pos"`
		Row  int64   `json:"row"`
		// Snapshot is "first", "true", "last", … (a boolean in
		// connectors before 1.6).
		Snapshot json.RawMessage `json:"snapshot"`
	} `json:"source"`
	Op string `json:"op"`
}

// Decode reads one record value (not a tombstone: the caller skips a nil
// value) into readside's event, its version from the source position
// (VersionAt).
func (d *Decoder) Decode(b []byte) (event.Event, error) {
	var e event.Event
	var rec record
	if len(b) >= 5 && b[0] == 0 {
		return e, ErrAvroNotJSON
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return e, fmt.Errorf("decoding Debezium record: %w", err)
	}
	if isNull(rec.Schema) || isNull(rec.Payload) {
		return e, ErrNoSchema
	}
	sh, err := shapeOf(rec.Schema)
	if err != nil {
		return e, err
	}
	return sh.decode(rec.Payload)
}

// decode reads an envelope's payload (the JSON converter's form) of
// shape sh: the one reading of a change, whichever converter wrote it.
func (sh *shape) decode(raw json.RawMessage) (event.Event, error) {
	var e event.Event
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return e, fmt.Errorf("decoding Debezium record's payload: %w", err)
	}
	op, ok := event.ParseOp(p.Op)
	if !ok {
		return e, fmt.Errorf("Debezium record with op %q, which changes no row readside knows of (want c, u, d, r or t)", p.Op)
	}
	if p.Source == nil {
		return e, fmt.Errorf("Debezium record (op %s) without a source block: its version comes from source.file, pos and row", p.Op)
	}
	e.Op, e.Schema = op, sh.schema
	var err error
	if e.Version, err = VersionAt(p.Source.File, p.Source.Pos, p.Source.Row, op == event.OpRead); err != nil {
		return e, err
	}
	e.Source = &event.Source{TS: p.Source.TsMs / 1000}
	if p.Source.GTID != nil {
		e.Source.GTID = *p.Source.GTID
	}
	e.SourceTS = e.Source.TS
	e.SnapshotFirst = op == event.OpRead && string(p.Source.Snapshot) == `"first"`
	if e.Before, err = sh.image(p.Before); err != nil {
		return e, fmt.Errorf("before: %w", err)
	}
	if e.After, err = sh.image(p.After); err != nil {
		return e, fmt.Errorf("after: %w", err)
	}
	return e, nil
}

// Recycle is a no-op: the images share nothing the next event reuses.
func (d *Decoder) Recycle(event.Event) {}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// shapeOf compiles (once per distinct schema block) the value schema's
// row struct.
func shapeOf(raw json.RawMessage) (*shape, error) {
	shapes.Lock()
	sh, ok := shapes.m[string(raw)]
	shapes.Unlock()
	if ok {
		return sh, nil
	}
	var s fieldSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decoding Debezium record's schema: %w", err)
	}
	sh, err := compileShape(s)
	if err != nil {
		return nil, err
	}
	shapes.Lock()
	if len(shapes.m) >= 1024 { // many tables or schema changes: start over
		clear(shapes.m)
	}
	shapes.m[string(raw)] = sh
	shapes.Unlock()
	return sh, nil
}

// compileShape compiles an envelope's Connect schema: the columns of its
// before/after struct.
func compileShape(s fieldSchema) (*shape, error) {
	var row *fieldSchema
	for i := range s.Fields {
		if f := &s.Fields[i]; (f.Field == "after" || f.Field == "before") && f.Type == "struct" {
			row = f
			break
		}
	}
	if row == nil {
		return nil, fmt.Errorf("Debezium record's schema %q has no before or after struct: not a change record of a table", s.Name)
	}
	sh := &shape{schema: &event.Schema{Columns: map[string]string{}}}
	names := make([]string, 0, len(row.Fields))
	var errs []error
	for _, f := range row.Fields {
		c, typ, err := compileField(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sh.cols = append(sh.cols, c)
		names = append(names, c.name)
		sh.schema.Columns[c.name] = typ
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("Debezium schema %s: %w", row.Name, err)
	}
	sh.layout = event.LayoutOf(names)
	return sh, nil
}

// fieldSchema is a Kafka Connect schema as the JSON converter writes it,
// as far as a decoder reads it (avro.go keeps the parameters in order).
type fieldSchema struct {
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Field      string            `json:"field"`
	Parameters map[string]string `json:"parameters"`
	Fields     []fieldSchema     `json:"fields"`
}

// compileField is how a field's values are read, and readside's type name
// for its column (the names kindOf and bitWidth in projections read:
// bit(n), varbinary and year bind differently from text).
func compileField(f fieldSchema) (column, string, error) {
	c := column{name: f.Field}
	switch f.Name {
	case "":
	case "io.debezium.time.Year":
		return c, "year", nil
	case "io.debezium.data.Bits":
		c.conv = cBits
		return c, "bit(" + cmpOr(f.Parameters["length"], "64") + ")", nil
	case "org.apache.kafka.connect.data.Decimal":
		sc, err := strconv.Atoi(f.Parameters["scale"])
		if err != nil || sc < 0 {
			return c, "", fmt.Errorf("column %s: Decimal without a scale parameter", f.Field)
		}
		c.conv, c.scale = cDecimal, sc
		return c, fmt.Sprintf("decimal(%s,%d)", cmpOr(f.Parameters["connect.decimal.precision"], "65"), sc), nil
	case "io.debezium.time.Date", "org.apache.kafka.connect.data.Date":
		c.conv = cDate
		return c, "date", nil
	case "io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp":
		c.conv = cMillis
		return c, "datetime(3)", nil
	case "io.debezium.time.MicroTimestamp":
		c.conv = cMicros
		return c, "datetime(6)", nil
	case "io.debezium.time.ZonedTimestamp":
		c.conv = cZoned
		return c, "timestamp(6)", nil
	case "io.debezium.time.MicroTime":
		c.conv = cMicroTime
		return c, "time(6)", nil
	case "org.apache.kafka.connect.data.Time":
		c.conv = cMilliTime
		return c, "time(3)", nil
	case "io.debezium.data.Enum":
		return c, "enum", nil
	case "io.debezium.data.EnumSet":
		return c, "set", nil
	case "io.debezium.data.Json":
		return c, "json", nil
	default:
		return c, "", fmt.Errorf("column %s: Debezium type %s (%s) has no readside encoding: "+
			"leave the column out of the projection's table on the connector (column.exclude.list), or use Debezium's default modes (docs/debezium.md)", f.Field, f.Name, f.Type)
	}
	switch f.Type {
	case "int8", "int16":
		return c, "smallint", nil
	case "int32":
		return c, "int", nil
	case "int64":
		return c, "bigint", nil
	case "float", "float32":
		return c, "float", nil
	case "double", "float64":
		return c, "double", nil
	case "boolean":
		c.conv = cBool
		return c, "bit(1)", nil
	case "string":
		return c, "varchar", nil
	case "bytes":
		return c, "varbinary", nil
	}
	return c, "", fmt.Errorf("column %s: Kafka Connect type %q has no readside encoding: leave the column out (column.exclude.list on the connector)", f.Field, f.Type)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// image reads a row struct (nil for null) into an image of the shape's
// columns, each value in readside's encoding.
func (sh *shape) image(raw json.RawMessage) (*event.Image, error) {
	if isNull(raw) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	vals := make([]json.RawMessage, len(sh.cols))
	for i, c := range sh.cols {
		v, ok := m[c.name]
		if !ok {
			return nil, fmt.Errorf("column %s is in the schema but not in the row", c.name)
		}
		out, err := c.value(v)
		if err != nil {
			return nil, fmt.Errorf("column %s: value %s: %w", c.name, v, err)
		}
		vals[i] = out
	}
	return event.ImageWith(sh.layout, vals), nil
}

// value is readside's encoding of one Debezium value of the column.
func (c column) value(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return json.RawMessage("null"), nil
	}
	if c.conv == cAsIs {
		return raw, nil
	}
	switch c.conv {
	case cBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, err
		}
		if b {
			return json.RawMessage("1"), nil
		}
		return json.RawMessage("0"), nil
	case cBits:
		b, err := unbase64(raw)
		if err != nil {
			return nil, err
		}
		if len(b) > 8 {
			return nil, fmt.Errorf("%d bytes of bits, over 64", len(b))
		}
		var le [8]byte
		copy(le[:], b)
		return strconv.AppendUint(nil, binary.LittleEndian.Uint64(le[:]), 10), nil
	case cDecimal:
		b, err := unbase64(raw)
		if err != nil {
			return nil, err
		}
		return appendString(nil, decimalText(fromTwosComplement(b), c.scale)), nil
	case cZoned:
		s, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, err
		}
		return appendString(nil, datetimeText(t.UTC())), nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("want an integer: %w", err)
	}
	switch c.conv {
	case cDate:
		return appendString(nil, time.Unix(n*86400, 0).UTC().Format("2006-01-02")), nil
	case cMillis:
		return appendString(nil, datetimeText(time.UnixMilli(n).UTC())), nil
	case cMicros:
		return appendString(nil, datetimeText(time.UnixMicro(n).UTC())), nil
	case cMilliTime:
		return appendString(nil, timeText(n*1000)), nil
	}
	return appendString(nil, timeText(n)), nil // cMicroTime
}

func unbase64(raw json.RawMessage) ([]byte, error) {
	s, err := unquote(raw)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(s)
}

// fromTwosComplement reads a big-endian two's complement (Java's
// BigInteger.toByteArray).
func fromTwosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	return n
}

// decimalText is readside's DECIMAL text of unscaled × 10^-scale: every
// digit of the scale, a 0 before the point when there is no whole part.
func decimalText(unscaled *big.Int, scale int) string {
	neg := unscaled.Sign() < 0
	digits := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// datetimeText is readside's DATETIME/TIMESTAMP text of t. Debezium's
// types do not carry the column's fractional digits, so the fraction is
// written without trailing zeros (none for a whole second): one text per
// instant, which read keys compare as text.
func datetimeText(t time.Time) string {
	s := t.Format("2006-01-02 15:04:05")
	return s + fraction(int64(t.Nanosecond()/1000))
}

// timeText is readside's TIME text of µs, sign and hours over 24 kept.
func timeText(us int64) string {
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	s := us / 1e6
	return fmt.Sprintf("%s%02d:%02d:%02d", sign, s/3600, s/60%60, s%60) + fraction(us%1e6)
}

// fraction is ".ffffff" of µs without trailing zeros, "" for none.
func fraction(us int64) string {
	if us == 0 {
		return ""
	}
	return "." + strings.TrimRight(fmt.Sprintf("%06d", us), "0")
}
