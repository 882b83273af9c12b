package debezium

// Reading Debezium's records in Avro (Confluent's AvroConverter, or
// readside's kafka.format: debezium-avro): the Confluent wire format's
// schema id names the writer's schema in a schema registry. The Avro
// schema carries the Connect schema it was made from (AvroData's
// connect.name, connect.parameters and connect.type properties), and the
// Avro value the Connect value, so each record is read back into the JSON
// converter's form of both and then read by the one mapping decode.go
// holds: JSON and Avro topics give the same events.
//
// Fetching a schema is I/O and decoding is not: Load fetches the schemas
// a run of records names before it is decoded, so a registry that does not
// answer stops the run where it is instead of making records undecodable
// (which would dead-letter them or skip them).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/hamba/avro/v2"

	"github.com/readside/readside/event"
)

// SchemaSource is where the writer schemas of Avro records are found, by
// the id their records carry. Schema blocks on the registry; an error
// wrapping ErrSchemaUnusable is the registry's answer that no retry
// changes (no such id, or not an Avro schema); any other error may pass.
type SchemaSource interface {
	Schema(ctx context.Context, id int) (string, error)
}

// ErrSchemaUnusable is a schema id the registry does not hold, or holds
// as another kind of schema than Avro.
var ErrSchemaUnusable = errors.New("no Avro schema of that id in the registry")

// ErrNotAvro is a record value that is not in the Confluent wire format.
var ErrNotAvro = errors.New("record value not in the Confluent Avro wire format (magic byte 0, a 4-byte schema id): " +
	"the topic holds another format. Fix: set input.format: json for a connector's JSON topics, or read readside's own topics with the kafka.format the tailer writes")

// avroShape is one writer schema, compiled.
type avroShape struct {
	schema avro.Schema
	shape  *shape
}

// AvroSchemas holds the writer schemas of one topic set by id, compiled
// once each; it is safe for concurrent use. Ids are never reused for
// another schema by a registry, so a held schema is never fetched again.
type AvroSchemas struct {
	src SchemaSource

	mu   sync.Mutex
	byID map[int]*avroShape
}

// NewAvroSchemas does no I/O.
func NewAvroSchemas(src SchemaSource) *AvroSchemas {
	return &AvroSchemas{src: src, byID: map[int]*avroShape{}}
}

// SchemaID is the schema id of a record in the Confluent wire format, and
// its Avro body.
func SchemaID(b []byte) (int, []byte, error) {
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, ErrNotAvro
	}
	return int(binary.BigEndian.Uint32(b[1:5])), b[5:], nil
}

// Load fetches and compiles the schemas of values (record values, nil
// for a tombstone) not held yet. A value not in the wire format is left
// to Decode to refuse. An error names the schema id and the registry's
// answer; the caller decodes none of values until a Load succeeds.
func (s *AvroSchemas) Load(ctx context.Context, values iter.Seq[[]byte]) error {
	missing := map[int]bool{}
	s.mu.Lock()
	for v := range values {
		if id, _, err := SchemaID(v); err == nil && s.byID[id] == nil {
			missing[id] = true
		}
	}
	s.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(missing)) {
		text, err := s.src.Schema(ctx, id)
		if err != nil {
			return err
		}
		sh, err := compileAvro(text)
		if err != nil {
			return fmt.Errorf("the Avro schema of id %d: %w", id, err)
		}
		s.mu.Lock()
		s.byID[id] = sh
		s.mu.Unlock()
	}
	return nil
}

func (s *AvroSchemas) get(id int) *avroShape {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// Decoder is a decoder of records whose schemas are loaded, for one run
// of records: not safe for concurrent use.
func (s *AvroSchemas) Decoder() *AvroDecoder {
	return &AvroDecoder{s: s, r: avro.NewReader(nil, 0)}
}

// AvroDecoder reads Debezium change records in the Confluent Avro wire
// format whose schemas its AvroSchemas loaded.
type AvroDecoder struct {
	s   *AvroSchemas
	r   *avro.Reader
	buf []byte
}

// Decode reads one record value (not a tombstone) into readside's event,
// as Decoder.Decode reads the same change in JSON.
func (d *AvroDecoder) Decode(b []byte) (event.Event, error) {
	id, body, err := SchemaID(b)
	if err != nil {
		return event.Event{}, err
	}
	sh := d.s.get(id)
	if sh == nil {
		return event.Event{}, fmt.Errorf("Avro record of schema id %d, which was not loaded from the registry before decoding (readside's bug: report it)", id)
	}
	d.r.Reset(body)
	d.r.Error = nil
	d.buf = appendAvroJSON(d.buf[:0], d.r, sh.schema)
	if d.r.Error != nil {
		return event.Event{}, fmt.Errorf("decoding an Avro record of schema id %d: %w", id, d.r.Error)
	}
	return sh.shape.decode(d.buf)
}

// Recycle is a no-op: the images share nothing the next event reuses.
func (d *AvroDecoder) Recycle(event.Event) {}

// compileAvro parses a writer schema and compiles the Connect schema it
// carries.
func compileAvro(text string) (*avroShape, error) {
	// A cache of its own: two versions of a table's schema define the
	// same record names.
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	fs, err := connectOf(s, "")
	if err != nil {
		return nil, err
	}
	sh, err := compileShape(fs)
	if err != nil {
		return nil, err
	}
	return &avroShape{schema: s, shape: sh}, nil
}

// connectOf is the Connect schema an Avro schema was made from, as far as
// compileShape reads it: AvroData keeps the Connect name, parameters and
// narrow integer types in connect.* properties.
func connectOf(s avro.Schema, field string) (fieldSchema, error) {
	fs := fieldSchema{Field: field}
	if u, ok := s.(*avro.UnionSchema); ok {
		// Connect's optional schema: a union of null and one type.
		var inner avro.Schema
		for _, t := range u.Types() {
			if t.Type() == avro.Null {
				continue
			}
			if inner != nil {
				return fs, fmt.Errorf("field %s: a union of several types, which Kafka Connect does not write", field)
			}
			inner = t
		}
		if inner == nil {
			return fs, fmt.Errorf("field %s: a union of null alone", field)
		}
		s = inner
	}
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	props, _ := s.(interface{ Prop(string) any })
	prop := func(name string) string {
		if props == nil {
			return ""
		}
		v, _ := props.Prop(name).(string)
		return v
	}
	fs.Name = prop("connect.name")
	if props != nil {
		if ps, ok := props.Prop("connect.parameters").(map[string]any); ok {
			fs.Parameters = map[string]string{}
			for k, v := range ps {
				if v, ok := v.(string); ok {
					fs.Parameters[k] = v
				}
			}
		}
	}
	switch s.Type() {
	case avro.Record:
		rec := s.(*avro.RecordSchema)
		fs.Type = "struct"
		if fs.Name == "" {
			fs.Name = rec.FullName()
		}
		for _, f := range rec.Fields() {
			c, err := connectOf(f.Type(), f.Name())
			if err != nil {
				return fs, err
			}
			fs.Fields = append(fs.Fields, c)
		}
	case avro.Int:
		fs.Type = "int32"
		if t := prop("connect.type"); t == "int8" || t == "int16" {
			fs.Type = t
		}
	case avro.Long:
		fs.Type = "int64"
	case avro.Float:
		fs.Type = "float"
	case avro.Double:
		fs.Type = "double"
	case avro.Boolean:
		fs.Type = "boolean"
	case avro.String:
		fs.Type = "string"
	case avro.Bytes:
		fs.Type = "bytes"
	default:
		// Arrays, maps, enums and fixed: no column type readside maps
		// is written as one; compileShape names the column.
		fs.Type = string(s.Type())
	}
	return fs, nil
}

// appendAvroJSON appends the JSON converter's form of the Avro value r
// holds next, of schema s: bytes as base64, a union as its branch's value.
// Errors are left in r.Error.
func appendAvroJSON(buf []byte, r *avro.Reader, s avro.Schema) []byte {
	if r.Error != nil {
		return buf
	}
	switch s.Type() {
	case avro.Union:
		types := s.(*avro.UnionSchema).Types()
		i := r.ReadLong()
		if i < 0 || i >= int64(len(types)) {
			r.ReportError("union", fmt.Sprintf("branch %d of a union of %d", i, len(types)))
			return buf
		}
		return appendAvroJSON(buf, r, types[i])
	case avro.Ref:
		return appendAvroJSON(buf, r, s.(*avro.RefSchema).Schema())
	case avro.Record:
		buf = append(buf, '{')
		for i, f := range s.(*avro.RecordSchema).Fields() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, f.Name())
			buf = append(buf, ':')
			buf = appendAvroJSON(buf, r, f.Type())
		}
		return append(buf, '}')
	case avro.Null:
		return append(buf, "null"...)
	case avro.Int:
		return strconv.AppendInt(buf, int64(r.ReadInt()), 10)
	case avro.Long:
		return strconv.AppendInt(buf, r.ReadLong(), 10)
	case avro.Float:
		return strconv.AppendFloat(buf, float64(r.ReadFloat()), 'g', -1, 32)
	case avro.Double:
		return strconv.AppendFloat(buf, r.ReadDouble(), 'g', -1, 64)
	case avro.Boolean:
		return strconv.AppendBool(buf, r.ReadBool())
	case avro.String:
		return appendString(buf, r.ReadString())
	case avro.Bytes:
		return appendBase64(buf, r.ReadBytes())
	}
	r.ReportError("decode", fmt.Sprintf("Avro type %s, which Kafka Connect's AvroData does not write for a Debezium change", s.Type()))
	return buf
}
