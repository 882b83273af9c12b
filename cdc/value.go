package cdc

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"
)

// valueKind says how a column's binlog value becomes JSON.
type valueKind uint8

const (
	kindInt      valueKind = iota // JSON number
	kindFloat32                   // JSON number, shortest float32 text
	kindFloat64                   // JSON number, shortest float64 text
	kindDecimal                   // JSON string, exact, with the column's scale
	kindTemporal                  // JSON string, DATE/DATETIME/TIMESTAMP (UTC)/TIME
	kindText                      // JSON string, decoded from the column charset
	kindBinary                    // JSON string, base64 of the bytes
	kindJSON                      // JSON string holding the JSON document's text
	kindEnum                      // JSON string, the member name ("" for index 0)
	kindSet                       // JSON string, member names joined by ','
	kindBit                       // JSON number, unsigned
)

// column is how one source column is named, typed and encoded.
type column struct {
	name     string
	typeName string // for the envelope's schema, e.g. "bigint unsigned"
	kind     valueKind
	fraction int         // decimal scale, or fractional second digits
	padTo    int         // BINARY(n): restore the \0 padding the binlog drops
	decoder  textDecoder // text from its charset to UTF-8 (charsetDecoders)
	members  []string    // ENUM and SET member names
	excluded bool        // source.exclude_columns: never published
	// collation of a text, ENUM or SET column ("" unknown): in the schema
	// version only, so that a DDL changing only it (which values compare
	// equal) is a new shape to the projectors, which compare their read
	// tables with each new shape.
	collation string
	member    []byte // `"name":`, encoded once by encodeSchema (nil before: encoded each time)
	// unsignedBits is the width of an unsigned integer column. The binlog
	// decoder reads every integer as signed (rowdecode.Signless); negative
	// values are reinterpreted at that width.
	unsignedBits int
}

// appendValue appends v, a value go-mysql decoded for col, as JSON.
func (col *column) appendValue(buf []byte, v any) ([]byte, error) {
	if v == nil {
		return append(buf, "null"...), nil
	}
	switch col.kind {
	case kindInt, kindBit:
		if col.unsignedBits > 0 {
			if u, ok := asUnsigned(v, col.unsignedBits); ok {
				return strconv.AppendUint(buf, u, 10), nil
			}
		}
		switch n := v.(type) {
		case int8:
			return strconv.AppendInt(buf, int64(n), 10), nil
		case int16:
			return strconv.AppendInt(buf, int64(n), 10), nil
		case int32:
			return strconv.AppendInt(buf, int64(n), 10), nil
		case int64:
			if col.kind == kindBit {
				// go-mysql returns BIT(64) with the top bit set as negative.
				return strconv.AppendUint(buf, uint64(n), 10), nil
			}
			return strconv.AppendInt(buf, n, 10), nil
		case int:
			return strconv.AppendInt(buf, int64(n), 10), nil
		case uint8:
			return strconv.AppendUint(buf, uint64(n), 10), nil
		case uint16:
			return strconv.AppendUint(buf, uint64(n), 10), nil
		case uint32:
			return strconv.AppendUint(buf, uint64(n), 10), nil
		case uint64:
			return strconv.AppendUint(buf, n, 10), nil
		}
	case kindFloat32:
		if f, ok := v.(float32); ok && !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
			return strconv.AppendFloat(buf, float64(f), 'g', -1, 32), nil
		}
	case kindFloat64:
		if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return strconv.AppendFloat(buf, f, 'g', -1, 64), nil
		}
	case kindDecimal:
		switch d := v.(type) {
		case decimal.Decimal:
			// decimal.Decimal drops trailing zeros; the scale restores them.
			return appendJSONString(buf, d.StringFixed(int32(col.fraction))), nil
		case string:
			return appendJSONString(buf, d), nil
		}
	case kindTemporal:
		switch t := v.(type) {
		case string:
			return appendJSONString(buf, fixFraction(t, col.fraction)), nil
		case time.Time:
			// DATETIME is decoded in UTC already; TIMESTAMP is an instant,
			// published in UTC.
			buf = append(buf, '"')
			buf = appendDatetime(buf, t.UTC(), col.fraction)
			return append(buf, '"'), nil
		}
	case kindText, kindJSON:
		var s string
		switch t := v.(type) {
		case string:
			s = t
		case []byte:
			s = string(t)
		default:
			return nil, fmt.Errorf("column %s: unexpected %T for text", col.name, v)
		}
		if col.decoder != nil {
			s = col.decoder(s)
		}
		return appendJSONString(buf, s), nil
	case kindBinary:
		return col.appendBinary(buf, v), nil
	case kindEnum:
		if i, ok := v.(int64); ok {
			return col.appendEnum(buf, i)
		}
	case kindSet:
		if bits, ok := v.(int64); ok {
			return col.appendSet(buf, bits), nil
		}
	}
	return nil, fmt.Errorf("column %s (%s): unexpected value %T from the binlog decoder", col.name, col.typeName, v)
}

// appendBinary appends a binary column's bytes as base64, padded to a
// BINARY(n) column's length: the binlog drops its trailing zero bytes.
func (col *column) appendBinary(buf []byte, v any) []byte {
	var b []byte
	switch t := v.(type) {
	case string:
		b = []byte(t)
	case []byte:
		b = t
	}
	if len(b) < col.padTo {
		b = append(b, make([]byte, col.padTo-len(b))...)
	}
	buf = append(buf, '"')
	buf = base64.StdEncoding.AppendEncode(buf, b)
	return append(buf, '"')
}

// appendEnum appends the name of ENUM member i (1-based).
func (col *column) appendEnum(buf []byte, i int64) ([]byte, error) {
	if i == 0 { // MySQL's "invalid value" member
		return append(buf, `""`...), nil
	}
	if i > 0 && i <= int64(len(col.members)) {
		return appendJSONString(buf, col.members[i-1]), nil
	}
	return nil, fmt.Errorf("column %s: ENUM index %d beyond its %d members", col.name, i, len(col.members))
}

// appendSet appends the SET members whose bits are set, comma-separated.
func (col *column) appendSet(buf []byte, bits int64) []byte {
	var names []string
	for i, m := range col.members {
		if bits&(1<<i) != 0 {
			names = append(names, m)
		}
	}
	return appendJSONString(buf, strings.Join(names, ","))
}

// appendDatetime appends t as YYYY-MM-DD hh:mm:ss with digits fractional
// digits, the text MySQL gives such a column.
func appendDatetime(buf []byte, t time.Time, digits int) []byte {
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	buf = appendPadded(buf, year, 4)
	buf = append(buf, '-')
	buf = appendPadded(buf, int(month), 2)
	buf = append(buf, '-')
	buf = appendPadded(buf, day, 2)
	buf = append(buf, ' ')
	buf = appendPadded(buf, hour, 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, minute, 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, sec, 2)
	if digits > 0 {
		var frac [6]byte
		us := t.Nanosecond() / 1000
		for i := 5; i >= 0; i-- {
			frac[i] = byte('0' + us%10)
			us /= 10
		}
		buf = append(buf, '.')
		buf = append(buf, frac[:min(digits, 6)]...)
	}
	return buf
}

// appendPadded appends a non-negative n with leading zeros to width.
func appendPadded(buf []byte, n, width int) []byte {
	var d [20]byte
	i := len(d)
	for n > 0 || len(d)-i < width {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(buf, d[i:]...)
}

// asUnsigned reinterprets a signed integer of the given width.
func asUnsigned(v any, bits int) (uint64, bool) {
	var n int64
	switch x := v.(type) {
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	default:
		return 0, false
	}
	if bits == 64 {
		return uint64(n), true
	}
	return uint64(n) & (1<<bits - 1), true
}

// fixFraction makes a temporal string carry exactly digits fractional
// digits: go-mysql prints TIME(n) and zero dates without them.
func fixFraction(s string, digits int) string {
	if digits == 0 {
		return s
	}
	dot := strings.LastIndexByte(s, '.')
	if dot < 0 || strings.IndexByte(s[dot:], ':') >= 0 {
		return s + "." + strings.Repeat("0", digits)
	}
	if have := len(s) - dot - 1; have < digits {
		return s + strings.Repeat("0", digits-have)
	}
	return s
}

// intTypeNames maps integer binlog types to SQL names.
var intTypeNames = map[byte]string{
	mysql.MYSQL_TYPE_TINY: "tinyint", mysql.MYSQL_TYPE_SHORT: "smallint", mysql.MYSQL_TYPE_INT24: "mediumint",
	mysql.MYSQL_TYPE_LONG: "int", mysql.MYSQL_TYPE_LONGLONG: "bigint",
}

// intWidth is the width in bits of an integer binlog type.
func intWidth(typ byte) int {
	switch typ {
	case mysql.MYSQL_TYPE_TINY:
		return 8
	case mysql.MYSQL_TYPE_SHORT:
		return 16
	case mysql.MYSQL_TYPE_INT24:
		return 24
	case mysql.MYSQL_TYPE_LONG:
		return 32
	}
	return 64
}

// realStringType decodes the metadata of a MYSQL_TYPE_STRING column:
// CHAR/BINARY, ENUM and SET share this type; the real one is in meta, with
// the column's length.
func realStringType(meta uint16) (typ byte, length int) {
	b0, b1 := byte(meta>>8), byte(meta&0xff)
	if b0&0x30 != 0x30 {
		return b0 | 0x30, int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
	}
	return b0, int(b1)
}

// columnMembers decodes an ENUM or SET column's member names, which the
// binlog carries only with binlog_row_metadata=FULL.
func columnMembers(name, kind string, members []string, collation uint64, charsetOf func(uint64) string) ([]string, error) {
	if members == nil {
		return nil, fmt.Errorf("column %s: %s member names missing from the binlog: set binlog_row_metadata=FULL", name, kind)
	}
	names, err := memberNames(members, collation, charsetOf)
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", name, err)
	}
	return names, nil
}

// newColumn builds column i of a table map. charsetOf maps a collation id to
// its charset name (from the source's information_schema).
func newColumn(tm *replication.TableMapEvent, i int, name string, charsetOf func(uint64) string) (column, error) {
	col := column{name: name}
	typ, meta := tm.ColumnType[i], tm.ColumnMeta[i]
	length := 0
	if typ == mysql.MYSQL_TYPE_STRING && meta >= 256 {
		typ, length = realStringType(meta)
	}
	unsigned := tm.UnsignedMap()[i]
	switch typ {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		col.kind, col.typeName = kindInt, intTypeNames[typ]
		if unsigned {
			col.typeName += " unsigned"
			col.unsignedBits = intWidth(typ)
		}
	case mysql.MYSQL_TYPE_YEAR:
		col.kind, col.typeName = kindInt, "year"
	case mysql.MYSQL_TYPE_FLOAT:
		col.kind, col.typeName = kindFloat32, "float"
	case mysql.MYSQL_TYPE_DOUBLE:
		col.kind, col.typeName = kindFloat64, "double"
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		prec, scale := int(meta>>8), int(meta&0xff)
		col.kind, col.fraction = kindDecimal, scale
		col.typeName = fmt.Sprintf("decimal(%d,%d)", prec, scale)
	case mysql.MYSQL_TYPE_BIT:
		col.kind, col.typeName = kindBit, fmt.Sprintf("bit(%d)", int(meta>>8)*8+int(meta&0xff))
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		col.kind, col.typeName = kindTemporal, "date"
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		col.kind, col.typeName = kindTemporal, "datetime"
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		col.kind, col.typeName = kindTemporal, "timestamp"
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		col.kind, col.typeName = kindTemporal, "time"
	case mysql.MYSQL_TYPE_ENUM:
		col.kind, col.typeName = kindEnum, "enum"
		var err error
		if col.members, err = columnMembers(name, "ENUM", tm.EnumStrValueMap()[i], tm.EnumSetCollationMap()[i], charsetOf); err != nil {
			return col, err
		}
	case mysql.MYSQL_TYPE_SET:
		col.kind, col.typeName = kindSet, "set"
		var err error
		if col.members, err = columnMembers(name, "SET", tm.SetStrValueMap()[i], tm.EnumSetCollationMap()[i], charsetOf); err != nil {
			return col, err
		}
	case mysql.MYSQL_TYPE_JSON:
		col.kind, col.typeName = kindJSON, "json"
	case mysql.MYSQL_TYPE_GEOMETRY:
		col.kind, col.typeName = kindBinary, "geometry"
	case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_BLOB:
		coll, ok := tm.CollationMap()[i]
		if !ok {
			return col, fmt.Errorf("column %s: character set missing from the binlog: set binlog_row_metadata=FULL", name)
		}
		charset := charsetOf(coll)
		base := map[byte][2]string{
			mysql.MYSQL_TYPE_STRING: {"char", "binary"}, mysql.MYSQL_TYPE_VARCHAR: {"varchar", "varbinary"},
			mysql.MYSQL_TYPE_VAR_STRING: {"varchar", "varbinary"}, mysql.MYSQL_TYPE_BLOB: {"text", "blob"},
		}[typ]
		if charset == "binary" {
			col.kind, col.typeName = kindBinary, base[1]
			if typ == mysql.MYSQL_TYPE_STRING {
				col.padTo = length
				col.typeName = fmt.Sprintf("binary(%d)", length)
			}
			break
		}
		dec, err := charsetDecoder(charset)
		if err != nil {
			return col, fmt.Errorf("column %s: %w", name, err)
		}
		col.kind, col.typeName, col.decoder = kindText, base[0], dec
	default:
		return col, fmt.Errorf("column %s: binlog type %d is not supported; exclude the column (source.exclude_columns) or change its type", name, typ)
	}
	switch typ {
	case mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_TIME2:
		col.fraction = int(meta)
		if meta > 0 {
			col.typeName += fmt.Sprintf("(%d)", meta)
		}
	}
	return col, nil
}
