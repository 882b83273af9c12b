package debezium

// kafka.format: debezium-avro. Debezium writes Avro through Confluent's
// AvroConverter, which turns each Kafka Connect schema into an Avro schema
// (AvroData's conversion) and each Connect value into Avro binary. readside
// converts the Connect schemas this package already builds the same way,
// and writes each event's Avro binary straight from readside's values
// (avroenc.go): the Avro events carry, by construction, the logical
// content of the JSON ones, which the tests check byte for byte against
// the JSON payloads transcoded. The Avro schema text is written in
// the shape Avro's own Schema.toString gives it (key order, namespaces
// written only where they change, named types referenced once defined), so
// a registry holding the connector's schema and readside's sees one schema.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// connectSchema is a Kafka Connect schema as the JSON converter writes it.
type connectSchema struct {
	Type       string          `json:"type"`
	Optional   bool            `json:"optional"`
	Name       string          `json:"name"`
	Version    int             `json:"version"`
	Parameters json.RawMessage `json:"parameters"`
	Default    json.RawMessage `json:"default"`
	Field      string          `json:"field"`
	Fields     []connectSchema `json:"fields"`
}

// params are s's parameters in the order they were written: AvroData
// keeps Connect's (insertion) order in connect.parameters.
func (s *connectSchema) params() ([][2]string, error) {
	if len(s.Parameters) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Parameters))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out [][2]string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, [2]string{k.(string), v})
	}
	return out, nil
}

// avroKind is the Avro type a Connect value is written as.
type avroKind uint8

const (
	aInt avroKind = iota
	aLong
	aFloat
	aDouble
	aBool
	aString
	aBytes
	aRecord
)

// avroNode is how one Connect value is written in Avro binary.
type avroNode struct {
	kind avroKind
	// optional: the value is a union with null, whose branch is nullIdx
	// (0: ["null", T]; 1: [T, "null"], AvroData's order when the field has
	// a default, which must be the union's first branch).
	optional bool
	nullIdx  int64
	fields   []avroField
}

type avroField struct {
	name string
	node *avroNode
	// Set on an envelope's fields by Avro.bind (avroenc.go): the field's
	// path and where its value comes from.
	path string
	bind envField
}

// avroSchema builds the Avro schema of a Connect schema.
type avroSchema struct {
	defined map[string]bool // named types already written: later uses are a reference
}

// convert appends the Avro schema of s, in namespace space, and returns
// how its values are written.
func (c *avroSchema) convert(buf []byte, s *connectSchema, space string) ([]byte, *avroNode, error) {
	n := &avroNode{optional: s.Optional}
	if !s.Optional {
		var err error
		buf, err = c.base(buf, s, space, n)
		return buf, n, err
	}
	var err error
	if s.Type != "struct" && len(s.Default) > 0 && string(s.Default) != "null" {
		n.nullIdx = 1
		buf, err = c.base(append(buf, '['), s, space, n)
		return append(buf, `,"null"]`...), n, err
	}
	buf, err = c.base(append(buf, `["null",`...), s, space, n)
	return append(buf, ']'), n, err
}

// base appends the Avro schema of s itself, without the union an optional
// schema is, and sets n's kind.
func (c *avroSchema) base(buf []byte, s *connectSchema, space string, n *avroNode) ([]byte, error) {
	params, err := s.params()
	if err != nil {
		return nil, fmt.Errorf("parameters of %s: %w", s.Name, err)
	}
	if s.Type == "struct" {
		return c.record(buf, s, params, space, n)
	}
	var typ, connectType string
	switch s.Type {
	case "int8", "int16":
		typ, n.kind, connectType = "int", aInt, s.Type
	case "int32":
		typ, n.kind = "int", aInt
	case "int64":
		typ, n.kind = "long", aLong
	case "float":
		typ, n.kind = "float", aFloat
	case "double":
		typ, n.kind = "double", aDouble
	case "boolean":
		typ, n.kind = "boolean", aBool
	case "string":
		typ, n.kind = "string", aString
	case "bytes":
		typ, n.kind = "bytes", aBytes
	default:
		return nil, fmt.Errorf("field %s: Connect type %q has no Avro form here", s.Field, s.Type)
	}
	if s.Name == "" && connectType == "" && len(s.Default) == 0 {
		return strconv.AppendQuote(buf, typ), nil
	}
	buf = append(buf, `{"type":`...)
	buf = strconv.AppendQuote(buf, typ)
	const decimal = "org.apache.kafka.connect.data.Decimal"
	if s.Name == decimal {
		scale, precision := "", "64" // AvroData's precision when Connect gives none
		for _, p := range params {
			switch p[0] {
			case "scale":
				scale = p[1]
			case "connect.decimal.precision":
				precision = p[1]
			}
		}
		if _, err := strconv.Atoi(scale); err != nil {
			return nil, fmt.Errorf("field %s: decimal without an integer scale parameter", s.Field)
		}
		if _, err := strconv.Atoi(precision); err != nil {
			return nil, fmt.Errorf("field %s: decimal precision %q is not an integer", s.Field, precision)
		}
		buf = append(buf, `,"scale":`+scale+`,"precision":`+precision...)
	}
	buf = appendConnectProps(buf, s, params)
	if connectType != "" {
		buf = append(buf, `,"connect.type":`...)
		buf = strconv.AppendQuote(buf, connectType)
	}
	switch s.Name {
	case decimal:
		buf = append(buf, `,"logicalType":"decimal"`...)
	case "org.apache.kafka.connect.data.Date":
		buf = append(buf, `,"logicalType":"date"`...)
	case "org.apache.kafka.connect.data.Time":
		buf = append(buf, `,"logicalType":"time-millis"`...)
	case "org.apache.kafka.connect.data.Timestamp":
		buf = append(buf, `,"logicalType":"timestamp-millis"`...)
	}
	return append(buf, '}'), nil
}

// appendConnectProps appends AvroData's connect.* properties, in its order.
func appendConnectProps(buf []byte, s *connectSchema, params [][2]string) []byte {
	if s.Version != 0 {
		buf = append(buf, `,"connect.version":`...)
		buf = strconv.AppendInt(buf, int64(s.Version), 10)
	}
	if len(params) > 0 {
		buf = append(buf, `,"connect.parameters":`...)
		buf = appendStringObject(buf, params)
	}
	if len(s.Default) > 0 && string(s.Default) != "null" {
		buf = append(buf, `,"connect.default":`...)
		buf = append(buf, s.Default...)
	}
	if s.Name != "" {
		buf = append(buf, `,"connect.name":`...)
		buf = appendString(buf, s.Name)
	}
	return buf
}

// record appends a struct as an Avro record, or as a reference to the
// record of that name once it is written.
func (c *avroSchema) record(buf []byte, s *connectSchema, params [][2]string, space string, n *avroNode) ([]byte, error) {
	n.kind = aRecord
	ns, name := "", s.Name
	if i := strings.LastIndexByte(s.Name, '.'); i >= 0 {
		ns, name = s.Name[:i], s.Name[i+1:]
	}
	if c.defined[s.Name] {
		// The record's fields are the ones compiled where it was defined;
		// Connect gives both uses one schema (before and after).
		ref := s.Name
		if ns == space {
			ref = name
		}
		for _, f := range s.Fields {
			_, fn, err := (&avroSchema{defined: map[string]bool{}}).convert(nil, &f, ns)
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, avroField{name: f.Field, node: fn})
		}
		return appendString(buf, ref), nil
	}
	c.defined[s.Name] = true
	buf = append(buf, `{"type":"record","name":`...)
	buf = appendString(buf, name)
	if ns != space {
		buf = append(buf, `,"namespace":`...)
		buf = appendString(buf, ns)
	}
	buf = append(buf, `,"fields":[`...)
	for i := range s.Fields {
		f := &s.Fields[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"name":`...)
		buf = appendString(buf, f.Field)
		buf = append(buf, `,"type":`...)
		var fn *avroNode
		var err error
		if buf, fn, err = c.convert(buf, f, ns); err != nil {
			return nil, err
		}
		switch {
		case len(f.Default) > 0 && string(f.Default) != "null":
			buf = append(buf, `,"default":`...)
			buf = append(buf, f.Default...)
		case f.Optional:
			buf = append(buf, `,"default":null`...)
		}
		buf = append(buf, '}')
		n.fields = append(n.fields, avroField{name: f.Field, node: fn})
	}
	buf = append(buf, ']')
	buf = appendConnectProps(buf, s, params)
	return append(buf, '}'), nil
}

// Avro writes a table's events as Confluent's AvroConverter writes
// Debezium's: the Confluent wire format (magic byte 0, the schema id as 4
// big-endian bytes, Avro binary), for the key and the value.
type Avro struct {
	t                      *Table
	keySchema, valueSchema string
	key, value             *avroNode
}

// NewAvro compiles t's Avro schemas from its Connect schemas. It fails
// naming what Avro cannot take, chiefly names outside Avro's letters,
// digits and _.
func NewAvro(t *Table) (*Avro, error) {
	payloads := *t
	payloads.modes.Schemas.Enable = false // the values alone, as the Avro events carry them
	a := &Avro{t: &payloads}
	var err error
	if a.keySchema, a.key, err = avroOf(t.keySchema); err != nil {
		return nil, fmt.Errorf("Avro key schema of %s.%s: %w", t.db, t.name, err)
	}
	if a.valueSchema, a.value, err = avroOf(t.envelopeSchema); err != nil {
		return nil, fmt.Errorf("Avro value schema of %s.%s: %w", t.db, t.name, err)
	}
	if err := a.checkColumns(a.key, "the key", t.key); err != nil {
		return nil, fmt.Errorf("Avro key schema of %s.%s: %w", t.db, t.name, err)
	}
	if err := a.bind(a.value, ""); err != nil {
		return nil, fmt.Errorf("Avro value schema of %s.%s: %w", t.db, t.name, err)
	}
	return a, nil
}

// avroOf converts a Connect schema (the JSON converter's text) and checks
// the result is Avro that an Avro library accepts.
func avroOf(connect []byte) (string, *avroNode, error) {
	var s connectSchema
	if err := json.Unmarshal(connect, &s); err != nil {
		return "", nil, err
	}
	buf, n, err := (&avroSchema{defined: map[string]bool{}}).convert(nil, &s, "")
	if err != nil {
		return "", nil, err
	}
	if _, err := avro.ParseBytesWithCache(buf, "", &avro.SchemaCache{}); err != nil {
		if !strings.Contains(err.Error(), "invalid name") {
			// Every other rule is readside's to keep: a schema it built
			// wrong is its bug, not the table's.
			return "", nil, fmt.Errorf("readside built an Avro schema the Avro library refuses (%w): report it with the table's SHOW CREATE TABLE; meanwhile use kafka.format: debezium", err)
		}
		return "", nil, fmt.Errorf("%w: Avro names are letters, digits and _, not starting with a digit (Debezium's AvroConverter refuses the same names). "+
			"Fix: rename the table or column, exclude the column (source.exclude_columns), pick a kafka.topic_prefix of such characters, or use kafka.format: debezium", err)
	}
	return string(buf), n, nil
}

// Topic is the table's topic.
func (a *Avro) Topic() string { return a.t.topic }

// KeySchema is the Avro schema of the record key, registered under the
// subject <topic>-key.
func (a *Avro) KeySchema() string { return a.keySchema }

// ValueSchema is the Avro schema of the record value (the envelope),
// registered under <topic>-value.
func (a *Avro) ValueSchema() string { return a.valueSchema }

// Key appends the record key of row, framed with schema id id.
func (a *Avro) Key(buf []byte, id int, row Row) ([]byte, error) {
	const snapshot = false // a key is the same for every change of its row
	buf = appendWireHeader(buf, id)
	t := a.t
	var err error
	for n, i := range t.key {
		if buf, err = t.fields[i].appendAvro(buf, a.key.fields[n].node, row[i], &t.modes, snapshot); err != nil {
			return nil, fmt.Errorf("key of %s.%s: %w", t.db, t.name, err)
		}
	}
	return buf, nil
}

// Value appends the record value of one change (see Table.Value), framed
// with schema id id.
func (a *Avro) Value(buf []byte, id int, op byte, before, after Row, src Source, now time.Time) ([]byte, error) {
	e := avroEvent{op: op, before: before, after: after, src: &src, now: now}
	buf = appendWireHeader(buf, id)
	buf, err := a.appendRecord(buf, a.value, &e)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", a.t.db, a.t.name, err)
	}
	return buf, nil
}

// appendWireHeader appends Confluent's wire format header: magic byte 0
// and the schema id in 4 big-endian bytes.
func appendWireHeader(buf []byte, id int) []byte {
	buf = append(buf, 0)
	return binary.BigEndian.AppendUint32(buf, uint32(id))
}
