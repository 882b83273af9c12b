package debezium

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/readside/readside/config"
)

// The oracle: an event's Avro body as the JSON converter's payload
// (Table.Value, the JSON format's encoder) transcoded to Avro by an Avro
// library's writer, value by value along the compiled schema. The direct
// encoder (avroenc.go) must write the same bytes.

func (a *Avro) transcodedKey(id int, row Row) ([]byte, error) {
	payload, err := a.t.KeyPayload(nil, row)
	if err != nil {
		return nil, err
	}
	return a.transcode(id, a.key, payload)
}

func (a *Avro) transcodedValue(id int, op byte, before, after Row, src Source, now time.Time) ([]byte, error) {
	payload, err := a.t.Value(nil, op, before, after, src, now)
	if err != nil {
		return nil, err
	}
	return a.transcode(id, a.value, payload)
}

func (a *Avro) transcode(id int, n *avroNode, payload []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading the JSON payload: %w", err)
	}
	w := avro.NewWriter(nil, len(payload))
	if err := transcodeAvro(w, n, v, ""); err != nil {
		return nil, err
	}
	return append(appendWireHeader(nil, id), w.Buffer()...), nil
}

// transcodeAvro writes v, a JSON payload's value decoded with UseNumber,
// as n.
func transcodeAvro(w *avro.Writer, n *avroNode, v any, path string) error {
	if n.optional {
		if v == nil {
			w.WriteLong(n.nullIdx)
			return nil
		}
		w.WriteLong(1 - n.nullIdx)
	} else if v == nil {
		return fmt.Errorf("field %s: null where the schema takes none", path)
	}
	bad := func(err error) error { return fmt.Errorf("field %s: value %v: %w", path, v, err) }
	switch n.kind {
	case aInt, aLong, aFloat, aDouble:
		num, ok := v.(json.Number)
		if !ok {
			return bad(fmt.Errorf("not a number"))
		}
		if n.kind == aFloat || n.kind == aDouble {
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil {
				return bad(err)
			}
			if n.kind == aFloat {
				w.WriteFloat(float32(f))
			} else {
				w.WriteDouble(f)
			}
			return nil
		}
		bits := 64
		if n.kind == aInt {
			bits = 32
		}
		i, err := strconv.ParseInt(string(num), 10, bits)
		if err != nil {
			return bad(err)
		}
		w.WriteLong(i)
	case aBool:
		b, ok := v.(bool)
		if !ok {
			return bad(fmt.Errorf("not a boolean"))
		}
		w.WriteBool(b)
	case aString:
		s, ok := v.(string)
		if !ok {
			return bad(fmt.Errorf("not a string"))
		}
		w.WriteString(s)
	case aBytes:
		s, ok := v.(string)
		if !ok {
			return bad(fmt.Errorf("not base64 text"))
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return bad(err)
		}
		w.WriteBytes(b)
	case aRecord:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(fmt.Errorf("not a struct"))
		}
		for _, f := range n.fields {
			at := f.name
			if path != "" {
				at = path + "." + f.name
			}
			if err := transcodeAvro(w, f.node, m[f.name], at); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameAsTranscoded encodes one change (and the key of its row) directly
// and through the oracle: "" when both give the same bytes, or both fail,
// and (with decode) an Avro library reads the direct bytes back as the
// JSON payload.
func sameAsTranscoded(a *Avro, op byte, before, after Row, src Source, decode bool) string {
	const id = 0x01020304
	now := time.UnixMilli(1700000000123).Add(456789)
	got, err := a.Value(nil, id, op, before, after, src, now)
	want, oracleErr := a.transcodedValue(id, op, before, after, src, now)
	if (err != nil) != (oracleErr != nil) {
		return fmt.Sprintf("value: direct error %v, transcoded error %v", err, oracleErr)
	}
	if !bytes.Equal(got, want) {
		return fmt.Sprintf("value bytes differ:\ndirect     %x\ntranscoded %x", got, want)
	}
	if err == nil && decode {
		payload, _ := a.t.Value(nil, op, before, after, src, now)
		if diff := avroMatchesJSON(a.ValueSchema(), got[5:], payload); diff != "" {
			return "the Avro library reads: " + diff
		}
	}
	row := after
	if row == nil {
		row = before
	}
	got, err = a.Key(nil, id, row)
	want, oracleErr = a.transcodedKey(id, row)
	if (err != nil) != (oracleErr != nil) {
		return fmt.Sprintf("key: direct error %v, transcoded error %v", err, oracleErr)
	}
	if !bytes.Equal(got, want) {
		return fmt.Sprintf("key bytes differ:\ndirect     %x\ntranscoded %x", got, want)
	}
	if err == nil && decode {
		payload, _ := a.t.KeyPayload(nil, row)
		if diff := avroMatchesJSON(a.KeySchema(), got[5:], payload); diff != "" {
			return "the Avro library reads the key: " + diff
		}
	}
	return ""
}

// oneColumns keeps oneColumn's encoders: compiling one checks its schemas
// with the Avro library, most of the time of the tests that use many.
var oneColumns = map[string]*Avro{}

// oneColumn is the Avro encoder of a table (id INT key, c of typ).
func oneColumn(t *testing.T, typ string, optional bool, m config.Debezium) *Avro {
	t.Helper()
	key := fmt.Sprint(typ, optional, m)
	if a, ok := oneColumns[key]; ok {
		return a
	}
	tbl, err := NewTable("p", "mariadb", "d", "t", []Column{{Name: "id", Type: "int"}, {Name: "c", Type: typ, Optional: optional}}, []int{0}, m)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	a, err := NewAvro(tbl)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	oneColumns[key] = a
	return a
}

// changesOf checks a column value in every shape of change: a create, an
// update from and to it, a delete, and a snapshot read.
func changesOf(t *testing.T, a *Avro, why, raw string, snapshot, decode bool) {
	t.Helper()
	row := Row{[]byte("7"), []byte(raw)}
	other := Row{[]byte("7"), []byte("null")}
	src := streamed
	if snapshot {
		src = Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4}
	}
	for _, c := range []struct {
		op            byte
		before, after Row
	}{{'c', nil, row}, {'u', other, row}, {'u', row, other}, {'d', row, nil}, {'r', nil, row}} {
		s := src
		if c.op == 'r' {
			s = Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4}
		}
		if diff := sameAsTranscoded(a, c.op, c.before, c.after, s, decode); diff != "" {
			t.Errorf("%s (%s, op %c): %s", why, raw, c.op, diff)
		}
	}
}

// TestAvroDirect: the direct encoder writes the bytes of the JSON payload
// transcoded, for every case of the value and decode tests, every column
// type of the every-type table under every mode, and the edges of the
// encoder's own fast paths.
func TestAvroDirect(t *testing.T) {
	for _, c := range valueCases() {
		changesOf(t, oneColumn(t, c.typ, c.why != notNull, c.m), c.why, c.raw, c.snapshot, true)
	}
	for _, c := range roundTripCases() {
		changesOf(t, oneColumn(t, c.typ, true, c.m), c.why, c.raw, false, true)
	}

	def := config.Default().Kafka.Debezium
	with := func(f func(*config.Debezium)) config.Debezium {
		m := def
		f(&m)
		return m
	}
	modes := []struct {
		why string
		m   config.Debezium
	}{
		{"defaults", def},
		{"bigint.unsigned.handling.mode=precise", with(func(m *config.Debezium) { m.Bigint.Unsigned.Handling.Mode = config.UnsignedPrecise })},
		{"decimal.handling.mode=string", with(func(m *config.Debezium) { m.Decimal.Handling.Mode = config.DecimalString })},
		{"decimal.handling.mode=double", with(func(m *config.Debezium) { m.Decimal.Handling.Mode = config.DecimalDouble })},
		{"time.precision.mode=connect", with(func(m *config.Debezium) { m.Time.Precision.Mode = config.TimeConnect })},
		{"binary.handling.mode=base64", with(func(m *config.Debezium) { m.Binary.Handling.Mode = config.BinaryBase64 })},
		{"binary.handling.mode=base64-url-safe", with(func(m *config.Debezium) { m.Binary.Handling.Mode = config.BinaryBase64URLSafe })},
		{"binary.handling.mode=hex", with(func(m *config.Debezium) { m.Binary.Handling.Mode = config.BinaryHex })},
	}
	full, nulls := everyTypeRows()
	streamedSrc := Source{TsSec: 1700000000, ServerID: 4294967295, GTID: "0-1-5", File: "bin.000001", Pos: 4294967295, Row: 3}
	snap := Source{Snapshot: true, TsSec: 1700000000, File: "bin.000001", Pos: 4}
	inTxn := streamedSrc
	inTxn.Txn = &Block{ID: "0-1-5", TotalOrder: 300, DataCollectionOrder: 70}
	for _, md := range modes {
		a := everyTypeTable(t, md.m)
		for _, c := range []struct {
			why           string
			op            byte
			before, after Row
			src           Source
		}{
			{"a create with every column set", 'c', nil, full, streamedSrc},
			{"an update from all nulls", 'u', nulls, full, streamedSrc},
			{"an update to all nulls", 'u', full, nulls, streamedSrc},
			{"a delete", 'd', full, nil, streamedSrc},
			{"a create with its transaction block (provide.transaction.metadata)", 'c', nil, full, inTxn},
			{"a snapshot read", 'r', nil, full, snap},
			{"a snapshot read of nulls", 'r', nil, nulls, snap},
		} {
			if diff := sameAsTranscoded(a, c.op, c.before, c.after, c.src, true); diff != "" {
				t.Errorf("%s, %s: %s", md.why, c.why, diff)
			}
		}
	}

	edges := []struct{ why, typ, raw string }{
		{"the int range's ends", "int", `-2147483648`}, {"…", "int", `2147483647`},
		{"an int out of its range fails both ways", "mediumint", `2147483648`},
		{"a long's ends (19 digits: strconv's path)", "bigint", `-9223372036854775808`}, {"…", "bigint", `9223372036854775807`},
		{"18 digits, the fast path's longest", "bigint", `-999999999999999999`},
		{"zero", "bigint", `0`}, {"minus zero", "int", `-0`},
		{"a one-byte varint's end", "bigint", `63`}, {"…", "bigint", `-64`}, {"a two-byte varint", "bigint", `64`},
		{"not a number fails both ways", "int", `"7"`},
		{"unsigned BIGINT 20 digits", "bigint unsigned", `18446744073709551615`},
		{"unsigned BIGINT over 2^64 fails both ways", "bigint unsigned", `18446744073709551616`},
		{"a float's rounding from its decimal text", "float", `0.1`}, {"a double's exponent", "double", `1e308`},
		{"decimal 0", "decimal(10,2)", `"0.00"`}, {"decimal minus zero", "decimal(10,2)", `"-0.00"`},
		{"decimal one byte's ends", "decimal(5,0)", `"127"`}, {"…", "decimal(5,0)", `"-128"`},
		{"decimal two bytes' ends", "decimal(5,0)", `"128"`}, {"…", "decimal(5,0)", `"-129"`},
		{"decimal 18 digits (the int64 path)", "decimal(18,4)", `"-99999999999999.9999"`},
		{"decimal 19 digits (the big.Int path)", "decimal(19,4)", `"-999999999999999.9999"`},
		{"decimal 38 digits negative", "decimal(38,0)", `"-99999999999999999999999999999999999999"`},
		{"a decimal of the wrong scale fails both ways", "decimal(10,2)", `"1.5"`},
		{"a decimal with a leading plus (the big.Int path)", "decimal(10,2)", `"+1.50"`},
		{"text with escapes", "varchar", `"a\"b\\c\n\u0001\u2028"`},
		{"text with an escaped surrogate pair", "varchar", `"\ud83d\ude00"`},
		{"text with a lone surrogate escape (U+FFFD)", "varchar", `"\ud800"`},
		{"text of multi-byte UTF-8", "text", `"日本語 ☃ 😀"`},
		{"text with invalid UTF-8 (U+FFFD)", "text", "\"a\xffb\""},
		{"empty text", "varchar", `""`},
		{"text of 64 bytes (a two-byte length)", "varchar", `"` + strings.Repeat("x", 64) + `"`},
		{"a date before 1970", "date", `"1900-01-01"`}, {"the last date", "date", `"9999-12-31"`},
		{"a two-digit year 69", "date", `"0069-06-01"`}, {"a two-digit year 70", "date", `"0070-06-01"`},
		{"a zero month", "date", `"2024-00-10"`}, {"a zero day", "datetime(6)", `"2024-01-00 10:00:00.000000"`},
		{"DATETIME with 1 fraction digit", "datetime(1)", `"2024-02-29 13:14:15.1"`},
		{"DATETIME(6) before the epoch", "datetime(6)", `"1969-12-31 23:59:59.000001"`},
		{"a DATETIME the fast path leaves (one-digit hour)", "datetime", `"2024-02-29 3:14:15"`},
		{"a DATETIME of 7 fraction digits fails both ways", "datetime(6)", `"2024-02-29 13:14:15.1234567"`},
		{"not a date fails both ways", "date", `"2024/02/29"`},
		{"TIMESTAMP(3) with zeros", "timestamp(3)", `"2024-03-01 00:14:15.100"`},
		{"TIMESTAMP(2)", "timestamp(2)", `"2024-03-01 00:14:15.10"`}, {"TIMESTAMP(6) of zeros", "timestamp(6)", `"2024-03-01 00:14:15.000000"`},
		{"TIMESTAMP(6) of one microsecond", "timestamp(6)", `"1970-01-01 00:00:01.000001"`}, {"TIMESTAMP's last second", "timestamp", `"2038-01-19 03:14:07"`},
		{"the zero TIMESTAMP", "timestamp(6)", `"0000-00-00 00:00:00.000000"`},
		{"TIME zero", "time", `"00:00:00"`}, {"TIME of 3 fraction digits", "time(3)", `"-12:00:00.5"`},
		{"binary empty", "varbinary", `""`}, {"binary of 1, 2, 3 bytes", "varbinary", `"AQ=="`}, {"…", "varbinary", `"AQI="`}, {"…", "varbinary", `"AQID"`},
		{"binary of 64 bytes (a two-byte length)", "blob", `"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfe}, 64)) + `"`},
		{"base64 with an escaped line break (decoders skip it)", "blob", `"AQ\nID"`},
		{"base64 unpadded fails both ways", "blob", `"AQ"`},
		{"BIT(64) zero", "bit(64)", `0`}, {"BIT(1) zero", "bit(1)", `0`}, {"BIT(9)", "bit(9)", `511`},
		{"YEAR zero", "year", `0`},
		{"SET empty", "set", `""`},
	}
	// The edges are held to the oracle's bytes only: decoding each again
	// would take seconds, and a line break inside base64 decodes to bytes
	// whose base64 is not the text's.
	for _, md := range modes {
		for _, e := range edges {
			nullable, notNull := oneColumn(t, e.typ, true, md.m), oneColumn(t, e.typ, false, md.m)
			changesOf(t, nullable, md.why+": "+e.why, e.raw, false, false)
			changesOf(t, nullable, md.why+" (snapshot): "+e.why, e.raw, true, false)
			changesOf(t, notNull, md.why+" (NOT NULL): "+e.why, e.raw, false, false)
		}
	}
}

// TestAvroEnvelopeBinding: every envelope field is bound by its path, and
// an optional field readside has no value for is null, so an envelope
// field added to the Connect schema needs no code to be written.
func TestAvroEnvelopeBinding(t *testing.T) {
	a := everyTypeTable(t, config.Default().Kafka.Debezium)
	var unbound []string
	var walk func(n *avroNode)
	walk = func(n *avroNode) {
		for _, f := range n.fields {
			if f.bind == envNull {
				unbound = append(unbound, f.path)
			}
			if f.bind == envSource {
				walk(f.node)
			}
		}
	}
	walk(a.value)
	if got, want := strings.Join(unbound, ","), "source.sequence,source.thread,source.query"; got != want {
		t.Errorf("fields written null in every event: %s, want %s (the JSON envelope's nulls)", got, want)
	}
	tbl, err := NewTable("srv", "mariadb", "shop", "every_type", everyType, []int{0, 1}, config.Default().Kafka.Debezium)
	if err != nil {
		t.Fatal(err)
	}
	// An optional struct field added to the envelope, after op: the JSON
	// payload has no value (null) and the direct encoder writes null.
	tbl.envelopeSchema = bytes.Replace(tbl.envelopeSchema, []byte(`{"type":"string","optional":false,"field":"op"}`),
		[]byte(`{"type":"string","optional":false,"field":"op"},{"type":"struct","fields":[{"type":"string","optional":false,"field":"x"}],"optional":true,"name":"extra.block","field":"extra"}`), 1)
	added, err := NewAvro(tbl)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := everyTypeRows()
	now := time.UnixMilli(1700000000123)
	got, err := added.Value(nil, 1, 'c', nil, full, streamed, now)
	if err != nil {
		t.Fatal(err)
	}
	want, err := added.transcodedValue(1, 'c', nil, full, streamed, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("an added optional envelope field: direct %x, transcoded %x", got, want)
	}
	tbl.envelopeSchema = bytes.Replace(tbl.envelopeSchema, []byte(`"optional":true,"name":"extra.block"`), []byte(`"optional":false,"name":"extra.block"`), 1)
	if _, err := NewAvro(tbl); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("a required envelope field readside has no value for: %v, want a refusal naming it", err)
	}
}

// everyTypeRows are a row of everyType with every column set, and one
// with every nullable column null.
func everyTypeRows() (full, nulls Row) {
	full = Row{[]byte(`7`), []byte(`"k"`), []byte(`-1`), []byte(`-300`), []byte(`-70000`), []byte(`5`), []byte(`-9000000000`),
		[]byte(`65535`), []byte(`4294967295`), []byte(`18446744073709551615`), []byte(`1.5`), []byte(`-2.25`),
		[]byte(`"-12345678.91"`), []byte(`"123456789012345678901234567890"`), []byte(`1`), []byte(`32769`),
		[]byte(`"1969-12-31"`), []byte(`"2024-02-29 13:14:15"`), []byte(`"2024-02-29 13:14:15.123456"`),
		[]byte(`"2024-03-01 00:14:15"`), []byte(`"2024-03-01 00:14:15.654300"`), []byte(`"-838:59:59"`), []byte(`2024`),
		[]byte(`"ab"`), []byte(`"héllo ☃"`), []byte(`"AQIAAA=="`), []byte(`"3q2+7w=="`), []byte(`"{\"a\": 1}"`), []byte(`"b"`), []byte(`"x,y"`)}
	nulls = make(Row, len(full))
	copy(nulls, full[:2])
	nulls[5], nulls[13], nulls[17] = []byte(`0`), []byte(`"0"`), []byte(`"2000-01-01 00:00:00"`)
	for i := range nulls {
		if nulls[i] == nil {
			nulls[i] = []byte(`null`)
		}
	}
	return full, nulls
}

// narrowInsert is one insert into bench-peers' narrow_insert table
// (BIGINT key, two INTs, VARCHAR(60), DECIMAL(12,2), DATETIME(6), BIGINT),
// for the encoders' benchmarks.
func narrowInsert(b *testing.B) (*Avro, Row, Source, time.Time) {
	cols := []Column{{Name: "id", Type: "bigint"}, {Name: "k", Type: "int"}, {Name: "a", Type: "int"}, {Name: "b", Type: "varchar"},
		{Name: "c", Type: "decimal(12,2)"}, {Name: "d", Type: "datetime(6)"}, {Name: "commit_us", Type: "bigint"}}
	tbl, err := NewTable("bench", "mariadb", "bench_src", "narrow_insert", cols, []int{0}, config.Default().Kafka.Debezium)
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAvro(tbl)
	if err != nil {
		b.Fatal(err)
	}
	row := Row{[]byte(`1234567`), []byte(`4242`), []byte(`-17`), []byte(`"` + strings.Repeat("abcdefghij", 6) + `"`),
		[]byte(`"12345.67"`), []byte(`"2026-11-29 16:19:43.123456"`), []byte(`1795969183123456`)}
	src := Source{TsSec: 1700000000, ServerID: 1, GTID: "0-1-5", File: "mariadb-bin.000003", Pos: 4242, Row: 1}
	return a, row, src, time.UnixMilli(1700000000123)
}

// BenchmarkAvroEncode: a narrow insert's key and value as
// kafka.format: debezium-avro writes them (make bench-instructions).
func BenchmarkAvroEncode(b *testing.B) {
	a, row, src, now := narrowInsert(b)
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		if _, err := a.Key(buf[:0], 1, row); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Value(buf[:0], 2, 'c', nil, row, src, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAvroEncodeTranscoded: the same through the JSON payload
// transcoded to Avro (the oracle, the encoder before the direct one).
func BenchmarkAvroEncodeTranscoded(b *testing.B) {
	a, row, src, now := narrowInsert(b)
	for b.Loop() {
		if _, err := a.transcodedKey(1, row); err != nil {
			b.Fatal(err)
		}
		if _, err := a.transcodedValue(2, 'c', nil, row, src, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONEncode: the same event in kafka.format: debezium, JSON
// with the schemas (the default).
func BenchmarkJSONEncode(b *testing.B) {
	a, row, src, now := narrowInsert(b)
	tbl := *a.t
	tbl.modes.Schemas.Enable = true
	buf := make([]byte, 0, 8192)
	for b.Loop() {
		if _, err := tbl.Key(buf[:0], row); err != nil {
			b.Fatal(err)
		}
		if _, err := tbl.Value(buf[:0], 'c', nil, row, src, now); err != nil {
			b.Fatal(err)
		}
	}
}
