package debezium

// The Avro body of an event, written straight from readside's values: the
// compiled Avro schema (avroNode, avro.go) is walked field by field and
// each value appended in Avro binary (zig-zag varints, length-prefixed
// bytes and strings, a union's branch index before a nullable value), with
// no JSON payload in between. The bytes are, by contract, the ones Avro
// gives the JSON converter's payload of the same event (Table.Value): the
// tests encode every case both ways and compare.
//
// The walk is generic: an envelope field is bound by its path in the
// Connect schema ("source.gtid") to where its value comes from
// (envFields), a record's presence and its fields alike. A new optional
// envelope field without a binding is written null; giving it values is
// an entry in envFields and a case in envValue, no new code path.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/readside/readside/config"
)

// envField names where an envelope value comes from.
type envField uint8

const (
	envNull envField = iota // no value here: always null
	envBefore
	envAfter
	envOp
	envTsMs
	envTsUs
	envTsNs
	envSource // the source record's presence
	envSourceVersion
	envSourceConnector
	envSourceName
	envSourceTsMs
	envSourceSnapshot
	envSourceDB
	envSourceTsUs
	envSourceTsNs
	envSourceTable
	envSourceServerID
	envSourceGTID
	envSourceFile
	envSourcePos
	envSourceRow
	envTxn // the transaction block's presence (provide.transaction.metadata)
	envTxnID
	envTxnTotalOrder
	envTxnCollectionOrder
)

// envFields binds envelope fields, by path, to their values. Fields of
// the schema missing here (source.sequence, source.thread, source.query)
// are null in every event readside writes.
var envFields = map[string]envField{
	"before": envBefore, "after": envAfter,
	"op": envOp, "ts_ms": envTsMs, "ts_us": envTsUs, "ts_ns": envTsNs,
	"source": envSource, "source.version": envSourceVersion, "source.connector": envSourceConnector,
	"source.name": envSourceName, "source.ts_ms": envSourceTsMs, "source.snapshot": envSourceSnapshot,
	"source.db": envSourceDB, "source.ts_us": envSourceTsUs, "source.ts_ns": envSourceTsNs,
	"source.table": envSourceTable, "source.server_id": envSourceServerID, "source.gtid": envSourceGTID,
	"source.file": envSourceFile, "source.pos": envSourcePos, "source.row": envSourceRow,
	"transaction": envTxn, "transaction.id": envTxnID, "transaction.total_order": envTxnTotalOrder,
	"transaction.data_collection_order": envTxnCollectionOrder,
}

// avroEvent is one change, what an event's envelope values are read from.
type avroEvent struct {
	op            byte
	before, after Row
	src           *Source
	now           time.Time
}

// envValue is one envelope value other than a row image: null, a string
// or an integer (a record's is whether it is there).
type envValue struct {
	null bool
	s    string
	i    int64
}

// envValue is the value of the field bound to which in e.
func (a *Avro) envValue(which envField, e *avroEvent) envValue {
	t, src := a.t, e.src
	ms := int64(src.TsSec) * 1000
	switch which {
	case envOp:
		return envValue{s: string([]byte{e.op})}
	case envTsMs:
		return envValue{i: e.now.UnixMilli()}
	case envTsUs:
		return envValue{i: e.now.UnixMicro()}
	case envTsNs:
		return envValue{i: e.now.UnixNano()}
	case envSource:
		return envValue{}
	case envSourceVersion:
		return envValue{s: Version}
	case envSourceConnector:
		return envValue{s: t.connector}
	case envSourceName:
		return envValue{s: t.prefix}
	case envSourceTsMs:
		return envValue{i: ms}
	case envSourceSnapshot:
		if src.Snapshot {
			return envValue{s: "true"}
		}
		return envValue{s: "false"}
	case envSourceDB:
		return envValue{s: t.db}
	case envSourceTsUs:
		return envValue{i: ms * 1000}
	case envSourceTsNs:
		return envValue{i: ms * 1000000}
	case envSourceTable:
		return envValue{s: t.name}
	case envSourceServerID:
		return envValue{i: int64(src.ServerID)}
	case envSourceGTID:
		return envValue{s: src.GTID, null: src.GTID == ""}
	case envSourceFile:
		return envValue{s: src.File}
	case envSourcePos:
		return envValue{i: int64(src.Pos)}
	case envSourceRow:
		return envValue{i: int64(src.Row)}
	case envTxn:
		return envValue{null: src.Txn == nil}
	case envTxnID:
		return envValue{s: src.Txn.ID}
	case envTxnTotalOrder:
		return envValue{i: src.Txn.TotalOrder}
	case envTxnCollectionOrder:
		return envValue{i: src.Txn.DataCollectionOrder}
	}
	return envValue{null: true}
}

// bind sets where each field of the record n (at path) takes its value
// from, and checks the row images have the table's columns.
func (a *Avro) bind(n *avroNode, path string) error {
	for i := range n.fields {
		f := &n.fields[i]
		at := f.name
		if path != "" {
			at = path + "." + f.name
		}
		f.path, f.bind = at, envFields[at]
		switch {
		case f.bind == envBefore || f.bind == envAfter:
			if err := a.checkColumns(f.node, at, allColumns(len(a.t.fields))); err != nil {
				return err
			}
		case f.bind == envNull:
			if !f.node.optional {
				return fmt.Errorf("readside has no value for the envelope's required field %s: report it", at)
			}
		case f.node.kind == aRecord:
			if err := a.bind(f.node, at); err != nil {
				return err
			}
		case f.node.kind != aString && f.node.kind != aLong && f.node.kind != aInt:
			return fmt.Errorf("readside writes the envelope's field %s as a string or an integer, not Avro kind %d: report it", at, f.node.kind)
		}
	}
	return nil
}

func allColumns(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// checkColumns checks the record n has the fields of the table's columns
// at cols, in that order.
func (a *Avro) checkColumns(n *avroNode, path string, cols []int) error {
	if n.kind != aRecord || len(n.fields) != len(cols) {
		return fmt.Errorf("readside's Avro schema of %s does not have the table's %d columns: report it", path, len(cols))
	}
	for j, i := range cols {
		if n.fields[j].name != a.t.fields[i].name {
			return fmt.Errorf("readside's Avro schema of %s has field %s where column %s is: report it", path, n.fields[j].name, a.t.fields[i].name)
		}
	}
	return nil
}

// appendRecord appends the fields of an envelope record.
func (a *Avro) appendRecord(buf []byte, n *avroNode, e *avroEvent) ([]byte, error) {
	var err error
	for i := range n.fields {
		f := &n.fields[i]
		switch f.bind {
		case envBefore:
			buf, err = a.appendRow(buf, f.node, e.before, e.src.Snapshot)
		case envAfter:
			buf, err = a.appendRow(buf, f.node, e.after, e.src.Snapshot)
		default:
			v := a.envValue(f.bind, e)
			if buf, err = appendUnion(buf, f.node, v.null, f.path); err != nil || v.null {
				break
			}
			switch f.node.kind {
			case aRecord:
				buf, err = a.appendRecord(buf, f.node, e)
			case aString:
				buf = appendAvroText(buf, v.s)
			case aInt:
				if v.i != int64(int32(v.i)) {
					return nil, fmt.Errorf("field %s: %d is out of the int range", f.path, v.i)
				}
				buf = appendAvroLong(buf, v.i)
			default:
				buf = appendAvroLong(buf, v.i)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// appendUnion appends the branch index of an optional node, null or not;
// a null where the schema takes none is an error.
func appendUnion(buf []byte, n *avroNode, null bool, path string) ([]byte, error) {
	if !n.optional {
		if null {
			return nil, fmt.Errorf("field %s: null where the schema takes none", path)
		}
		return buf, nil
	}
	if null {
		return appendAvroLong(buf, n.nullIdx), nil
	}
	return appendAvroLong(buf, 1-n.nullIdx), nil
}

// appendRow appends a row image (nil for none) as the record n.
func (a *Avro) appendRow(buf []byte, n *avroNode, row Row, snapshot bool) ([]byte, error) {
	var err error
	if buf, err = appendUnion(buf, n, row == nil, "row image"); err != nil || row == nil {
		return buf, err
	}
	t := a.t
	for j := range n.fields {
		if buf, err = t.fields[j].appendAvro(buf, n.fields[j].node, row[j], &t.modes, snapshot); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// appendAvro appends raw, readside's JSON encoding of one value of f, as
// the Avro node n: the value appendValue writes, in Avro binary.
func (f *field) appendAvro(buf []byte, n *avroNode, raw []byte, m *config.Debezium, snapshot bool) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return f.avroNull(buf, n)
	}
	switch f.kind {
	case kNumber:
		return f.avroNumber(buf, n, raw)
	case kString:
		s, err := avroUnquote(raw)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		return f.avroString(buf, n, s)
	case kUnsigned:
		u, err := parseUint(raw)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		if m.Bigint.Unsigned.Handling.Mode == config.UnsignedPrecise {
			return f.avroBytes(buf, n, twosComplement(new(big.Int).SetUint64(u)))
		}
		return f.avroInt(buf, n, int64(u)) // long: Debezium's wrap, see appendNumber
	case kDecimal:
		return f.avroDecimal(buf, n, raw, m)
	case kBool:
		u, err := parseUint(raw)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		if n.kind != aBool {
			return nil, f.kindMismatch(n)
		}
		buf = appendUnionValue(buf, n)
		if u != 0 {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case kBits:
		u, err := parseUint(raw)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], u)
		return f.avroBytes(buf, n, le[:(f.bits+7)/8])
	case kDate, kDatetime, kTimestamp:
		return f.avroDatetime(buf, n, raw, snapshot)
	case kTime:
		s, err := avroUnquote(raw)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		us, err := parseTime(string(s))
		if err != nil {
			return nil, f.bad(raw, err)
		}
		if !f.micro {
			if !timeOfDay(us) {
				return f.avroNull(buf, n)
			}
			return f.avroInt(buf, n, us/1000)
		}
		return f.avroInt(buf, n, us)
	case kBinary:
		return f.avroBinary(buf, n, raw, m)
	}
	return nil, f.bad(raw, fmt.Errorf("no encoding for kind %d", f.kind))
}

func (f *field) avroNull(buf []byte, n *avroNode) ([]byte, error) {
	if !n.optional {
		return nil, fmt.Errorf("column %s: null where the schema takes none", f.name)
	}
	return appendAvroLong(buf, n.nullIdx), nil
}

// appendUnionValue appends the non-null branch of an optional node.
func appendUnionValue(buf []byte, n *avroNode) []byte {
	if n.optional {
		return appendAvroLong(buf, 1-n.nullIdx)
	}
	return buf
}

func (f *field) kindMismatch(n *avroNode) error {
	return fmt.Errorf("column %s: readside has no encoding of its kind %d as Avro kind %d: report it", f.name, f.kind, n.kind)
}

// avroNumber: a number as it is, in the node's integer or floating type.
func (f *field) avroNumber(buf []byte, n *avroNode, raw []byte) ([]byte, error) {
	switch n.kind {
	case aInt, aLong:
		i, err := parseInt(raw, n.kind == aInt)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		return appendAvroLong(appendUnionValue(buf, n), i), nil
	case aFloat, aDouble:
		d, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		return appendAvroFloat(appendUnionValue(buf, n), n, d), nil
	}
	return nil, f.kindMismatch(n)
}

// avroInt: a number readside computed, in the node's numeric type.
func (f *field) avroInt(buf []byte, n *avroNode, i int64) ([]byte, error) {
	switch n.kind {
	case aInt:
		if i != int64(int32(i)) {
			return nil, fmt.Errorf("column %s: %d is out of the int range", f.name, i)
		}
		return appendAvroLong(appendUnionValue(buf, n), i), nil
	case aLong:
		return appendAvroLong(appendUnionValue(buf, n), i), nil
	case aFloat, aDouble:
		return appendAvroFloat(appendUnionValue(buf, n), n, float64(i)), nil
	}
	return nil, f.kindMismatch(n)
}

func appendAvroFloat(buf []byte, n *avroNode, d float64) []byte {
	if n.kind == aFloat {
		return binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(d)))
	}
	return binary.LittleEndian.AppendUint64(buf, math.Float64bits(d))
}

func (f *field) avroString(buf []byte, n *avroNode, s []byte) ([]byte, error) {
	if n.kind != aString {
		return nil, f.kindMismatch(n)
	}
	buf = appendAvroLong(appendUnionValue(buf, n), int64(len(s)))
	return append(buf, s...), nil
}

func (f *field) avroBytes(buf []byte, n *avroNode, b []byte) ([]byte, error) {
	if n.kind != aBytes {
		return nil, f.kindMismatch(n)
	}
	buf = appendAvroLong(appendUnionValue(buf, n), int64(len(b)))
	return append(buf, b...), nil
}

// avroDecimal: DECIMAL under decimal.handling.mode (see appendNumber).
func (f *field) avroDecimal(buf []byte, n *avroNode, raw []byte, m *config.Debezium) ([]byte, error) {
	s, err := avroUnquote(raw)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	switch m.Decimal.Handling.Mode {
	case config.DecimalString:
		return f.avroString(buf, n, s)
	case config.DecimalDouble:
		d, err := strconv.ParseFloat(string(s), 64)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		if n.kind != aDouble && n.kind != aFloat {
			return nil, f.kindMismatch(n)
		}
		return appendAvroFloat(appendUnionValue(buf, n), n, d), nil
	}
	if v, ok := smallDecimal(s, f.digits); ok {
		var b [8]byte
		return f.avroBytes(buf, n, twosComplement64(b[:0], v))
	}
	text := string(s)
	unscaled, ok := new(big.Int).SetString(strings.Replace(text, ".", "", 1), 10)
	if !ok || fractionDigits(text) != f.digits {
		return nil, f.bad(raw, fmt.Errorf("not a decimal of scale %d", f.digits))
	}
	return f.avroBytes(buf, n, twosComplement(unscaled))
}

// smallDecimal reads [-]digits[.digits] of scale fraction digits and at
// most 18 digits in all (an int64 holds them) as its unscaled value; ok
// is false for any other text, which the big.Int path reads.
func smallDecimal(s []byte, scale int) (v int64, ok bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		i, neg = 1, true
	}
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v*10 + int64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 18 || frac != scale {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// twosComplement64 appends v's big-endian two's complement in the fewest
// bytes, what twosComplement gives for the same number.
func twosComplement64(buf []byte, v int64) []byte {
	x := uint64(v)
	if v < 0 {
		x = ^x
	}
	n := (bits.Len64(x) + 8) / 8 // the bits and a sign bit
	for i := n - 1; i >= 0; i-- {
		buf = append(buf, byte(uint64(v)>>(8*i)))
	}
	return buf
}

// avroDatetime: DATE, DATETIME and TIMESTAMP (see appendDatetime).
func (f *field) avroDatetime(buf []byte, n *avroNode, raw []byte, snapshot bool) ([]byte, error) {
	s, err := avroUnquote(raw)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	t, zero, ok := parseDatetimeFast(s)
	if !ok {
		if t, zero, err = parseDatetime(string(s)); err != nil {
			return nil, f.bad(raw, err)
		}
	}
	switch {
	case zero && f.kind == kTimestamp:
		return f.avroString(buf, n, []byte("1970-01-01T00:00:00Z"))
	case zero && f.optional:
		return f.avroNull(buf, n)
	case zero:
		return f.avroInt(buf, n, 0)
	case f.kind == kTimestamp:
		var text [32]byte
		return f.avroString(buf, n, appendZonedTimestamp(text[:0], t, f.digits, snapshot))
	case f.kind == kDate:
		return f.avroInt(buf, n, floorDiv(t.Unix(), 86400))
	case f.micro:
		return f.avroInt(buf, n, t.UnixMicro())
	}
	return f.avroInt(buf, n, t.UnixMilli())
}

// appendZonedTimestamp appends zonedTimestamp's text of t.
func appendZonedTimestamp(buf []byte, t time.Time, digits int, snapshot bool) []byte {
	buf = t.AppendFormat(buf, "2006-01-02T15:04:05")
	var frac [6]byte
	us := t.Nanosecond() / 1000
	for i := 5; i >= 0; i-- {
		frac[i] = byte('0' + us%10)
		us /= 10
	}
	f := frac[:min(digits, 6)]
	if snapshot {
		for len(f) > 0 && f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
	}
	if len(f) > 0 {
		buf = append(buf, '.')
		buf = append(buf, f...)
	}
	return append(buf, 'Z')
}

// parseDatetimeFast reads parseDatetime's common text, "YYYY-MM-DD" and
// an optional " hh:mm:ss" and ".f" of 1 to 6 digits, without allocating;
// ok is false for any other text, which parseDatetime reads.
func parseDatetimeFast(s []byte) (t time.Time, zero bool, ok bool) {
	num := func(b []byte) (int, bool) {
		v := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return t, false, false
	}
	y, ok1 := num(s[:4])
	mo, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return t, false, false
	}
	var us int64
	if len(s) > 10 {
		c := s[11:]
		if s[10] != ' ' || len(c) < 8 || c[2] != ':' || c[5] != ':' {
			return t, false, false
		}
		h, ok1 := num(c[:2])
		mi, ok2 := num(c[3:5])
		sec, ok3 := num(c[6:8])
		if !ok1 || !ok2 || !ok3 {
			return t, false, false
		}
		us = (int64(h)*3600 + int64(mi)*60 + int64(sec)) * 1e6
		if len(c) > 8 {
			fr := c[9:]
			if c[8] != '.' || len(fr) < 1 || len(fr) > 6 {
				return t, false, false
			}
			v, ok := num(fr)
			if !ok {
				return t, false, false
			}
			for range 6 - len(fr) {
				v *= 10
			}
			us += int64(v)
		}
	}
	if mo == 0 || d == 0 {
		return t, true, true
	}
	switch {
	case y < 70:
		y += 2000
	case y < 100:
		y += 1900
	}
	return time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Add(time.Duration(us) * time.Microsecond), false, true
}

// avroBinary: bytes under binary.handling.mode (see appendBinary).
func (f *field) avroBinary(buf []byte, n *avroNode, raw []byte, m *config.Debezium) ([]byte, error) {
	s, err := avroUnquote(raw)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	if m.Binary.Handling.Mode == config.BinaryBase64 {
		return f.avroString(buf, n, s) // the base64 text as it is
	}
	if m.Binary.Handling.Mode == config.BinaryBytes {
		// The decoded length is known from padded base64, so the bytes
		// are decoded in place after their length; other text (line
		// breaks, which base64 skips) takes the copying path below.
		if size, ok := base64Len(s); ok && n.kind == aBytes {
			start := len(buf)
			buf = appendAvroLong(appendUnionValue(buf, n), int64(size))
			at := len(buf)
			if buf, err = base64.StdEncoding.AppendDecode(buf, s); err == nil && len(buf)-at == size {
				return buf, nil
			}
			buf = buf[:start]
		}
	}
	b, err := base64.StdEncoding.DecodeString(string(s))
	if err != nil {
		return nil, f.bad(raw, err)
	}
	switch m.Binary.Handling.Mode {
	case config.BinaryBytes:
		return f.avroBytes(buf, n, b)
	case config.BinaryHex:
		return f.avroString(buf, n, []byte(hex.EncodeToString(b)))
	}
	return f.avroString(buf, n, []byte(base64.URLEncoding.EncodeToString(b)))
}

// base64Len is the length padded standard base64 s decodes to; ok is
// false where s is not such text.
func base64Len(s []byte) (int, bool) {
	if len(s)%4 != 0 {
		return 0, false
	}
	n := len(s) / 4 * 3
	if len(s) > 0 && s[len(s)-1] == '=' {
		n--
		if s[len(s)-2] == '=' {
			n--
		}
	}
	return n, true
}

// avroUnquote is the text of a JSON string as a JSON decoder reads it:
// the bytes between the quotes when they hold no escape, no control
// character and only valid UTF-8 (readside's encoding of most text),
// decoded by encoding/json otherwise.
func avroUnquote(raw []byte) ([]byte, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		s := raw[1 : len(raw)-1]
		ascii := true
		plain := true
		for _, c := range s {
			if c < 0x20 || c == '"' || c == '\\' {
				plain = false
				break
			}
			if c >= utf8.RuneSelf {
				ascii = false
			}
		}
		if plain && (ascii || utf8.Valid(s)) {
			return s, nil
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// parseInt reads a JSON integer as strconv.ParseInt does, in 32 or 64
// bits; the common short decimal is read without allocating.
func parseInt(raw []byte, int32Range bool) (int64, error) {
	neg, s := false, raw
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	if len(s) > 0 && len(s) <= 18 {
		var v int64
		for _, c := range s {
			if c < '0' || c > '9' {
				goto slow
			}
			v = v*10 + int64(c-'0')
		}
		if neg {
			v = -v
		}
		if int32Range && v != int64(int32(v)) {
			goto slow // strconv's range error
		}
		return v, nil
	}
slow:
	size := 64
	if int32Range {
		size = 32
	}
	return strconv.ParseInt(string(raw), 10, size)
}

// parseUint reads a JSON unsigned integer as strconv.ParseUint does.
func parseUint(raw []byte) (uint64, error) {
	if len(raw) > 0 && len(raw) <= 19 {
		var v uint64
		for _, c := range raw {
			if c < '0' || c > '9' {
				return strconv.ParseUint(string(raw), 10, 64)
			}
			v = v*10 + uint64(c-'0')
		}
		return v, nil
	}
	return strconv.ParseUint(string(raw), 10, 64)
}

// appendAvroLong appends v as Avro's int or long: a zig-zag varint.
func appendAvroLong(buf []byte, v int64) []byte {
	return binary.AppendUvarint(buf, uint64(v<<1)^uint64(v>>63))
}

// appendAvroText appends s as an Avro string, as a JSON converter's
// payload carries it (invalid UTF-8 becomes U+FFFD, byte by byte).
func appendAvroText(buf []byte, s string) []byte {
	if !utf8.ValidString(s) {
		b, _ := json.Marshal(s)
		var valid string
		_ = json.Unmarshal(b, &valid)
		s = valid
	}
	buf = appendAvroLong(buf, int64(len(s)))
	return append(buf, s...)
}
