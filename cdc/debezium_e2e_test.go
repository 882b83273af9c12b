package cdc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// dbzTable covers every column type readside encodes in kafka.format:
// debezium. No column has a DEFAULT: Debezium's schema block carries
// column defaults, readside's does not (docs/debezium.md).
const dbzTable = "CREATE TABLE `%s`.every_type (" +
	"id INT NOT NULL, k2 VARCHAR(10) NOT NULL," +
	"ti TINYINT, tb TINYINT(1), si SMALLINT, mi MEDIUMINT, i INT NOT NULL, bi BIGINT," +
	"tiu TINYINT UNSIGNED, siu SMALLINT UNSIGNED, miu MEDIUMINT UNSIGNED, iu INT UNSIGNED, biu BIGINT UNSIGNED," +
	"f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(30,0), dec3 DECIMAL(5,5)," +
	"b1 BIT(1), b5 BIT(5), b16 BIT(16), b64 BIT(64)," +
	"dt DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6), ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL," +
	"tm TIME, tm3 TIME(3), tm6 TIME(6), yr YEAR," +
	"c CHAR(5), vc VARCHAR(20), tx TEXT, bn BINARY(4), vb VARBINARY(10), bl BLOB," +
	"js JSON, en ENUM('a','b','c'), st SET('x','y','z')," +
	"PRIMARY KEY (id, k2))"

// dbzFull is a row with a value in every column; %d is its id.
const dbzFull = "(%d,'k', -1,1,-300,-70000,5,-9000000000, 255,65535,16777215,4294967295,18446744073709551615," +
	" 1.5,-2.25,12345678.91,123456789012345678901234567890,0.12345," +
	" b'1',b'10101',b'1000000000000001',b'1111111111111111111111111111111111111111111111111111111111111111'," +
	" '2024-02-29','2024-02-29 13:14:15','2024-02-29 13:14:15.123','2024-02-29 13:14:15.123456','2024-02-29 13:14:15','2024-02-29 13:14:15.100','2024-02-29 13:14:15.654300'," +
	" '-838:59:59','25:00:00.5','-00:00:01.000001',2024," +
	" 'ab','héllo \"q\" ☃','text\\nline',0x0102,0xff00,0xdeadbeef,'{\"a\": [1, 2]}','b','x,z')"

// dbzVariant is a connector's (and a tailer's) value settings, by
// Debezium's names.
type dbzVariant struct {
	tag      string
	settings map[string]string // Debezium's setting -> value
	schemas  bool
	// txn: provide.transaction.metadata on both sides, and the side
	// table captured too (a transaction across two tables).
	txn bool
	// avro: the connector with Apicurio's AvroConverter (Confluent's
	// wire format, Confluent-compatible) for keys and values, readside in
	// kafka.format: debezium-avro, both through the test bed's registry.
	avro bool
}

// TestDebeziumMatchesConnector runs Debezium's MariaDB connector (Kafka
// Connect standalone, one worker start) and readside's tailer in
// kafka.format: debezium on the same table, through an initial snapshot,
// inserts, updates, a primary key change, deletes, a multi-row transaction
// and an added column, and compares their topics record for record: keys,
// values, tombstones and the key-change headers, with and without the JSON
// converter's schemas and under every value mode but
// binary.handling.mode=base64. One variant (a) writes Avro on both sides
// through the test bed's registry: the connector with Apicurio's
// AvroConverter, readside in kafka.format: debezium-avro; its records are
// decoded (frame, writer schema by id, an Avro library) and compared as the
// JSON variants', and the schemas registered under each topic's subjects
// are compared too. One variant also has
// provide.transaction.metadata on both sides and captures a second table
// that the multi-row transaction writes too: its data topics (with the
// transaction block) and its transaction topic are compared as well. Only
// the fields docs/debezium.md lists as legitimately different are left
// out.
func TestDebeziumMatchesConnector(t *testing.T) {
	bed := testbed.Get(t)
	if testbed.BrokerKind() == "kfake" {
		t.Skip("the differential test runs Kafka Connect's Java clients against a real broker (E2E_BROKER=kafka)")
	}
	ctx := t.Context()
	if flavor, err := bed.MySQL.Flavor(ctx); err != nil || flavor != "mariadb" {
		t.Skipf("the differential test runs Debezium's MariaDB connector: a MariaDB source only (this one: %q, %v)", flavor, err)
	}
	db, err := bed.MySQL.CreateDatabase(ctx, "dbz")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf(dbzTable, db),
		fmt.Sprintf("INSERT INTO `%s`.every_type VALUES "+dbzFull, db, 1),
		fmt.Sprintf("INSERT INTO `%s`.every_type (id, k2, i) VALUES (2, 'nulls', 0)", db),
		// Edges: before the epoch, negative decimals, 2^63, zero times,
		// two-digit years (Debezium's time adjuster), empty SET.
		fmt.Sprintf("INSERT INTO `%s`.every_type (id, k2, i, biu, dec1, dec3, dt, dtm3, dtm6, ts, tm, tm6, yr, b5, b16, bn, en, st, f, d) VALUES "+
			"(3, 'edge', -2147483648, 9223372036854775808, -0.05, -0.00001, '1969-12-31', '1969-12-31 23:59:59.500', '0069-06-01 00:00:00.000001', '1970-01-01 00:00:01', '00:00:00', '838:59:58.999999', 1901, b'00000', b'0000000000000000', 0x01, 'c', '', 0.1, 1e300)", db),
		fmt.Sprintf("CREATE TABLE `%s`.side (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", db),
		fmt.Sprintf("INSERT INTO `%s`.side VALUES (1, 'a')", db),
		fmt.Sprintf("CREATE TABLE `%s`.uncaptured (id INT NOT NULL PRIMARY KEY)", db),
	); err != nil {
		t.Fatal(err)
	}
	variants := []dbzVariant{
		{tag: "s", schemas: true},
		{tag: "n", schemas: false},
		{tag: "v", schemas: true, settings: map[string]string{"decimal.handling.mode": "string", "bigint.unsigned.handling.mode": "precise",
			"binary.handling.mode": "hex", "time.precision.mode": "connect"}},
		{tag: "w", schemas: false, settings: map[string]string{"decimal.handling.mode": "double", "binary.handling.mode": "base64-url-safe"}},
		{tag: "t", schemas: true, txn: true},
		{tag: "a", avro: true},
	}
	reg := bed.Registry(t)
	run := rand.IntN(1e9)
	rsPrefix := func(v dbzVariant) string { return fmt.Sprintf("rs%s%09d", v.tag, run) }
	dzPrefix := func(v dbzVariant) string { return fmt.Sprintf("dz%s%09d", v.tag, run) }
	topic := func(prefix string) string { return prefix + "." + db + ".every_type" }
	sideTopic := func(prefix string) string { return prefix + "." + db + ".side" }
	txnTopic := func(prefix string) string { return prefix + ".transaction" }
	tables := func(v dbzVariant) []string {
		if v.txn {
			return []string{db + ".every_type", db + ".side"}
		}
		return []string{db + ".every_type"}
	}

	// The connectors' topics (the test bed's broker creates none itself).
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var dzTopics []string
	for _, v := range variants {
		dzTopics = append(dzTopics, topic(dzPrefix(v)))
		if v.txn {
			dzTopics = append(dzTopics, sideTopic(dzPrefix(v)), txnTopic(dzPrefix(v)))
		}
	}
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, -1, nil, dzTopics...); err != nil {
		t.Fatal(err)
	}

	// readside: one tailer per variant, snapshot first.
	for _, v := range variants {
		cfg := bed.Config("", tables(v)...)
		cfg.Kafka.TopicPrefix = rsPrefix(v)
		cfg.Kafka.Partitions = 1
		cfg.Source.Snapshot.Mode = config.SnapshotInitial
		cfg.Kafka.Format = config.FormatDebezium
		cfg.Kafka.Debezium.Schemas.Enable = v.schemas
		cfg.Kafka.Debezium.Provide.Transaction.Metadata = v.txn
		if v.avro {
			cfg.Kafka.Format = config.FormatDebeziumAvro
			cfg.Kafka.SchemaRegistry.URL = reg.URL()
		}
		for k, val := range v.settings {
			switch k {
			case "decimal.handling.mode":
				cfg.Kafka.Debezium.Decimal.Handling.Mode = config.DecimalMode(val)
			case "bigint.unsigned.handling.mode":
				cfg.Kafka.Debezium.Bigint.Unsigned.Handling.Mode = config.UnsignedMode(val)
			case "binary.handling.mode":
				cfg.Kafka.Debezium.Binary.Handling.Mode = config.BinaryMode(val)
			case "time.precision.mode":
				cfg.Kafka.Debezium.Time.Precision.Mode = config.TimePrecisionMode(val)
			}
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		startTailer(t, cfg)
	}

	// Debezium: one worker, one connector per variant.
	admin, err := mysql.ParseDSN(bed.MySQL.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	var connectors []string
	for _, v := range variants {
		p := dzPrefix(v)
		props := []string{"name=" + p, "connector.class=io.debezium.connector.mariadb.MariaDbConnector", "tasks.max=1",
			"database.hostname=" + bed.MySQL.Host, "database.port=" + strconv.Itoa(bed.MySQL.Port),
			"database.user=" + admin.User, "database.password=" + admin.Passwd,
			"database.server.id=" + strconv.Itoa(int(testbed.NewServerID())), "database.ssl.mode=disable",
			"topic.prefix=" + p, "database.include.list=" + db, "table.include.list=" + strings.Join(tables(v), ","),
			"provide.transaction.metadata=" + strconv.FormatBool(v.txn),
			"include.schema.changes=false", "snapshot.mode=initial",
			"schema.history.internal.kafka.bootstrap.servers=" + strings.Join(bed.Kafka.Brokers(), ","),
			"schema.history.internal.kafka.topic=" + p + ".schema-history",
		}
		props = append(props, dbzConverters(v, reg)...)
		for k, val := range v.settings {
			props = append(props, k+"="+val)
		}
		connectors = append(connectors, strings.Join(props, "\n")+"\n")
	}
	dir := filepath.Join(t.TempDir(), "connect")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn, err := bed.StartConnect(ctx, dir, connectors...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Logf("Kafka Connect with %d connectors running after %s", len(variants), time.Since(start).Round(time.Millisecond))

	// Both snapshots over before the first live change, so both read the
	// same rows.
	var all []string
	for _, v := range variants {
		all = append(all, topic(rsPrefix(v)), topic(dzPrefix(v)))
	}
	c := newTopicsReader(t, bed, all...)
	// The Avro variant's records, decoded into the JSON converter's form
	// (without schemas) as they arrive, so that every check below reads
	// them as it reads the JSON variants'.
	avroTopics := map[string]bool{}
	for _, v := range variants {
		if v.avro {
			avroTopics[topic(rsPrefix(v))], avroTopics[topic(dzPrefix(v))] = true, true
		}
	}
	dec := newAvroDecoder(t, reg.URL())
	c.conv = func(rec *kgo.Record) *kgo.Record {
		if !avroTopics[rec.Topic] {
			return rec
		}
		out := *rec
		if rec.Key != nil {
			out.Key = mustJSON(t, dec.decode(t, rec.Key))
		}
		if rec.Value != nil {
			out.Value = mustJSON(t, dec.decode(t, rec.Value))
		}
		return &out
	}
	c.until(conn, func(recs []*kgo.Record) bool { return len(recs) >= 3 })
	var txnSide []string // the side tables' and the transaction topics
	for _, v := range variants {
		if v.txn {
			txnSide = append(txnSide, sideTopic(rsPrefix(v)), sideTopic(dzPrefix(v)), txnTopic(rsPrefix(v)), txnTopic(dzPrefix(v)))
		}
	}
	tx := newTopicsReader(t, bed, txnSide...)

	q := func(stmts ...string) {
		t.Helper()
		for i := range stmts {
			stmts[i] = strings.ReplaceAll(stmts[i], "{T}", "`"+db+"`.every_type")
			stmts[i] = strings.ReplaceAll(stmts[i], "{S}", "`"+db+"`.side")
		}
		if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
			t.Fatal(err)
		}
	}
	q(fmt.Sprintf("INSERT INTO {T} VALUES "+dbzFull, 10),
		"INSERT INTO {T} (id, k2, i, tm3, dtm, en) VALUES (11, 'move', 11, '-12:00:00.25', '1999-12-31 23:59:59', 'a')",
		"UPDATE {T} SET i = 100, dec1 = -99999999.99, vc = NULL, b1 = b'0', ts6 = '2037-06-01 12:00:00.999999', st = 'y' WHERE id = 10",
		"UPDATE {T} SET id = 12, vc = 'moved' WHERE id = 11",
		"DELETE FROM {T} WHERE id = 2",
		// A transaction of no captured table: an END with no changes.
		"INSERT INTO `"+db+"`.uncaptured VALUES (1)",
		"BEGIN",
		"INSERT INTO {T} (id, k2, i) VALUES (20, 'a', 1), (21, 'b', 2)",
		// Another table (captured by the txn variant only), a key change
		// there (two change records): the transaction's counters per
		// table and in total.
		"INSERT INTO {S} VALUES (2, 'b')",
		"UPDATE {T} SET i = i + 1 WHERE id IN (1, 3)",
		"UPDATE {S} SET id = 3 WHERE id = 1",
		"DELETE FROM {T} WHERE id = 20",
		"COMMIT",
		// A schema change: both sides' schemas and rows take the column.
		// NOT NULL without a default: the rows there get a zero date.
		"ALTER TABLE {T} ADD COLUMN added DECIMAL(4,1) NULL AFTER i, ADD COLUMN nz DATE NOT NULL, ADD COLUMN nzt DATETIME(6) NOT NULL",
		"UPDATE {T} SET added = -12.5, dt = '0000-00-00', dtm = '0000-00-00 00:00:00', ts = '0000-00-00 00:00:00' WHERE id = 21",
		"INSERT INTO {T} (id, k2, i, nz, nzt) VALUES (99, 'end', 0, '2020-01-01', '2020-01-01 00:00:00')")
	c.until(conn, func(recs []*kgo.Record) bool {
		return len(recs) > 0 && bytes.Contains(recs[len(recs)-1].Key, []byte(`"id":99`))
	})
	for _, v := range variants {
		compareDebezium(t, v.tag, c.records[topic(rsPrefix(v))], c.records[topic(dzPrefix(v))], []byte(rsPrefix(v)), []byte(dzPrefix(v)))
		if v.avro {
			compareAvroSchemas(t, v.tag, reg.URL(), topic(rsPrefix(v)), topic(dzPrefix(v)), rsPrefix(v), dzPrefix(v))
		}
		if !v.txn {
			continue
		}
		// The workload's transactions, from the first change after the
		// snapshot to the last: the transaction topics hold them whole.
		first, last := workloadGTIDs(t, c.records[topic(dzPrefix(v))])
		tx.until(conn, func(recs []*kgo.Record) bool {
			if len(recs) > 0 && strings.HasSuffix(recs[0].Topic, ".side") {
				return len(recs) >= 5 // the snapshot row, the insert, the key change's delete, tombstone and create
			}
			_, ok := txnRange(t, recs, first, last)
			return ok
		})
		compareDebezium(t, v.tag+" side", tx.records[sideTopic(rsPrefix(v))], tx.records[sideTopic(dzPrefix(v))], []byte(rsPrefix(v)), []byte(dzPrefix(v)))
		rs, _ := txnRange(t, tx.records[txnTopic(rsPrefix(v))], first, last)
		dz, _ := txnRange(t, tx.records[txnTopic(dzPrefix(v))], first, last)
		compareTxnTopics(t, v.tag, "readside", "debezium", rs, dz)
	}
}

// dbzConverters are the connector's key and value converter settings of
// a variant: the JSON converter, or Apicurio's AvroConverter set up as
// Confluent's (the Confluent frame with a 4-byte id the ccompat API
// serves, no Apicurio headers, subjects <topic>-key and <topic>-value,
// each schema whole)
// against the test bed's registry's own API.
func dbzConverters(v dbzVariant, reg *testbed.Registry) []string {
	if !v.avro {
		return []string{"key.converter=org.apache.kafka.connect.json.JsonConverter", "value.converter=org.apache.kafka.connect.json.JsonConverter",
			"key.converter.schemas.enable=" + strconv.FormatBool(v.schemas), "value.converter.schemas.enable=" + strconv.FormatBool(v.schemas)}
	}
	api := strings.TrimSuffix(reg.URL(), "/apis/ccompat/v7") + "/apis/registry/v2"
	var out []string
	for _, side := range []string{"key", "value"} {
		p := side + ".converter"
		out = append(out, p+"=io.apicurio.registry.utils.converter.AvroConverter",
			p+".apicurio.registry.url="+api,
			p+".apicurio.registry.auto-register=true",
			p+".apicurio.registry.as-confluent=true",
			p+".apicurio.registry.headers.enabled=false",
			p+".apicurio.registry.id-handler=io.apicurio.registry.serde.Legacy4ByteIdHandler",
			p+".apicurio.registry.use-id=contentId",
			// One schema per subject with its records inline, as
			// Confluent's converter registers it (Apicurio's default
			// registers each nested record as an artifact of its own,
			// referenced by name).
			p+".apicurio.registry.dereference-schema=true")
	}
	return out
}

// compareAvroSchemas compares every version readside registered under its
// topic's key and value subjects with the connector's, version by
// version: names, namespaces, field order, types, defaults, connect.name,
// connect.version, connect.parameters and logical types, readside's
// prefix read as the connector's.
func compareAvroSchemas(t *testing.T, tag, url, rsTopic, dzTopic, rsPrefix, dzPrefix string) {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-key", "-value"} {
		rs, err := cl.Schemas(t.Context(), rsTopic+suffix)
		if err != nil {
			t.Errorf("%s: readside's subject %s: %v", tag, rsTopic+suffix, err)
			continue
		}
		dz, err := cl.Schemas(t.Context(), dzTopic+suffix)
		if err != nil {
			t.Errorf("%s: the connector's subject %s: %v", tag, dzTopic+suffix, err)
			continue
		}
		if len(rs) != len(dz) {
			t.Errorf("%s: subject *%s: readside registered %d versions, the connector %d", tag, suffix, len(rs), len(dz))
		}
		for i := range min(len(rs), len(dz)) {
			var a, b any
			if err := json.Unmarshal([]byte(strings.ReplaceAll(rs[i].Schema.Schema, rsPrefix, dzPrefix)), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(dz[i].Schema.Schema), &b); err != nil {
				t.Fatal(err)
			}
			diffs := schemaDiffs("", a, b)
			for _, d := range diffs {
				t.Errorf("%s: subject *%s version %d: schema differs at %s", tag, suffix, i+1, d)
			}
			if len(diffs) > 0 {
				t.Logf("%s: subject *%s version %d\nreadside %s\ndebezium %s", tag, suffix, i+1, rs[i].Schema.Schema, dz[i].Schema.Schema)
			}
		}
		t.Logf("%s: subject *%s: %d versions compared", tag, suffix, min(len(rs), len(dz)))
	}
}

// schemaDiffs lists every difference between two decoded JSON schemas,
// by path: members, array items in order (a record's fields, a union's
// branches), values.
func schemaDiffs(path string, a, b any) []string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s (%v vs %v)", path, a, b)}
		}
		var out []string
		var keys []string
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			xv, inX := x[k]
			yv, inY := y[k]
			switch {
			case !inX:
				out = append(out, fmt.Sprintf("%s.%s (readside has none, the connector %v)", path, k, yv))
			case !inY:
				out = append(out, fmt.Sprintf("%s.%s (readside %v, the connector has none)", path, k, xv))
			default:
				out = append(out, schemaDiffs(path+"."+k, xv, yv)...)
			}
		}
		return out
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return []string{fmt.Sprintf("%s (%v vs %v)", path, a, b)}
		}
		var out []string
		for i := range x {
			p := fmt.Sprintf("%s[%d]", path, i)
			if m, ok := x[i].(map[string]any); ok && m["name"] != nil {
				p = fmt.Sprintf("%s[%d %v]", path, i, m["name"])
			}
			out = append(out, schemaDiffs(p, x[i], y[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		return []string{fmt.Sprintf("%s (%v vs %v)", path, a, b)}
	}
	return nil
}

// workloadGTIDs are the GTIDs of the first and last streamed change of a
// table topic (its snapshot rows carry none).
func workloadGTIDs(t *testing.T, recs []*kgo.Record) (first, last string) {
	t.Helper()
	for _, r := range recs {
		if r.Value == nil {
			continue
		}
		src, _ := dbzPayload(t, r.Value)["source"].(map[string]any)
		if g, _ := src["gtid"].(string); g != "" {
			if first == "" {
				first = g
			}
			last = g
		}
	}
	if first == "" {
		t.Fatal("no streamed change with a GTID in the table topic")
	}
	return first, last
}

// dbzPayload is a record value's payload, decoded.
func dbzPayload(t *testing.T, value []byte) map[string]any {
	t.Helper()
	v, _ := dbzNormalize(t, value).(map[string]any)
	if p, ok := v["payload"].(map[string]any); ok {
		return p
	}
	return v
}

// txnRange is the records of a transaction topic from the BEGIN of first
// to the END of last; ok once both are there.
func txnRange(t *testing.T, recs []*kgo.Record, first, last string) (out []*kgo.Record, ok bool) {
	t.Helper()
	from := -1
	for i, r := range recs {
		status, id := txnRecord(t, r)
		if from < 0 && status == "BEGIN" && id == first {
			from = i
		}
		if from >= 0 && status == "END" && id == last {
			return recs[from : i+1], true
		}
	}
	return nil, false
}

// txnRecord is a transaction record's status and id.
func txnRecord(t *testing.T, r *kgo.Record) (status, id string) {
	t.Helper()
	p := dbzPayload(t, r.Value)
	status, _ = p["status"].(string)
	id, _ = p["id"].(string)
	return status, id
}

// compareTxnTopics compares the transaction records of writers a and b in
// order: keys and values but the records' ts_ms (docs/debezium.md, "What
// differs").
func compareTxnTopics(t *testing.T, tag, a, b string, rs, dz []*kgo.Record) {
	t.Helper()
	if len(rs) != len(dz) || len(rs) == 0 {
		t.Errorf("%s transaction topic: %s wrote %d records for the workload, %s %d", tag, a, len(rs), b, len(dz))
	}
	var seq []string
	for _, r := range dz {
		status, _ := txnRecord(t, r)
		seq = append(seq, status)
	}
	t.Logf("%s transaction topic: %d records compared: %s", tag, min(len(rs), len(dz)), strings.Join(seq, " "))
	for i := range min(len(rs), len(dz)) {
		x, y := rs[i], dz[i]
		status, id := txnRecord(t, y)
		what := fmt.Sprintf("%s transaction record %d (%s %s)", tag, i, status, id)
		if !jsonEqual(x.Key, y.Key) {
			t.Errorf("%s: key\n%s %s\n%s %s", what, a, x.Key, b, y.Key)
		}
		if diff := jsonDiff("", dbzNormalize(t, x.Value), dbzNormalize(t, y.Value)); diff != "" {
			t.Errorf("%s: value differs at %s\n%s %s\n%s %s", what, diff, a, x.Value, b, y.Value)
		}
	}
}

// topicsReader reads committed records of topics from their start, one
// client for the whole test.
type topicsReader struct {
	t       *testing.T
	cl      *kgo.Client
	topics  []string
	records map[string][]*kgo.Record
	// conv, when set, turns each record as it arrives (e.g. decodes
	// Avro).
	conv func(*kgo.Record) *kgo.Record
}

func newTopicsReader(t *testing.T, bed *testbed.Bed, topics ...string) *topicsReader {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &topicsReader{t: t, cl: cl, topics: topics, records: map[string][]*kgo.Record{}}
}

// until reads on until done holds for the records of every topic, failing
// the test after two minutes or when a connector of conn (nil for none)
// fails.
func (r *topicsReader) until(conn *testbed.Connect, done func([]*kgo.Record) bool) {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		all := true
		for _, tp := range r.topics {
			all = all && done(r.records[tp])
		}
		if all {
			return
		}
		if conn != nil {
			if err := conn.Check(); err != nil && !strings.Contains(err.Error(), "not running yet") {
				r.t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			for _, tp := range r.topics {
				if !done(r.records[tp]) {
					r.t.Errorf("topic %s: the records waited for did not arrive (%d records)", tp, len(r.records[tp]))
				}
			}
			r.t.FailNow()
		}
		ctx, cancel := context.WithTimeout(r.t.Context(), time.Second)
		r.cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			if r.conv != nil {
				rec = r.conv(rec)
			}
			r.records[rec.Topic] = append(r.records[rec.Topic], rec)
		})
		cancel()
	}
}

// compareDebezium compares readside's records with the connector's, in
// order, after dbzNormalize.
func compareDebezium(t *testing.T, tag string, rs, dz []*kgo.Record, rsPrefix, dzPrefix []byte) {
	t.Helper()
	if len(rs) != len(dz) {
		t.Errorf("%s: readside wrote %d records, Debezium %d", tag, len(rs), len(dz))
	}
	for i := range min(len(rs), len(dz)) {
		a, b := rs[i], dz[i]
		what := fmt.Sprintf("%s record %d (op %s, key %s)", tag, i, opOf(b.Value), keyPayload(b.Key))
		if !jsonEqual(bytes.ReplaceAll(a.Key, rsPrefix, dzPrefix), b.Key) {
			t.Errorf("%s: key\nreadside %s\ndebezium %s", what, a.Key, b.Key)
		}
		if ah, bh := keyHeaders(a), keyHeaders(b); !reflect.DeepEqual(ah, bh) {
			t.Errorf("%s: key-change headers\nreadside %v\ndebezium %v", what, ah, bh)
		}
		if (a.Value == nil) != (b.Value == nil) {
			t.Errorf("%s: tombstone: readside %v, Debezium %v", what, a.Value == nil, b.Value == nil)
			continue
		}
		if a.Value == nil {
			continue
		}
		av, bv := dbzNormalize(t, bytes.ReplaceAll(a.Value, rsPrefix, dzPrefix)), dbzNormalize(t, b.Value)
		if diff := jsonDiff("", av, bv); diff != "" {
			t.Errorf("%s: value differs at %s", what, diff)
		}
	}
}

// keyHeaders are a record's __debezium.oldkey and newkey headers, the
// JSON compacted.
func keyHeaders(r *kgo.Record) map[string]string {
	out := map[string]string{}
	for _, h := range r.Headers {
		if h.Key == "__debezium.oldkey" || h.Key == "__debezium.newkey" {
			var c bytes.Buffer
			_ = json.Compact(&c, h.Value)
			out[h.Key] = c.String()
		}
	}
	return out
}

// dbzNormalize decodes a value and drops what may legitimately differ
// (docs/debezium.md, "What differs"): the processing timestamps, the
// writer's version, and for snapshot rows the binlog position and time of
// the snapshot and Debezium's first/last markers.
func dbzNormalize(t *testing.T, value []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("value %s: %v", value, err)
	}
	payload := v
	if p, ok := v["payload"].(map[string]any); ok {
		payload = p
	}
	for _, k := range []string{"ts_ms", "ts_us", "ts_ns"} {
		delete(payload, k)
	}
	src, _ := payload["source"].(map[string]any)
	delete(src, "version")
	if payload["op"] == "r" {
		for _, k := range []string{"ts_ms", "ts_us", "ts_ns", "file", "pos"} {
			delete(src, k)
		}
		switch src["snapshot"] {
		case "first", "last", "first_in_data_collection", "last_in_data_collection":
			src["snapshot"] = "true"
		}
	}
	return v
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return bytes.Equal(a, b)
	}
	return jsonDiff("", x, y) == ""
}

// jsonDiff is the path of the first difference between two decoded JSON
// values, "" for none. Numbers compare by value (Java and Go spell some
// floats differently: 1.0E300 and 1e+300).
func jsonDiff(path string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s (members %v vs %v)", path, keysOf(x), keysOf(b))
		}
		for k := range x {
			if d := jsonDiff(path+"."+k, x[k], y[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path + " (array)"
		}
		for i := range x {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return fmt.Sprintf("%s (%v vs %v)", path, a, b)
		}
		if x == y {
			return ""
		}
		fx, ex := x.Float64()
		fy, ey := y.Float64()
		if ex != nil || ey != nil || fx != fy || strings.ContainsAny(string(x)+string(y), ".eE") == false {
			return fmt.Sprintf("%s (%v vs %v)", path, a, b)
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%s (%v vs %v)", path, a, b)
	}
	return ""
}

func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// opOf and keyPayload shorten a record for a failure message.
func opOf(value []byte) string {
	var v struct {
		Op      string `json:"op"`
		Payload struct {
			Op string `json:"op"`
		} `json:"payload"`
	}
	_ = json.Unmarshal(value, &v)
	return v.Op + v.Payload.Op
}

func keyPayload(key []byte) string {
	var v struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(key, &v) == nil && v.Payload != nil {
		return string(v.Payload)
	}
	return string(key)
}
