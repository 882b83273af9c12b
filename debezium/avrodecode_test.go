package debezium

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// mapSource is a registry holding schemas by id.
type mapSource map[int]string

func (m mapSource) Schema(_ context.Context, id int) (string, error) {
	s, ok := m[id]
	if !ok {
		return "", fmt.Errorf("%w: id %d", ErrSchemaUnusable, id)
	}
	return s, nil
}

// valueID is the schema id the tests frame values with: four distinct
// bytes, so an id read in the wrong byte order names another schema.
const valueID = 0x01020304

// encodeAvro is the Avro record value NewAvro writes for one change of a
// table (id INT key, c of typ), and the registry holding its schema.
func encodeAvro(t testing.TB, typ string, m config.Debezium, op byte, before, after Row, src Source) ([]byte, mapSource) {
	t.Helper()
	tbl, err := NewTable("p", "mariadb", "d", "t", []Column{{Name: "id", Type: "int"}, {Name: "c", Type: typ, Optional: true}}, []int{0}, m)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	a, err := NewAvro(tbl)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	v, err := a.Value(nil, valueID, op, before, after, src, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	return v, mapSource{valueID: a.ValueSchema()}
}

// decodeAvro loads value's schema from reg and decodes it.
func decodeAvro(reg SchemaSource, value []byte) (event.Event, error) {
	s := NewAvroSchemas(reg)
	if err := s.Load(context.Background(), slices.Values([][]byte{value})); err != nil {
		return event.Event{}, err
	}
	return s.Decoder().Decode(value)
}

// sameEvent names how two events of one change differ, "" for not at all.
func sameEvent(a, b event.Event) string {
	var diffs []string
	if a.Op != b.Op || a.Version != b.Version || a.SourceTS != b.SourceTS {
		diffs = append(diffs, fmt.Sprintf("op/version/ts %s/%d/%d vs %s/%d/%d", a.Op, a.Version, a.SourceTS, b.Op, b.Version, b.SourceTS))
	}
	if (a.Source == nil) != (b.Source == nil) || (a.Source != nil && *a.Source != *b.Source) {
		diffs = append(diffs, fmt.Sprintf("source %+v vs %+v", a.Source, b.Source))
	}
	if !maps.Equal(a.Schema.Columns, b.Schema.Columns) {
		diffs = append(diffs, fmt.Sprintf("column types %v vs %v", a.Schema.Columns, b.Schema.Columns))
	}
	for _, im := range [][2]*event.Image{{a.Before, b.Before}, {a.After, b.After}} {
		if (im[0] == nil) != (im[1] == nil) {
			diffs = append(diffs, fmt.Sprintf("image %v vs %v", im[0], im[1]))
			continue
		}
		if im[0] == nil {
			continue
		}
		x, y := im[0].Map(), im[1].Map()
		if !maps.EqualFunc(x, y, sameValue) {
			diffs = append(diffs, fmt.Sprintf("image %s vs %s", fmtImage(x), fmtImage(y)))
		}
	}
	return strings.Join(diffs, "; ")
}

// sameValue: the same bytes, or the same JSON string however escaped
// (the JSON converter's escapes are its writer's, the Avro reader writes
// its own; a projection binds the string, not its escapes).
func sameValue(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y string
	return len(a) > 0 && a[0] == '"' && json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x == y
}

func fmtImage[M ~map[string]V, V ~[]byte](m M) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+string(m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// TestAvroDecodeRoundTrip: a change encoded in Avro (avro.go) and decoded
// here is the event the JSON decoder reads from the same change in JSON,
// for every column type and mode TestDecodeRoundTrip covers: one mapping
// serves both converters.
func TestAvroDecodeRoundTrip(t *testing.T) {
	for _, c := range roundTripCases() {
		row := Row{[]byte("7"), []byte(c.raw)}
		av, reg := encodeAvro(t, c.typ, c.m, 'c', nil, row, streamed)
		got, err := decodeAvro(reg, av)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		var d Decoder
		want, err := d.Decode(encodeOne(t, c.typ, c.m, 'c', c.raw, streamed))
		if err != nil {
			t.Fatalf("%s: JSON: %v", c.why, err)
		}
		if diff := sameEvent(got, want); diff != "" {
			t.Errorf("%s: %s %s: Avro vs JSON: %s", c.why, c.typ, c.raw, diff)
		}
	}
}

// TestAvroDecodeEnvelope: deletes, updates, snapshot reads and key
// changes read alike from Avro and JSON.
func TestAvroDecodeEnvelope(t *testing.T) {
	m := config.Default().Kafka.Debezium
	one := Row{[]byte("1"), []byte(`"2024-02-29 13:14:15.5"`)}
	two := Row{[]byte("2"), []byte(`"2024-03-01 00:00:00"`)}
	snap := Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4000}
	cases := []struct {
		why           string
		op            byte
		before, after Row
		src           Source
	}{
		{"an update carries both images", 'u', one, two, streamed},
		{"a delete only its before image", 'd', one, nil, streamed},
		{"a key change's d: the old key", 'd', one, nil, streamed},
		{"… and its c: the new key, at the same position", 'c', nil, two, streamed},
		{"a snapshot read: op r, no GTID, a version below the position's streamed changes", 'r', nil, one, snap},
	}
	for _, c := range cases {
		av, reg := encodeAvro(t, "datetime(6)", m, c.op, c.before, c.after, c.src)
		got, err := decodeAvro(reg, av)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		tbl, err := NewTable("p", "mariadb", "d", "t", []Column{{Name: "id", Type: "int"}, {Name: "c", Type: "datetime(6)", Optional: true}}, []int{0}, m)
		if err != nil {
			t.Fatal(err)
		}
		jv, err := tbl.Value(nil, c.op, c.before, c.after, c.src, time.Unix(1700000000, 0))
		if err != nil {
			t.Fatal(err)
		}
		var d Decoder
		want, err := d.Decode(jv)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameEvent(got, want); diff != "" {
			t.Errorf("%s: Avro vs JSON: %s", c.why, diff)
		}
	}
}

// TestAvroDecodeRefused: what cannot be decoded is an error naming why,
// and a registry's failure is told from bad data.
func TestAvroDecodeRefused(t *testing.T) {
	m := config.Default().Kafka.Debezium
	av, reg := encodeAvro(t, "int", m, 'c', nil, Row{[]byte("1"), []byte("2")}, streamed)
	other := append([]byte{0, 0, 0, 0, 9}, av[5:]...)
	s := NewAvroSchemas(reg)
	if err := s.Load(t.Context(), slices.Values([][]byte{other})); !errors.Is(err, ErrSchemaUnusable) {
		t.Errorf("an id the registry does not hold: %v, want ErrSchemaUnusable", err)
	}
	down := errors.New("connection refused")
	if err := NewAvroSchemas(failing{down}).Load(t.Context(), slices.Values([][]byte{av})); !errors.Is(err, down) || errors.Is(err, ErrSchemaUnusable) {
		t.Errorf("a registry that does not answer: %v, want its error, one a retry may get past", err)
	}
	if _, err := s.Decoder().Decode(other); err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("decoding a record whose schema was not loaded: %v, want an error", err)
	}
	if err := s.Load(t.Context(), slices.Values([][]byte{av})); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		why   string
		value []byte
		want  string
	}{
		{"JSON where Avro is expected names input.format", encodeOne(t, "int", m, 'c', "2", streamed), "input.format: json"},
		{"a frame without a body's schema id", []byte{0, 1, 2}, "Confluent Avro wire format"},
		{"a body cut short", av[:len(av)-3], "decoding an Avro record of schema id"},
		{"a union branch the schema does not have", append(av[:5:5], 0x7e), "decoding an Avro record"},
	}
	for _, c := range cases {
		_, err := s.Decoder().Decode(c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.why, err, c.want)
		}
	}
}

type failing struct{ err error }

func (f failing) Schema(context.Context, int) (string, error) { return "", f.err }

// FuzzAvroDecode: whatever bytes a topic holds, decoding returns an event
// or an error, never a panic or a hang (lengths and union branches come
// from the record).
func FuzzAvroDecode(f *testing.F) {
	m := config.Default().Kafka.Debezium
	av, reg := encodeAvro(f, "decimal(10,2)", m, 'u', Row{[]byte("1"), []byte(`"1.50"`)}, Row{[]byte("1"), []byte(`"-2.25"`)}, streamed)
	s := NewAvroSchemas(reg)
	if err := s.Load(context.Background(), slices.Values([][]byte{av})); err != nil {
		f.Fatal(err)
	}
	f.Add(av)
	f.Add(av[:7])
	f.Add(append(av[:5:5], 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 5 {
			b = append([]byte(nil), b...)
			copy(b[1:5], av[1:5]) // the loaded schema: the body is what varies
		}
		_, _ = s.Decoder().Decode(b)
	})
}
