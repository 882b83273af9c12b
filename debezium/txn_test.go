package debezium

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/readside/readside/config"
)

// txnStep is one call on a Txn: Begin(begin) when begin is set, else
// Event(table).
type txnStep struct {
	begin string
	table string
}

func TestTxnCounters(t *testing.T) {
	cases := []struct {
		why   string
		steps []txnStep
		want  []Block // one per Event, in order
		total int64
		per   map[string]int64
	}{
		{"one table: a change's order in the transaction and in its table are the same, from 1",
			[]txnStep{{begin: "0-1-5"}, {table: "d.a"}, {table: "d.a"}, {table: "d.a"}},
			[]Block{{"0-1-5", 1, 1}, {"0-1-5", 2, 2}, {"0-1-5", 3, 3}}, 3, map[string]int64{"d.a": 3}},
		{"two tables interleaved: total_order runs over both, data_collection_order counts each table on its own",
			[]txnStep{{begin: "0-1-6"}, {table: "d.a"}, {table: "d.b"}, {table: "d.a"}, {table: "d.b"}, {table: "d.b"}},
			[]Block{{"0-1-6", 1, 1}, {"0-1-6", 2, 1}, {"0-1-6", 3, 2}, {"0-1-6", 4, 2}, {"0-1-6", 5, 3}}, 5, map[string]int64{"d.a": 2, "d.b": 3}},
		{"a new transaction starts every counter over: nothing carries from the last one",
			[]txnStep{{begin: "0-1-7"}, {table: "d.a"}, {table: "d.b"}, {begin: "0-1-8"}, {table: "d.b"}},
			[]Block{{"0-1-7", 1, 1}, {"0-1-7", 2, 1}, {"0-1-8", 1, 1}}, 1, map[string]int64{"d.b": 1}},
		{"the same table name in two databases is two collections",
			[]txnStep{{begin: "0-1-9"}, {table: "x.t"}, {table: "y.t"}},
			[]Block{{"0-1-9", 1, 1}, {"0-1-9", 2, 1}}, 2, map[string]int64{"x.t": 1, "y.t": 1}},
	}
	for _, c := range cases {
		var x Txn
		var got []Block
		for _, s := range c.steps {
			if s.begin != "" {
				x.Begin(s.begin)
				continue
			}
			got = append(got, x.Event(s.table))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: blocks %v, want %v", c.why, got, c.want)
		}
		if x.Total() != c.total {
			t.Errorf("%s: event_count %d, want %d", c.why, x.Total(), c.total)
		}
		per := map[string]int64{}
		for _, col := range x.Collections() {
			if _, twice := per[col.Name]; twice {
				t.Errorf("%s: collection %s listed twice", c.why, col.Name)
			}
			per[col.Name] = col.Count
		}
		if !reflect.DeepEqual(per, c.per) {
			t.Errorf("%s: data_collections %v, want %v", c.why, per, c.per)
		}
	}
}

func TestTxnOpen(t *testing.T) {
	var x Txn
	if x.Open() {
		t.Error("a zero Txn has a transaction open: changes before any BEGIN would get a block")
	}
	x.Begin("0-1-1")
	x.Event("d.a")
	x.End()
	if x.Open() || x.Total() != 0 || len(x.Collections()) != 0 {
		t.Errorf("after End: open %v, total %d, collections %v: a DDL's BEGIN would leak its counts", x.Open(), x.Total(), x.Collections())
	}
}

// TestTxnCollectionsOrder: data_collections in the order Debezium's
// java.util.HashMap iterates. The wanted orders were printed by a JDK
// (jshell: a HashMap<String, Long> filled in the given order).
func TestTxnCollectionsOrder(t *testing.T) {
	cases := []struct {
		why    string
		before []string // tables of an earlier transaction
		tables []string // in the order of their first change
		want   []string
	}{
		{"one table", nil, []string{"inventory.orders"}, []string{"inventory.orders"}},
		{"two tables listed by hash bucket, not by first change",
			nil, []string{"s.t1", "s.t9"}, javaOrder["s.t1,s.t9"]},
		{"the same two tables changed in the other order list alike",
			nil, []string{"s.t9", "s.t1"}, javaOrder["s.t1,s.t9"]},
		{"two tables in one bucket list in the order of their first change",
			nil, []string{"d.t29", "d.t5", "d.t2"}, javaOrder["d.t29,d.t5,d.t2"]},
		{"… either way round",
			nil, []string{"d.t2", "d.t5", "d.t29"}, javaOrder["d.t2,d.t5,d.t29"]},
		{"thirteen tables resize the map (16 buckets hold 12): the order follows 32 buckets",
			nil, thirteen, javaOrder["thirteen"]},
		{"a cleared HashMap keeps its size: after a transaction of thirteen tables, two tables list by 32 buckets",
			thirteen, []string{"s.t1", "s.t9"}, javaOrder["s.t1,s.t9 after thirteen"]},
	}
	for _, c := range cases {
		var x Txn
		if c.before != nil {
			x.Begin("before")
			for _, tbl := range c.before {
				x.Event(tbl)
			}
			x.End()
		}
		x.Begin("id")
		for _, tbl := range c.tables {
			x.Event(tbl)
		}
		var got []string
		for _, col := range x.Collections() {
			got = append(got, col.Name)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}

var thirteen = []string{"s.t1", "s.t2", "s.t3", "s.t4", "s.t5", "s.t6", "s.t7", "s.t8", "s.t9", "s.t10", "s.t11", "s.t12", "s.t13"}

// javaOrder: HashMap iteration orders printed by OpenJDK 17's jshell, the
// map filled in the key's order (the last: after thirteen tables and a
// clear()).
var javaOrder = map[string][]string{
	"s.t1,s.t9":                {"s.t9", "s.t1"},
	"d.t29,d.t5,d.t2":          {"d.t5", "d.t29", "d.t2"},
	"d.t2,d.t5,d.t29":          {"d.t5", "d.t2", "d.t29"},
	"thirteen":                 {"s.t6", "s.t5", "s.t8", "s.t7", "s.t2", "s.t1", "s.t4", "s.t3", "s.t13", "s.t12", "s.t11", "s.t10", "s.t9"},
	"s.t1,s.t9 after thirteen": {"s.t1", "s.t9"},
}

func TestTxnRecords(t *testing.T) {
	var x Txn
	x.Begin("0-1-42")
	x.Event("d.a")
	x.Event("d.a")
	cases := []struct {
		why  string
		got  string
		want string
	}{
		{"the key is the transaction's id", string(TxnKey(nil, "0-1-42", false)), `{"id":"0-1-42"}`},
		{"… with the JSON converter's schema",
			string(TxnKey(nil, "0-1-42", true)),
			`{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","version":1},"payload":{"id":"0-1-42"}}`},
		{"BEGIN has no counts yet", string(TxnBegin(nil, "0-1-42", 1700000000000, false)),
			`{"status":"BEGIN","id":"0-1-42","event_count":null,"data_collections":null,"ts_ms":1700000000000}`},
		{"END counts the changes, in total and per table", string(x.TxnEnd(nil, 1700000001000, false)),
			`{"status":"END","id":"0-1-42","event_count":2,"data_collections":[{"data_collection":"d.a","event_count":2}],"ts_ms":1700000001000}`},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.why, c.got, c.want)
		}
	}
	// With schemas the payload is the same and the schema is Debezium's
	// TransactionMetadataValue.
	var rec struct {
		Schema  struct{ Name string }
		Payload json.RawMessage
	}
	if err := json.Unmarshal(x.TxnEnd(nil, 1700000001000, true), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Schema.Name != "io.debezium.connector.common.TransactionMetadataValue" || string(rec.Payload) != cases[3].want {
		t.Errorf("END with schemas: schema %q, payload %s", rec.Schema.Name, rec.Payload)
	}
}

// TestTxnAvro: the Avro records decode, with the registered schemas, to
// the JSON converter's payloads.
func TestTxnAvro(t *testing.T) {
	key, err := avro.Parse(TxnKeyAvroSchema)
	if err != nil {
		t.Fatalf("key schema: %v", err)
	}
	value, err := avro.Parse(TxnValueAvroSchema)
	if err != nil {
		t.Fatalf("value schema: %v", err)
	}
	var x Txn
	x.Begin("0-1-42")
	x.Event("d.a")
	x.Event("d.b")
	x.Event("d.a")
	cases := []struct {
		why    string
		schema avro.Schema
		framed []byte
		json   []byte
	}{
		{"key", key, TxnKeyAvro(nil, 7, "0-1-42"), TxnKey(nil, "0-1-42", false)},
		{"BEGIN: the nulls are the unions' null branches", value, TxnBeginAvro(nil, 8, "0-1-42", 5000), TxnBegin(nil, "0-1-42", 5000, false)},
		{"END: the counts and every collection", value, x.TxnEndAvro(nil, 8, 6000), x.TxnEnd(nil, 6000, false)},
	}
	for _, c := range cases {
		if c.framed[0] != 0 || len(c.framed) < 5 {
			t.Errorf("%s: no Confluent frame: %x", c.why, c.framed)
			continue
		}
		var got any
		if err := avro.Unmarshal(c.schema, c.framed[5:], &got); err != nil {
			t.Errorf("%s: decoding %x: %v", c.why, c.framed, err)
			continue
		}
		var want any
		_ = json.Unmarshal(c.json, &want)
		if g := normalizeAvro(got); !reflect.DeepEqual(g, want) {
			t.Errorf("%s: Avro %v, JSON %v", c.why, g, want)
		}
	}
}

// normalizeAvro unwraps the library's union branches ({"event.collection":
// {...}}) and makes numbers float64, as JSON decodes them.
func normalizeAvro(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, e := range x {
				if strings.Contains(k, ".") || k == "array" || k == "long" {
					return normalizeAvro(e)
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalizeAvro(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeAvro(e)
		}
		return out
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return v
}

// TestValueTransactionBlock: the envelope carries the block given, null
// without one.
func TestValueTransactionBlock(t *testing.T) {
	tbl, err := NewTable("p", "mariadb", "d", "a", []Column{{Name: "id", Type: "int"}}, []int{0}, config.Default().Kafka.Debezium)
	if err != nil {
		t.Fatal(err)
	}
	row := Row{[]byte("1")}
	cases := []struct {
		why  string
		txn  *Block
		want string
	}{
		{"a streamed change under provide.transaction.metadata", &Block{ID: "0-1-5", TotalOrder: 3, DataCollectionOrder: 2},
			`"transaction":{"id":"0-1-5","total_order":3,"data_collection_order":2}`},
		{"a snapshot row, or the option off", nil, `"transaction":null`},
	}
	for _, c := range cases {
		v, err := tbl.Value(nil, 'c', nil, row, Source{File: "f", Txn: c.txn}, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(v), c.want) {
			t.Errorf("%s: value %s lacks %s", c.why, v, c.want)
		}
	}
}
