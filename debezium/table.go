package debezium

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/readside/readside/config"
)

// Version is source.version in the events readside writes: Debezium's
// connector writes its own release there, readside says who wrote the
// event.
const Version = "readside"

// Table encodes one captured table's change events.
type Table struct {
	topic, db, name string
	prefix          string
	connector       string // source.connector: mariadb or mysql
	modes           config.Debezium
	fields          []field
	key             []int
	keySchema       []byte // the key's schema, pre-encoded
	envelopeSchema  []byte // the value's schema, pre-encoded
}

// NewTable compiles a table of columns keyed by the columns at key, for
// the topic prefix (Debezium's topic.prefix) and flavor ("mariadb" or
// "mysql"). It fails naming a column whose type has no encoding here.
func NewTable(prefix, flavor, db, name string, cols []Column, key []int, m config.Debezium) (*Table, error) {
	t := &Table{topic: Topic(prefix, db, name), db: db, name: name, prefix: prefix, connector: flavor, modes: m, key: key}
	if t.connector != "mysql" {
		t.connector = "mariadb"
	}
	var errs []string
	var fieldSchemas [][]byte
	for _, c := range cols {
		f, err := compile(c, m)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		t.fields = append(t.fields, f)
		fieldSchemas = append(fieldSchemas, f.schema)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("table %s.%s: %s", db, name, strings.Join(errs, "; "))
	}
	var keySchemas [][]byte
	for _, i := range key {
		if i < 0 || i >= len(cols) {
			return nil, fmt.Errorf("table %s.%s: key column %d out of range", db, name, i)
		}
		// A key field is never optional, whatever the column says.
		f := t.fields[i]
		keySchemas = append(keySchemas, []byte(strings.Replace(string(f.schema), `"optional":true`, `"optional":false`, 1)))
	}
	base := prefix + "." + db + "." + name
	t.keySchema = appendStruct(nil, keySchemas, false, base+".Key", "")
	value := appendStruct(nil, fieldSchemas, true, base+".Value", "before")
	after := appendStruct(nil, fieldSchemas, true, base+".Value", "after")
	env := []byte(`{"type":"struct","fields":[`)
	env = append(env, value...)
	env = append(env, ',')
	env = append(env, after...)
	env = append(env, `,`+sourceSchemaHead...)
	env = appendString(env, "io.debezium.connector."+t.connector+".Source")
	env = append(env, `,"version":1,"field":"source"},`+transactionSchema+`,{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"}],"optional":false,"name":`...)
	env = appendString(env, base+".Envelope")
	env = append(env, `,"version":2}`...)
	t.envelopeSchema = env
	return t, nil
}

const sourceSchemaHead = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},{"type":"string","optional":false,"field":"connector"},{"type":"string","optional":false,"field":"name"},{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},"default":"false","field":"snapshot"},{"type":"string","optional":false,"field":"db"},{"type":"string","optional":true,"field":"sequence"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"},{"type":"string","optional":true,"field":"table"},{"type":"int64","optional":false,"field":"server_id"},{"type":"string","optional":true,"field":"gtid"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"},{"type":"int64","optional":true,"field":"thread"},{"type":"string","optional":true,"field":"query"}],"optional":false,"name":`

const transactionSchema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":false,"field":"total_order"},{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block","version":1,"field":"transaction"}`

// Topic is Debezium's topic of a table: <prefix>.<db>.<table>, every
// character Kafka does not take replaced by '_' (Debezium's default
// topic naming; unlike readside's own mapping it is not injective).
func Topic(prefix, db, table string) string {
	b := []byte(prefix + "." + db + "." + table)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Topic is the table's topic.
func (t *Table) Topic() string { return t.topic }

// Row is one row image: readside's JSON encoding of each column's value,
// by column index (nil for SQL NULL).
type Row [][]byte

// SplitRow reads a row image readside encoded (a JSON object of the
// published columns) into a Row in t's column order.
func (t *Table) SplitRow(obj []byte) (Row, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, fmt.Errorf("row image of %s.%s: %w", t.db, t.name, err)
	}
	row := make(Row, len(t.fields))
	for i := range t.fields {
		v, ok := m[t.fields[i].name]
		if !ok {
			return nil, fmt.Errorf("row image of %s.%s lacks column %s", t.db, t.name, t.fields[i].name)
		}
		row[i] = v
	}
	return row, nil
}

// KeyPayload appends the key struct of row without a schema: the
// record key when schemas.enable is false, and the value of the
// __debezium.oldkey and __debezium.newkey headers.
func (t *Table) KeyPayload(buf []byte, row Row) ([]byte, error) {
	const snapshot = false // a key is the same for every change of its row
	buf = append(buf, '{')
	var err error
	for n, i := range t.key {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, t.fields[i].name)
		buf = append(buf, ':')
		if buf, err = t.fields[i].appendValue(buf, row[i], &t.modes, snapshot); err != nil {
			return nil, fmt.Errorf("key of %s.%s: %w", t.db, t.name, err)
		}
	}
	return append(buf, '}'), nil
}

// Key appends the record key of row.
func (t *Table) Key(buf []byte, row Row) ([]byte, error) {
	if !t.modes.Schemas.Enable {
		return t.KeyPayload(buf, row)
	}
	buf = append(buf, `{"schema":`...)
	buf = append(buf, t.keySchema...)
	buf = append(buf, `,"payload":`...)
	buf, err := t.KeyPayload(buf, row)
	if err != nil {
		return nil, err
	}
	return append(buf, '}'), nil
}

// Source is where a change was read.
type Source struct {
	// Snapshot: the change is a snapshot read (op r).
	Snapshot bool
	TsSec    uint32 // the binlog event's timestamp, Unix seconds
	ServerID uint32
	GTID     string // "" for none
	File     string
	Pos      uint32 // where the rows event starts
	Row      int    // the change's index among the rows event's rows
	// Txn is the change's transaction block under
	// provide.transaction.metadata; nil writes null.
	Txn *Block
}

// Value appends the record value of one change: op is 'c', 'u', 'd' or
// 'r', before and after nil for no image; now is the processing time.
func (t *Table) Value(buf []byte, op byte, before, after Row, src Source, now time.Time) ([]byte, error) {
	if t.modes.Schemas.Enable {
		buf = append(buf, `{"schema":`...)
		buf = append(buf, t.envelopeSchema...)
		buf = append(buf, `,"payload":`...)
	}
	var err error
	buf = append(buf, `{"before":`...)
	if buf, err = t.appendRow(buf, before, src.Snapshot); err != nil {
		return nil, err
	}
	buf = append(buf, `,"after":`...)
	if buf, err = t.appendRow(buf, after, src.Snapshot); err != nil {
		return nil, err
	}
	buf = append(buf, `,"source":{"version":"`+Version+`","connector":"`...)
	buf = append(buf, t.connector...)
	buf = append(buf, `","name":`...)
	buf = appendString(buf, t.prefix)
	ms := int64(src.TsSec) * 1000
	buf = append(buf, `,"ts_ms":`...)
	buf = strconv.AppendInt(buf, ms, 10)
	if src.Snapshot {
		buf = append(buf, `,"snapshot":"true"`...)
	} else {
		buf = append(buf, `,"snapshot":"false"`...)
	}
	buf = append(buf, `,"db":`...)
	buf = appendString(buf, t.db)
	buf = append(buf, `,"sequence":null,"ts_us":`...)
	buf = strconv.AppendInt(buf, ms*1000, 10)
	buf = append(buf, `,"ts_ns":`...)
	buf = strconv.AppendInt(buf, ms*1000000, 10)
	buf = append(buf, `,"table":`...)
	buf = appendString(buf, t.name)
	buf = append(buf, `,"server_id":`...)
	buf = strconv.AppendUint(buf, uint64(src.ServerID), 10)
	buf = append(buf, `,"gtid":`...)
	if src.GTID == "" {
		buf = append(buf, "null"...)
	} else {
		buf = appendString(buf, src.GTID)
	}
	buf = append(buf, `,"file":`...)
	buf = appendString(buf, src.File)
	buf = append(buf, `,"pos":`...)
	buf = strconv.AppendUint(buf, uint64(src.Pos), 10)
	buf = append(buf, `,"row":`...)
	buf = strconv.AppendInt(buf, int64(src.Row), 10)
	buf = append(buf, `,"thread":null,"query":null},"transaction":`...)
	buf = appendBlock(buf, src.Txn)
	buf = append(buf, `,"op":"`...)
	buf = append(buf, op)
	buf = append(buf, `","ts_ms":`...)
	buf = strconv.AppendInt(buf, now.UnixMilli(), 10)
	buf = append(buf, `,"ts_us":`...)
	buf = strconv.AppendInt(buf, now.UnixMicro(), 10)
	buf = append(buf, `,"ts_ns":`...)
	buf = strconv.AppendInt(buf, now.UnixNano(), 10)
	buf = append(buf, '}')
	if t.modes.Schemas.Enable {
		buf = append(buf, '}')
	}
	return buf, nil
}

func (t *Table) appendRow(buf []byte, row Row, snapshot bool) ([]byte, error) {
	if row == nil {
		return append(buf, "null"...), nil
	}
	buf = append(buf, '{')
	var err error
	for i := range t.fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, t.fields[i].name)
		buf = append(buf, ':')
		if buf, err = t.fields[i].appendValue(buf, row[i], &t.modes, snapshot); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.db, t.name, err)
		}
	}
	return append(buf, '}'), nil
}

// TopicCollisions names each pair of tables (db.table) that Topic maps to
// one topic: Debezium's naming replaces characters, so `a b` and `a_b`
// share a topic, and their events would mix.
func TopicCollisions(prefix string, tables []string) []string {
	var out []string
	first := map[string]string{}
	for _, t := range tables {
		db, table, ok := strings.Cut(t, ".")
		if !ok {
			continue // config validation reports it
		}
		topic := Topic(prefix, db, table)
		if prev, ok := first[topic]; ok && prev != t {
			out = append(out, fmt.Sprintf("tables %s and %s both map to topic %s under kafka.format: debezium (Debezium's topic names replace characters Kafka refuses with _)", prev, t, topic))
			continue
		}
		first[topic] = t
	}
	return out
}

// TransactionTopicCollision names the table (db.table) whose topic is
// txnTopic, the transaction metadata topic, or is empty: BEGIN and END
// records there would mix with the table's changes. Only a
// kafka.debezium.topic.transaction holding a dot can collide (a table's
// topic has two dots after the prefix).
func TransactionTopicCollision(txnTopic, prefix string, tables []string) string {
	for _, t := range tables {
		db, table, ok := strings.Cut(t, ".")
		if ok && Topic(prefix, db, table) == txnTopic {
			return fmt.Sprintf("table %s's topic %s is the transaction metadata topic (kafka.debezium.topic.transaction)", t, txnTopic)
		}
	}
	return ""
}
