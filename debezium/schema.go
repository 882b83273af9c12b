// Package debezium encodes change events as Debezium's MariaDB/MySQL
// connector writes them with Kafka Connect's JSON converter
// (kafka.format: debezium, docs/debezium.md): topic names, the key struct,
// the envelope and every column type under Debezium's value modes. It
// works from readside's own encoding of each value (docs/events.md), which
// is exact, so the tailer's binlog and snapshot paths share it. No I/O.
package debezium

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/readside/readside/config"
)

// Column is one published source column as the tailer describes it.
type Column struct {
	Name string
	// Type is readside's type name (the envelope's schema.columns):
	// "int unsigned", "decimal(10,2)", "datetime(3)", "bit(5)", "enum", …
	Type     string
	Optional bool     // the column is nullable
	Members  []string // ENUM and SET members, in definition order
}

// kind is how a column's value is encoded.
type kind uint8

const (
	kNumber   kind = iota // readside's JSON number, as it is
	kUnsigned             // BIGINT UNSIGNED under bigint.unsigned.handling.mode
	kDecimal              // decimal.handling.mode
	kBool                 // BIT(1)
	kBits                 // BIT(n), little-endian bytes
	kDate
	kDatetime
	kTimestamp
	kTime
	kString // text, JSON, ENUM, SET: readside's JSON string as it is
	kBinary // binary.handling.mode
)

// field is a compiled column: how its value is converted and its schema.
type field struct {
	name     string
	kind     kind
	digits   int // DATETIME/TIMESTAMP/TIME fractional digits; DECIMAL scale
	bits     int // BIT(n) length
	micro    bool
	optional bool
	schema   []byte // the field's entry in the struct schema
}

// compile maps c to its Debezium type under m.
func compile(c Column, m config.Debezium) (field, error) {
	f := field{name: c.Name, optional: c.Optional}
	typ := strings.ToLower(c.Type)
	base, arg, _ := strings.Cut(strings.TrimSuffix(typ, ")"), "(")
	unsigned := strings.HasSuffix(base, " unsigned")
	base = strings.TrimSuffix(base, " unsigned")
	var s schemaType
	switch base {
	case "tinyint", "smallint":
		s.typ = "int16"
		if unsigned && base == "smallint" {
			s.typ = "int32"
		}
	case "mediumint":
		s.typ = "int32"
	case "int":
		s.typ = "int32"
		if unsigned {
			s.typ = "int64"
		}
	case "bigint":
		s.typ = "int64"
		if unsigned {
			f.kind = kUnsigned
			if m.Bigint.Unsigned.Handling.Mode == config.UnsignedPrecise {
				s = schemaType{typ: "bytes", name: "org.apache.kafka.connect.data.Decimal", version: 1, params: [][2]string{{"scale", "0"}, {"connect.decimal.precision", "20"}}}
			}
		}
	case "year":
		s = schemaType{typ: "int32", name: "io.debezium.time.Year", version: 1}
	case "float":
		s.typ = "float"
	case "double":
		s.typ = "double"
	case "decimal":
		prec, scale, ok := strings.Cut(arg, ",")
		sc, err := strconv.Atoi(scale)
		if !ok || err != nil {
			return f, fmt.Errorf("column %s: decimal type %q without precision and scale", c.Name, c.Type)
		}
		f.kind, f.digits = kDecimal, sc
		switch m.Decimal.Handling.Mode {
		case config.DecimalDouble:
			s.typ = "double"
		case config.DecimalString:
			s.typ = "string"
		default:
			s = schemaType{typ: "bytes", name: "org.apache.kafka.connect.data.Decimal", version: 1,
				params: [][2]string{{"scale", scale}, {"connect.decimal.precision", prec}}}
		}
	case "bit":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > 64 {
			return f, fmt.Errorf("column %s: bit type %q without a length of 1 to 64", c.Name, c.Type)
		}
		f.bits = n
		if n == 1 {
			f.kind, s.typ = kBool, "boolean"
		} else {
			f.kind = kBits
			s = schemaType{typ: "bytes", name: "io.debezium.data.Bits", version: 1, params: [][2]string{{"length", arg}}}
		}
	case "date", "datetime", "timestamp", "time":
		s = temporalSchema(&f, base, arg, m)
	case "enum", "set":
		f.kind = kString
		s = schemaType{typ: "string", name: "io.debezium.data.Enum", version: 1, params: [][2]string{{"allowed", strings.Join(c.Members, ",")}}}
		if base == "set" {
			s.name = "io.debezium.data.EnumSet"
		}
	case "char", "varchar", "text":
		f.kind, s.typ = kString, "string"
	case "json":
		// MySQL's JSON type; MariaDB's JSON is a LONGTEXT and reads as text.
		f.kind = kString
		s = schemaType{typ: "string", name: "io.debezium.data.Json", version: 1}
	case "binary", "varbinary", "blob":
		f.kind, s.typ = kBinary, "bytes"
		if m.Binary.Handling.Mode != config.BinaryBytes {
			s.typ = "string"
		}
	case "geometry":
		return f, fmt.Errorf("column %s: geometry columns have no kafka.format: debezium encoding in readside yet (Debezium writes a Geometry struct): exclude the column (source.exclude_columns) or use kafka.format: readside", c.Name)
	default:
		return f, fmt.Errorf("column %s: type %q has no kafka.format: debezium encoding: exclude the column (source.exclude_columns) or use kafka.format: readside", c.Name, c.Type)
	}
	if f.kind == kNumber && s.typ == "" {
		return f, fmt.Errorf("column %s: type %q has no kafka.format: debezium encoding", c.Name, c.Type)
	}
	f.schema = s.appendField(nil, c.Optional, c.Name)
	return f, nil
}

// temporalSchema is the schema of a DATE, DATETIME, TIMESTAMP or TIME
// column under time.precision.mode, and sets how f's values are encoded.
func temporalSchema(f *field, base, arg string, m config.Debezium) schemaType {
	var s schemaType
	switch base {
	case "date":
		f.kind = kDate
		s = schemaType{typ: "int32", name: "io.debezium.time.Date", version: 1}
		if m.Time.Precision.Mode == config.TimeConnect {
			s.name = "org.apache.kafka.connect.data.Date"
		}
	case "datetime":
		f.kind, f.digits = kDatetime, digitsOf(arg)
		switch {
		case m.Time.Precision.Mode == config.TimeConnect:
			s = schemaType{typ: "int64", name: "org.apache.kafka.connect.data.Timestamp", version: 1}
		case f.digits > 3:
			f.micro = true
			s = schemaType{typ: "int64", name: "io.debezium.time.MicroTimestamp", version: 1}
		default:
			s = schemaType{typ: "int64", name: "io.debezium.time.Timestamp", version: 1}
		}
	case "timestamp":
		f.kind, f.digits = kTimestamp, digitsOf(arg)
		s = schemaType{typ: "string", name: "io.debezium.time.ZonedTimestamp", version: 1}
	case "time":
		f.kind, f.digits = kTime, digitsOf(arg)
		if m.Time.Precision.Mode == config.TimeConnect {
			s = schemaType{typ: "int32", name: "org.apache.kafka.connect.data.Time", version: 1}
		} else {
			f.micro = true
			s = schemaType{typ: "int64", name: "io.debezium.time.MicroTime", version: 1}
		}
	}
	return s
}

func digitsOf(arg string) int {
	n, _ := strconv.Atoi(arg)
	return n
}

// schemaType is a Kafka Connect schema of a primitive or logical type.
type schemaType struct {
	typ     string
	name    string
	version int
	params  [][2]string
}

// appendField appends the schema as a struct's field, its members in the
// order the JSON converter writes them.
func (s schemaType) appendField(buf []byte, optional bool, name string) []byte {
	buf = append(buf, `{"type":`...)
	buf = strconv.AppendQuote(buf, s.typ)
	buf = append(buf, `,"optional":`...)
	buf = strconv.AppendBool(buf, optional)
	if s.name != "" {
		buf = append(buf, `,"name":`...)
		buf = appendString(buf, s.name)
		buf = append(buf, `,"version":`...)
		buf = strconv.AppendInt(buf, int64(s.version), 10)
	}
	if len(s.params) > 0 {
		buf = append(buf, `,"parameters":`...)
		buf = appendStringObject(buf, s.params)
	}
	buf = append(buf, `,"field":`...)
	buf = appendString(buf, name)
	return append(buf, '}')
}

// appendStruct appends a struct schema of fields, as a field (name
// non-empty) or on its own.
func appendStruct(buf []byte, fields [][]byte, optional bool, schemaName, field string) []byte {
	buf = append(buf, `{"type":"struct","fields":[`...)
	for i, f := range fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, f...)
	}
	buf = append(buf, `],"optional":`...)
	buf = strconv.AppendBool(buf, optional)
	buf = append(buf, `,"name":`...)
	buf = appendString(buf, schemaName)
	if field != "" {
		buf = append(buf, `,"field":`...)
		buf = appendString(buf, field)
	}
	return append(buf, '}')
}

// appendStringObject appends pairs as a JSON object of strings, in their
// order (Connect keeps parameters in insertion order, and so do the
// converters that print them).
func appendStringObject(buf []byte, pairs [][2]string) []byte {
	buf = append(buf, '{')
	for i, p := range pairs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, p[0])
		buf = append(buf, ':')
		buf = appendString(buf, p[1])
	}
	return append(buf, '}')
}
