package debezium

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// fakeColumns is a source whose tables' columns a test sets, counting
// the reads.
type fakeColumns struct {
	tables map[string][]Column
	reads  int
}

func (f *fakeColumns) Columns(_ context.Context, db, table string) ([]Column, error) {
	f.reads++
	return f.tables[db+"."+table], nil
}

func values(vs ...[]byte) func(func([]byte) bool) {
	return slices.Values(vs)
}

// decodeBare loads and decodes bare payloads under m.
func decodeBare(t *testing.T, s *LiveSchemas, vs ...[]byte) ([]event.Event, error) {
	t.Helper()
	if err := s.Load(t.Context(), values(vs...)); err != nil {
		t.Fatal(err)
	}
	d := s.Decoder()
	var out []event.Event
	for _, v := range vs {
		e, err := d.Decode(v)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// TestSchemalessEqualsSchema: every column type under every mode, the
// same change written with and without the schema block, decodes to
// equal events (the column types of the bare payload from the live
// schema, the schema block's from the block).
func TestSchemalessEqualsSchema(t *testing.T) {
	for _, c := range roundTripCases() {
		withSchema := c.m
		withSchema.Schemas.Enable = true
		bareModes := c.m
		bareModes.Schemas.Enable = false
		for _, op := range []byte{'c', 'd', 'r'} {
			src := streamed
			if op == 'r' {
				src = Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4000}
			}
			var d Decoder
			want, err := d.Decode(encodeOne(t, c.typ, withSchema, op, c.raw, src))
			if err != nil {
				t.Fatalf("%s: with the schema block: %v", c.why, err)
			}
			b := encodeOne(t, c.typ, bareModes, op, c.raw, src)
			if strings.Contains(string(b), `"schema"`) {
				t.Fatalf("%s: the bare payload carries a schema: %s", c.why, b)
			}
			live := NewLiveSchemas(&fakeColumns{tables: map[string][]Column{"d.t": {{Name: "id", Type: "int"}, {Name: "c", Type: c.typ}}}}, bareModes, "input.debezium")
			got, err := decodeBare(t, live, b)
			if err != nil {
				t.Errorf("%s (op %c): without the schema block: %v\n%s", c.why, op, err, b)
				continue
			}
			if !reflect.DeepEqual(got[0], want) {
				t.Errorf("%s (op %c): without the schema block\n got %+v %v %v\nwant %+v %v %v", c.why, op, got[0], got[0].Before, got[0].After, want, want.Before, want.After)
			}
		}
	}
}

// TestSchemalessDDL: how the live schema follows a table's DDL.
func TestSchemalessDDL(t *testing.T) {
	m := config.Default().Kafka.Debezium
	m.Schemas.Enable = false
	src := &fakeColumns{tables: map[string][]Column{"d.t": {{Name: "id", Type: "int"}, {Name: "v", Type: "varchar"}}}}
	s := NewLiveSchemas(src, m, "input.debezium")
	rec := func(cols []Column, vals ...string) []byte {
		tbl, err := NewTable("p", "mariadb", "d", "t", cols, []int{0}, m)
		if err != nil {
			t.Fatal(err)
		}
		row := Row{}
		for _, v := range vals {
			row = append(row, []byte(v))
		}
		v, err := tbl.Value(nil, 'c', nil, row, streamed, time.Unix(1700000000, 0))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := []Column{{Name: "id", Type: "int"}, {Name: "v", Type: "varchar"}}
	if _, err := decodeBare(t, s, rec(before, "1", `"a"`), rec(before, "2", `"b"`)); err != nil {
		t.Fatal(err)
	}
	if src.reads != 1 {
		t.Errorf("a table's columns are read %d times for records of one shape, want once", src.reads)
	}

	// ADD COLUMN d DECIMAL(5,2): a record carrying it makes the schema be
	// read again, and its value decodes under the new type.
	added := append(slices.Clone(before), Column{Name: "d", Type: "decimal(5,2)"})
	src.tables["d.t"] = added
	es, err := decodeBare(t, s, rec(added, "3", `"c"`, `"1.50"`))
	if err != nil {
		t.Fatal(err)
	}
	if src.reads != 2 {
		t.Errorf("a record with a column the held schema lacks: %d reads, want the schema read again (2)", src.reads)
	}
	if v, _ := es[0].After.Get("d"); string(v) != `"1.50"` {
		t.Errorf("the added DECIMAL decoded as %s, want \"1.50\"", v)
	}
	// A record written before the ADD, consumed after it: no column d,
	// and no read.
	es, err = decodeBare(t, s, rec(before, "4", `"d"`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := es[0].After.Get("d"); ok || src.reads != 2 {
		t.Errorf("a record from before the ADD: column d in its event %v, reads %d; want neither", ok, src.reads)
	}

	// RENAME v TO w: until a record makes the schema be read again, v
	// keeps its held type. A record carrying w does; a record from before
	// the rename still carries v, which the source lacks now: left out of
	// its event (its type is unknown), read once more and then known
	// absent.
	renamed := []Column{{Name: "id", Type: "int"}, {Name: "w", Type: "varchar"}, {Name: "d", Type: "decimal(5,2)"}}
	src.tables["d.t"] = renamed
	if _, err := decodeBare(t, s, rec(renamed, "5", `"e"`, `"2.00"`)); err != nil {
		t.Fatal(err)
	}
	if src.reads != 3 {
		t.Errorf("a record with the renamed column: %d reads, want 3", src.reads)
	}
	for range 3 {
		es, err = decodeBare(t, s, rec(before, "6", `"f"`))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := es[0].After.Get("v"); ok {
			t.Errorf("a column the live schema lacks is in the event: its type is unknown")
		}
		if id, _ := es[0].After.Get("id"); string(id) != "6" {
			t.Errorf("id decoded as %s", id)
		}
	}
	if src.reads != 4 {
		t.Errorf("a renamed column's records: %d reads, want one more read (4), then the column known absent", src.reads)
	}

	// A table the source does not have.
	delete(src.tables, "d.t")
	s = NewLiveSchemas(src, m, "input.debezium")
	if _, err := decodeBare(t, s, rec(before, "6", `"f"`)); !errors.Is(err, ErrNoSuchTable) || !strings.Contains(err.Error(), "source.dsn") {
		t.Errorf("a table the source lacks: %v, want ErrNoSuchTable naming source.dsn", err)
	}
}

// TestSchemalessModeMismatch: a value the declared modes do not read
// stops with the key to check.
func TestSchemalessModeMismatch(t *testing.T) {
	written := config.Default().Kafka.Debezium
	written.Schemas.Enable = false
	written.Decimal.Handling.Mode = config.DecimalDouble
	declared := config.Default().Kafka.Debezium
	s := NewLiveSchemas(&fakeColumns{tables: map[string][]Column{"d.t": {{Name: "id", Type: "int"}, {Name: "c", Type: "decimal(10,2)"}}}}, declared, "input.debezium")
	_, err := decodeBare(t, s, encodeOne(t, "decimal(10,2)", written, 'c', `"1.50"`, streamed))
	if err == nil || !strings.Contains(err.Error(), "input.debezium") {
		t.Errorf("a double where precise was declared: %v, want an error naming input.debezium", err)
	}
}

// TestLiveColumn: information_schema's columns get the type names the
// tailer gives them.
func TestLiveColumn(t *testing.T) {
	cases := []struct {
		why                  string
		dataType, colType    string
		prec, scale, dt, max int64
		want                 string
	}{
		{"unsigned comes from COLUMN_TYPE", "bigint", "bigint(20) unsigned", 20, 0, 0, 0, "bigint unsigned"},
		{"a display width is not part of the type", "int", "int(11)", 10, 0, 0, 0, "int"},
		{"DECIMAL's precision and scale", "decimal", "decimal(10,2)", 10, 2, 0, 0, "decimal(10,2)"},
		{"BIT's length (NUMERIC_PRECISION)", "bit", "bit(5)", 5, 0, 0, 0, "bit(5)"},
		{"DATETIME's fraction digits", "datetime", "datetime(6)", 0, 0, 6, 0, "datetime(6)"},
		{"DATETIME without them", "datetime", "datetime", 0, 0, 0, 0, "datetime"},
		{"TIMESTAMP(3)", "timestamp", "timestamp(3)", 0, 0, 3, 0, "timestamp(3)"},
		{"BINARY keeps its length (padding)", "binary", "binary(4)", 0, 0, 0, 4, "binary(4)"},
		{"every BLOB is a blob", "mediumblob", "mediumblob", 0, 0, 0, 0, "blob"},
		{"every TEXT is text (MariaDB's JSON is LONGTEXT: text, as Debezium's MariaDB connector writes it)", "longtext", "longtext", 0, 0, 0, 0, "text"},
		{"ENUM by name", "enum", "enum('a','b')", 0, 0, 0, 0, "enum"},
	}
	for _, c := range cases {
		if got := LiveColumn("x", c.dataType, c.colType, c.prec, c.scale, c.dt, c.max).Type; got != c.want {
			t.Errorf("%s: %q, want %q", c.why, got, c.want)
		}
	}
}
