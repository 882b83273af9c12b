package debezium

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

var update = flag.Bool("update", false, "rewrite testdata/avro from the schemas built now")

// everyType is a table with every column type kafka.format: debezium
// encodes, nullable and not, keyed by two columns.
var everyType = []Column{
	{Name: "id", Type: "int"}, {Name: "k2", Type: "varchar"},
	{Name: "ti", Type: "tinyint", Optional: true}, {Name: "si", Type: "smallint", Optional: true},
	{Name: "mi", Type: "mediumint", Optional: true}, {Name: "i", Type: "int"}, {Name: "bi", Type: "bigint", Optional: true},
	{Name: "siu", Type: "smallint unsigned", Optional: true}, {Name: "iu", Type: "int unsigned", Optional: true},
	{Name: "biu", Type: "bigint unsigned", Optional: true},
	{Name: "f", Type: "float", Optional: true}, {Name: "d", Type: "double", Optional: true},
	{Name: "dec1", Type: "decimal(10,2)", Optional: true}, {Name: "dec2", Type: "decimal(30,0)"},
	{Name: "b1", Type: "bit(1)", Optional: true}, {Name: "b16", Type: "bit(16)", Optional: true},
	{Name: "dt", Type: "date", Optional: true}, {Name: "dtm", Type: "datetime"}, {Name: "dtm6", Type: "datetime(6)", Optional: true},
	{Name: "ts", Type: "timestamp", Optional: true}, {Name: "ts6", Type: "timestamp(6)", Optional: true},
	{Name: "tm", Type: "time", Optional: true}, {Name: "yr", Type: "year", Optional: true},
	{Name: "c", Type: "char", Optional: true}, {Name: "tx", Type: "text", Optional: true},
	{Name: "bn", Type: "binary(4)", Optional: true}, {Name: "bl", Type: "blob", Optional: true},
	{Name: "js", Type: "json", Optional: true},
	{Name: "en", Type: "enum", Optional: true, Members: []string{"a", "b"}}, {Name: "st", Type: "set", Optional: true, Members: []string{"x", "y"}},
}

func everyTypeTable(t *testing.T, m config.Debezium) *Avro {
	t.Helper()
	tbl, err := NewTable("srv", "mariadb", "shop", "every_type", everyType, []int{0, 1}, m)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAvro(tbl)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAvroSchemaGolden keeps the Avro schemas of a table with every column
// type under Debezium's default modes and the modes that change a type
// (precise unsigned, connect times, string decimals, hex binary). The
// golden files were checked against AvroData's conversion rules
// (TestAvroSchemaRules names each).
func TestAvroSchemaGolden(t *testing.T) {
	def := config.Default().Kafka.Debezium
	modes := def
	modes.Bigint.Unsigned.Handling.Mode = config.UnsignedPrecise
	modes.Time.Precision.Mode = config.TimeConnect
	modes.Decimal.Handling.Mode = config.DecimalString
	modes.Binary.Handling.Mode = config.BinaryHex
	for _, c := range []struct {
		name string
		m    config.Debezium
	}{{"defaults", def}, {"modes", modes}} {
		a := everyTypeTable(t, c.m)
		for _, s := range []struct{ part, schema string }{{"key", a.KeySchema()}, {"value", a.ValueSchema()}} {
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, []byte(s.schema), "", "  "); err != nil {
				t.Fatalf("%s %s: %v", c.name, s.part, err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", "avro", c.name+"."+s.part+".avsc")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestAvroSchemaGolden -update ./debezium/ to write it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s %s schema differs from %s:\n%s", c.name, s.part, path, pretty.Bytes())
			}
		}
	}
}

// TestAvroSchemaRules checks AvroData's rules one by one on the value
// schema, so a broken rule names itself.
func TestAvroSchemaRules(t *testing.T) {
	a := everyTypeTable(t, config.Default().Kafka.Debezium)
	v := a.ValueSchema()
	cases := []struct{ why, want string }{
		{"the envelope is a record named <prefix>.<db>.<table>.Envelope, namespace and name split at the last dot",
			`{"type":"record","name":"Envelope","namespace":"srv.shop.every_type","fields":[`},
		{"before is optional: a union with null first, default null; the Value record defined where first used",
			`{"name":"before","type":["null",{"type":"record","name":"Value","fields":[`},
		{"after refers to the Value record by its short name (same namespace)", `{"name":"after","type":["null","Value"],"default":null}`},
		{"a NOT NULL column is the bare type without a default", `{"name":"i","type":"int"}`},
		{"a nullable column is [null, T] with default null", `{"name":"bi","type":["null","long"],"default":null}`},
		{"INT16 keeps its Connect type in connect.type", `{"name":"si","type":["null",{"type":"int","connect.type":"int16"}],"default":null}`},
		{"Decimal is bytes with scale and precision, connect.parameters and logicalType decimal",
			`{"name":"dec1","type":["null",{"type":"bytes","scale":2,"precision":10,"connect.version":1,"connect.parameters":{"scale":"2","connect.decimal.precision":"10"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}],"default":null}`},
		{"Debezium's time types are a connect.name on long, no Avro logical type",
			`{"name":"dtm6","type":["null",{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}],"default":null}`},
		{"io.debezium.time.Date is an int", `{"name":"dt","type":["null",{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"}],"default":null}`},
		{"ZonedTimestamp is a string", `{"name":"ts","type":["null",{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}],"default":null}`},
		{"Bits keep their length parameter", `{"type":"bytes","connect.version":1,"connect.parameters":{"length":"16"},"connect.name":"io.debezium.data.Bits"}`},
		{"an Enum keeps its members", `{"type":"string","connect.version":1,"connect.parameters":{"allowed":"a,b"},"connect.name":"io.debezium.data.Enum"}`},
		{"a field with a default puts its type first in the union and the default in the field and connect.default",
			`{"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"}`},
		{"source is a record of its own namespace", `{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.mariadb","fields":[`},
		{"the optional transaction block", `{"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[`},
		{"records carry connect.version and connect.name", `],"connect.version":2,"connect.name":"srv.shop.every_type.Envelope"}`},
	}
	for _, c := range cases {
		if !strings.Contains(v, c.want) {
			t.Errorf("%s: the value schema lacks %s", c.why, c.want)
		}
	}
	if !strings.HasPrefix(a.KeySchema(), `{"type":"record","name":"Key","namespace":"srv.shop.every_type","fields":[{"name":"id","type":"int"},{"name":"k2","type":"string"}],"connect.name":"srv.shop.every_type.Key"}`) {
		t.Errorf("the key is a record of the key columns, none optional: %s", a.KeySchema())
	}
	connect := config.Default().Kafka.Debezium
	connect.Time.Precision.Mode = config.TimeConnect
	cv := everyTypeTable(t, connect).ValueSchema()
	for _, c := range []struct{ why, want string }{
		{"Connect's Date is Avro's date", `"connect.name":"org.apache.kafka.connect.data.Date","logicalType":"date"}`},
		{"Connect's Time is Avro's time-millis", `"connect.name":"org.apache.kafka.connect.data.Time","logicalType":"time-millis"}`},
		{"Connect's Timestamp is Avro's timestamp-millis", `{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}`},
	} {
		if !strings.Contains(cv, c.want) {
			t.Errorf("%s: the connect-mode value schema lacks %s", c.why, c.want)
		}
	}
}

// TestAvroNamesRefused: Avro names are letters, digits and _, and a name
// outside them is refused naming the fix, as AvroConverter refuses it.
func TestAvroNamesRefused(t *testing.T) {
	cases := []struct{ why, table, column string }{
		{"a column name with a dash", "t", "a-b"},
		{"a table name with a dash makes the record names invalid", "my-table", "id"},
		{"a column name starting with a digit", "t", "1st"},
	}
	for _, c := range cases {
		tbl, err := NewTable("p", "mariadb", "d", c.table, []Column{{Name: c.column, Type: "int"}}, []int{0}, config.Default().Kafka.Debezium)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		_, err = NewAvro(tbl)
		if err == nil || !strings.Contains(err.Error(), "source.exclude_columns") || !strings.Contains(err.Error(), "kafka.format: debezium") {
			t.Errorf("%s: %v, want a refusal naming the fix", c.why, err)
		}
	}
}

// TestAvroEncoding encodes events and decodes them with the Avro library
// from the schema alone: the Confluent frame, and the same values as the
// JSON converter's payload.
func TestAvroEncoding(t *testing.T) {
	a := everyTypeTable(t, config.Default().Kafka.Debezium)
	full := Row{[]byte(`7`), []byte(`"k"`), []byte(`-1`), []byte(`-300`), []byte(`-70000`), []byte(`5`), []byte(`-9000000000`),
		[]byte(`65535`), []byte(`4294967295`), []byte(`18446744073709551615`), []byte(`1.5`), []byte(`-2.25`),
		[]byte(`"-12345678.91"`), []byte(`"123456789012345678901234567890"`), []byte(`1`), []byte(`32769`),
		[]byte(`"1969-12-31"`), []byte(`"2024-02-29 13:14:15"`), []byte(`"2024-02-29 13:14:15.123456"`),
		[]byte(`"2024-03-01 00:14:15"`), []byte(`"2024-03-01 00:14:15.654300"`), []byte(`"-838:59:59"`), []byte(`2024`),
		[]byte(`"ab"`), []byte(`"héllo ☃"`), []byte(`"AQIAAA=="`), []byte(`"3q2+7w=="`), []byte(`"{\"a\": 1}"`), []byte(`"b"`), []byte(`"x,y"`)}
	nulls := make(Row, len(full))
	copy(nulls, full[:2])
	nulls[5], nulls[13], nulls[17] = []byte(`0`), []byte(`"0"`), []byte(`"2000-01-01 00:00:00"`)
	for i := range nulls {
		if nulls[i] == nil {
			nulls[i] = []byte(`null`)
		}
	}
	src := Source{TsSec: 1700000000, ServerID: 1, GTID: "0-1-5", File: "bin.000001", Pos: 4, Row: 1}
	now := time.UnixMilli(1700000000123)
	cases := []struct {
		why           string
		op            byte
		before, after Row
		src           Source
	}{
		{"a create with every column set", 'c', nil, full, src},
		{"an update from all nulls: both images, unions on both branches", 'u', nulls, full, src},
		{"a delete", 'd', full, nil, src},
		{"a snapshot read: snapshot \"true\" on the default-first union, no GTID", 'r', nil, nulls, Source{Snapshot: true, TsSec: 1700000000, File: "bin.000001", Pos: 4}},
	}
	const id = 0x01020304 // every byte distinct: a swapped order shows
	for _, c := range cases {
		got, err := a.Value(nil, id, c.op, c.before, c.after, c.src, now)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		if !bytes.HasPrefix(got, []byte{0, 1, 2, 3, 4}) {
			t.Errorf("%s: frame %x, want magic byte 0 and the id big-endian", c.why, got[:min(5, len(got))])
		}
		var h sr.ConfluentHeader
		gotID, body, err := h.DecodeID(got)
		if err != nil || gotID != id {
			t.Fatalf("%s: franz-go's Confluent header reads id %d (%v), want %d", c.why, gotID, err, id)
		}
		payload, err := a.t.Value(nil, c.op, c.before, c.after, c.src, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := avroMatchesJSON(a.ValueSchema(), body, payload); diff != "" {
			t.Errorf("%s: %s", c.why, diff)
		}
	}
	// Read with its logical type, the decimal is the column's value: the
	// scale in the schema is the one the unscaled bytes were written with.
	framed, err := a.Value(nil, id, 'c', nil, full, src, now)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := avro.ParseWithCache(a.ValueSchema(), "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := avro.Unmarshal(schema, framed[5:], &decoded); err != nil {
		t.Fatal(err)
	}
	after, _ := decoded["after"].(map[string]any)
	for k, v := range after { // the union's {"srv.shop.every_type.Value": {...}}
		if strings.HasSuffix(k, ".Value") {
			after, _ = v.(map[string]any)
		}
	}
	for col, want := range map[string]string{"dec1": "-12345678.91", "dec2": "123456789012345678901234567890"} {
		v := after[col]
		if m, ok := v.(map[string]any); ok { // a nullable column's union branch
			v = m["bytes.decimal"]
		}
		r, ok := v.(*big.Rat)
		wantRat, _ := new(big.Rat).SetString(want)
		if !ok || r.Cmp(wantRat) != 0 {
			t.Errorf("%s read with Avro's decimal logical type: %v (%T), want %s", col, v, v, want)
		}
	}

	key, err := a.Key(nil, 258, full)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 1, 2, 14, 2, 'k'}; !bytes.Equal(key, want) {
		t.Errorf("key %x, want %x: id 258 big-endian, then id 7 and k2 \"k\"", key, want)
	}
}

// avroMatchesJSON decodes body with schema by an Avro library and
// compares it with the JSON converter's payload: "" when they carry the
// same values.
func avroMatchesJSON(schema string, body, payload []byte) string {
	got, err := testbed.AvroAsJSON(schema, body)
	if err != nil {
		return err.Error()
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var want any
	if err := d.Decode(&want); err != nil {
		return "the JSON payload: " + err.Error()
	}
	if diff := diffJSON("", got, want); diff != "" {
		return fmt.Sprintf("Avro and JSON differ at %s\navro %v\njson %s", diff, got, payload)
	}
	return ""
}

// diffJSON is the path of the first difference of two decoded JSON values.
func diffJSON(path string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return path + " (members)"
		}
		for k := range x {
			if d := diffJSON(path+"."+k, x[k], y[k]); d != "" {
				return d
			}
		}
		return ""
	}
	if x, ok := a.(json.Number); ok {
		if y, ok := b.(json.Number); ok {
			fx, ex := x.Float64()
			fy, ey := y.Float64()
			if ex == nil && ey == nil && fx == fy {
				return ""
			}
		}
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return fmt.Sprintf("%s (%v vs %v)", path, a, b)
	}
	return ""
}

// BenchmarkValue compares one update event of the every-type table in
// kafka.format: debezium (JSON payload) and debezium-avro (Avro
// written straight from the values; BenchmarkAvroEncode has the narrow
// insert, and the JSON payload transcoded).
func BenchmarkValue(b *testing.B) {
	tbl, err := NewTable("srv", "mariadb", "shop", "every_type", everyType, []int{0, 1}, config.Default().Kafka.Debezium)
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAvro(tbl)
	if err != nil {
		b.Fatal(err)
	}
	row := Row{[]byte(`7`), []byte(`"k"`), []byte(`-1`), []byte(`-300`), []byte(`-70000`), []byte(`5`), []byte(`-9000000000`),
		[]byte(`65535`), []byte(`4294967295`), []byte(`18446744073709551615`), []byte(`1.5`), []byte(`-2.25`),
		[]byte(`"-12345678.91"`), []byte(`"123456789012345678901234567890"`), []byte(`1`), []byte(`32769`),
		[]byte(`"1969-12-31"`), []byte(`"2024-02-29 13:14:15"`), []byte(`"2024-02-29 13:14:15.123456"`),
		[]byte(`"2024-03-01 00:14:15"`), []byte(`"2024-03-01 00:14:15.654300"`), []byte(`"-838:59:59"`), []byte(`2024`),
		[]byte(`"ab"`), []byte(`"text"`), []byte(`"AQIAAA=="`), []byte(`"3q2+7w=="`), []byte(`"{\"a\": 1}"`), []byte(`"b"`), []byte(`"x,y"`)}
	src := Source{TsSec: 1700000000, ServerID: 1, GTID: "0-1-5", File: "bin.000001", Pos: 4, Row: 1}
	now := time.UnixMilli(1700000000123)
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.t.Value(nil, 'u', row, row, src, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("avro", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Value(nil, 1, 'u', row, row, src, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
