package cdc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// avroRegistry is the one place the debezium-avro tests get their
// registry from: the test bed's, Apicurio Registry started once per test
// binary (franz-go's in-memory one on kfake, which judges no
// compatibility).
func avroRegistry(t *testing.T, bed *testbed.Bed) *testbed.Registry {
	return bed.Registry(t)
}

// avroDecoder reads Confluent-framed Avro records as a consumer does:
// the schema id from the frame, the schema text from the registry by id,
// the body decoded by an Avro library (testbed.AvroAsJSON).
type avroDecoder struct {
	cl *sr.Client

	mu      sync.Mutex
	schemas map[int]string
}

func newAvroDecoder(t *testing.T, url string) *avroDecoder {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	return &avroDecoder{cl: cl, schemas: map[int]string{}}
}

// decode is the JSON converter's form of a framed record key or value.
func (d *avroDecoder) decode(t *testing.T, b []byte) any {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("record %x: no Confluent frame (magic byte 0, 4-byte id)", b)
	}
	var h sr.ConfluentHeader
	id, body, err := h.DecodeID(b)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	schema, ok := d.schemas[id]
	d.mu.Unlock()
	if !ok {
		s, err := d.cl.SchemaByID(t.Context(), id)
		if err != nil {
			t.Fatalf("schema id %d from the registry: %v", id, err)
		}
		schema = s.Schema
		d.mu.Lock()
		d.schemas[id] = schema
		d.mu.Unlock()
	}
	v, err := testbed.AvroAsJSON(schema, body)
	if err != nil {
		t.Fatalf("decoding %x with schema %d: %v", b, id, err)
	}
	return v
}

func debeziumConfig(t *testing.T, bed *testbed.Bed, table, prefix string, format config.Format, registry string) config.Config {
	cfg := bed.Config("", table)
	cfg.Kafka.TopicPrefix = prefix
	cfg.Kafka.Partitions = 1
	cfg.Source.Snapshot.Mode = config.SnapshotInitial
	cfg.Kafka.Format = format
	cfg.Kafka.Debezium.Schemas.Enable = false
	if format == config.FormatDebeziumAvro {
		cfg.Kafka.SchemaRegistry.URL = registry
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestDebeziumAvroMatchesJSON runs two tailers on one table, one in
// kafka.format: debezium (the JSON converter's payloads, which
// TestDebeziumMatchesConnector holds equal to Debezium's) and one in
// debezium-avro, through a snapshot, inserts, updates, a key change,
// deletes, a multi-row transaction and an added column, decodes the Avro
// topic as a consumer does (frame, schema by id from the registry, an Avro
// library) and compares it record for record with the JSON topic: keys,
// values, tombstones and key-change headers. Both have
// provide.transaction.metadata on: the transaction blocks and the
// transaction topics compare too. The added column registers a second
// version of the value subject.
func TestDebeziumAvroMatchesJSON(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "dbza")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf(dbzTable, db),
		fmt.Sprintf("INSERT INTO `%s`.every_type VALUES "+dbzFull, db, 1),
		fmt.Sprintf("INSERT INTO `%s`.every_type (id, k2, i) VALUES (2, 'nulls', 0)", db),
		fmt.Sprintf("INSERT INTO `%s`.every_type (id, k2, i, biu, dec1, dec3, dt, dtm3, dtm6, ts, tm, tm6, yr, b5, b16, bn, en, st, f, d) VALUES "+
			"(3, 'edge', -2147483648, 9223372036854775808, -0.05, -0.00001, '1969-12-31', '1969-12-31 23:59:59.500', '0069-06-01 00:00:00.000001', '1970-01-01 00:00:01', '00:00:00', '838:59:58.999999', 1901, b'00000', b'0000000000000000', 0x01, 'c', '', 0.1, 1e300)", db),
	); err != nil {
		t.Fatal(err)
	}
	reg := avroRegistry(t, bed)
	run := rand.IntN(1e9)
	jsonPrefix, avroPrefix := fmt.Sprintf("rsj%09d", run), fmt.Sprintf("rsa%09d", run)
	jt, at := jsonPrefix+"."+db+".every_type", avroPrefix+"."+db+".every_type"
	for _, cfg := range []config.Config{
		debeziumConfig(t, bed, db+".every_type", jsonPrefix, config.FormatDebezium, ""),
		debeziumConfig(t, bed, db+".every_type", avroPrefix, config.FormatDebeziumAvro, reg.URL()),
	} {
		cfg.Kafka.Debezium.Provide.Transaction.Metadata = true
		startTailer(t, cfg)
	}

	dec := newAvroDecoder(t, reg.URL())
	keyJSON := func(rec *kgo.Record) []byte {
		if rec.Topic == jt {
			return rec.Key
		}
		b, _ := json.Marshal(dec.decode(t, rec.Key))
		return b
	}
	c := newTopicsReader(t, bed, jt, at)
	c.until(nil, func(recs []*kgo.Record) bool { return len(recs) >= 3 })
	q := func(stmts ...string) {
		t.Helper()
		for i := range stmts {
			stmts[i] = strings.ReplaceAll(stmts[i], "{T}", "`"+db+"`.every_type")
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
		"BEGIN",
		"INSERT INTO {T} (id, k2, i) VALUES (20, 'a', 1), (21, 'b', 2)",
		"UPDATE {T} SET i = i + 1 WHERE id IN (1, 3)",
		"DELETE FROM {T} WHERE id = 20",
		"COMMIT",
		// A compatible change (a nullable column: its field defaults to
		// null): a new version of the value subject.
		"ALTER TABLE {T} ADD COLUMN added DECIMAL(4,1) NULL AFTER i",
		"UPDATE {T} SET added = -12.5 WHERE id = 21",
		"INSERT INTO {T} (id, k2, i) VALUES (99, 'end', 0)")
	c.until(nil, func(recs []*kgo.Record) bool {
		return len(recs) > 0 && strings.Contains(string(keyJSON(recs[len(recs)-1])), `"id":99`)
	})

	js, as := c.records[jt], c.records[at]
	t.Logf("comparing %d JSON records with %d Avro records", len(js), len(as))
	if len(js) != len(as) {
		t.Errorf("the JSON topic has %d records, the Avro topic %d", len(js), len(as))
	}
	for i := range min(len(js), len(as)) {
		j, a := js[i], as[i]
		what := fmt.Sprintf("record %d (op %s, key %s)", i, opOf(j.Value), j.Key)
		if !jsonEqual(j.Key, keyJSON(a)) {
			t.Errorf("%s: key\njson %s\navro %s", what, j.Key, keyJSON(a))
		}
		if jh, ah := keyHeaders(j), keyHeaders(a); !equalHeaders(jh, ah) {
			t.Errorf("%s: key-change headers\njson %v\navro %v", what, jh, ah)
		}
		if (j.Value == nil) != (a.Value == nil) {
			t.Errorf("%s: tombstone: json %v, avro %v", what, j.Value == nil, a.Value == nil)
			continue
		}
		if j.Value == nil {
			continue
		}
		av, err := json.Marshal(dec.decode(t, a.Value))
		if err != nil {
			t.Fatal(err)
		}
		jv := dbzNormalize(t, j.Value)
		avn := dbzNormalize(t, []byte(strings.ReplaceAll(string(av), avroPrefix, jsonPrefix)))
		if diff := jsonDiff("", avn, jv); diff != "" {
			t.Errorf("%s: value differs at %s\njson %s\navro %s", what, diff, j.Value, av)
		}
	}

	// The transaction topics, over the workload's transactions.
	first, last := workloadGTIDs(t, js)
	jtx, atx := jsonPrefix+".transaction", avroPrefix+".transaction"
	tx := newTopicsReader(t, bed, jtx, atx)
	asJSON := func(recs []*kgo.Record) []*kgo.Record {
		if len(recs) == 0 || recs[0].Topic != atx {
			return recs
		}
		out := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			k, _ := json.Marshal(dec.decode(t, r.Key))
			v, _ := json.Marshal(dec.decode(t, r.Value))
			out[i] = &kgo.Record{Topic: r.Topic, Key: k, Value: v}
		}
		return out
	}
	tx.until(nil, func(recs []*kgo.Record) bool {
		_, ok := txnRange(t, asJSON(recs), first, last)
		return ok
	})
	jr, _ := txnRange(t, tx.records[jtx], first, last)
	ar, _ := txnRange(t, asJSON(tx.records[atx]), first, last)
	compareTxnTopics(t, "debezium-avro", "avro", "json", ar, jr)

	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	for subject, want := range map[string]int{at + "-key": 1, at + "-value": 2, atx + "-key": 1, atx + "-value": 1} {
		versions, err := cl.SubjectVersions(ctx, subject)
		if err != nil || len(versions) != want {
			t.Errorf("subject %s: versions %v (%v), want %d: one per shape of the table", subject, versions, err, want)
		}
	}
}

func equalHeaders(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDebeziumAvroRefusedSchemaStops: a table change whose Avro schema the
// registry refuses (a NOT NULL column without a default is incompatible
// under BACKWARD) stops the tailer with the registry's verdict, the
// subject and the fix, publishing nothing of the change; once the subject
// takes the schema, a restart publishes the row written after the change
// from the checkpoint: nothing is lost. The row is written in a
// transaction that changed another captured table first, with
// provide.transaction.metadata on: the transaction's BEGIN and first
// change were produced when the tailer stopped, and a read_committed
// reader sees them, the change and the END exactly once after the restart.
func TestDebeziumAvroRefusedSchemaStops(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "dbzr")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY, v INT)", db),
		fmt.Sprintf("INSERT INTO `%s`.t VALUES (1, 1)", db),
		fmt.Sprintf("CREATE TABLE `%s`.u (id INT PRIMARY KEY)", db)); err != nil {
		t.Fatal(err)
	}
	reg := avroRegistry(t, bed)
	prefix := fmt.Sprintf("rsr%09d", rand.IntN(1e9))
	topic := prefix + "." + db + ".t"
	subject := topic + "-value"
	cfg := debeziumConfig(t, bed, db+".t", prefix, config.FormatDebeziumAvro, reg.URL())
	cfg.Source.Tables = append(cfg.Source.Tables, db+".u")
	cfg.Kafka.Debezium.Provide.Transaction.Metadata = true
	uTopic, txnTopic := prefix+"."+db+".u", prefix+".transaction"

	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	c := newTopicsReader(t, bed, topic)
	c.until(nil, func(recs []*kgo.Record) bool { return len(recs) >= 1 })
	// Both tables' initial snapshots committed before the change: an
	// unfinished one would snapshot u again after the restart, a second
	// (op r) record of its row that is not what this test is about.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if v, _ := tl.InitialSnapshot(); v != nil && v.Complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the initial snapshot did not complete")
		}
	}
	others := newTopicsReader(t, bed, uTopic, txnTopic)

	const verdict = "Schema being registered is incompatible with an earlier schema"
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if reg.Fake() != nil {
		// The fake judges no compatibility: it answers as a registry
		// under BACKWARD does.
		reg.Refuse(subject, fmt.Sprintf(`%s for subject "%s", details: [READER_FIELD_MISSING_DEFAULT_VALUE must]`, verdict, subject))
	} else if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, subject); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.t ADD COLUMN must INT NOT NULL", db),
		"BEGIN", fmt.Sprintf("INSERT INTO `%s`.u VALUES (7)", db), fmt.Sprintf("INSERT INTO `%s`.t VALUES (2, 2, 2)", db), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("the tailer stopped: %v", err)
		var fatal *FatalError
		if !errors.As(err, &fatal) {
			t.Fatalf("the tailer stopped with %v, want a FatalError", err)
		}
		for _, want := range []string{"refused the Avro schema of " + db + ".t under subject " + subject, "HTTP 409", "incompatible", "Fix:", "nothing is lost"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error lacks %q: %v", want, err)
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("the tailer did not stop on the refused schema")
	}
	settle := time.Now().Add(3 * time.Second)
	c.until(nil, func([]*kgo.Record) bool { return time.Now().After(settle) })
	if n := len(c.records[topic]); n != 1 {
		t.Fatalf("the topic holds %d records after the refusal, want the snapshot's 1", n)
	}
	settle = time.Now().Add(time.Second)
	others.until(nil, func([]*kgo.Record) bool { return time.Now().After(settle) })
	if n := len(others.records[uTopic]); n != 0 {
		t.Fatalf("the other table's topic holds %d records after the refusal: the stopped transaction's change was committed", n)
	}

	// The operator lets the subject take the schema and restarts.
	if reg.Fake() != nil {
		reg.Refuse(subject, "")
	} else if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	startTailer(t, cfg)
	c.until(nil, func(recs []*kgo.Record) bool { return len(recs) >= 2 })
	dec := newAvroDecoder(t, reg.URL())
	got, _ := json.Marshal(dec.decode(t, c.records[topic][1].Value))
	if !strings.Contains(string(got), `"after":{"id":2,"must":2,"v":2}`) {
		t.Errorf("the row after the change: %s, want its insert with the new column", got)
	}
	if n := len(c.records[topic]); n != 2 {
		t.Errorf("the topic holds %d records, want 2 (the snapshot's row once, the row after the change)", n)
	}

	// The transaction of both rows: its BEGIN, its two changes and its
	// END, each once.
	gtid := dbzPayload(t, mustJSON(t, dec.decode(t, c.records[topic][1].Value)))["source"].(map[string]any)["gtid"].(string)
	others.until(nil, func(recs []*kgo.Record) bool {
		if len(recs) == 0 || recs[0].Topic == uTopic {
			return len(recs) >= 1
		}
		for _, r := range recs {
			if p := dbzPayload(t, mustJSON(t, dec.decode(t, r.Value))); p["status"] == "END" && p["id"] == gtid {
				return true
			}
		}
		return false
	})
	if n := len(others.records[uTopic]); n != 1 {
		t.Errorf("the other table's topic holds %d records, want its row once", n)
	}
	if b := dbzPayload(t, mustJSON(t, dec.decode(t, c.records[topic][1].Value)))["transaction"]; !reflect.DeepEqual(b, map[string]any{"id": gtid, "total_order": json.Number("2"), "data_collection_order": json.Number("1")}) {
		t.Errorf("the row after the change has transaction block %v, want the transaction's second change", b)
	}
	var statuses []string
	for _, r := range others.records[txnTopic] {
		if p := dbzPayload(t, mustJSON(t, dec.decode(t, r.Value))); p["id"] == gtid {
			statuses = append(statuses, fmt.Sprintf("%s %v", p["status"], p["event_count"]))
		}
	}
	if want := []string{"BEGIN <nil>", "END 2"}; !reflect.DeepEqual(statuses, want) {
		t.Errorf("transaction %s on the transaction topic: %v, want %v (once each, the END counting both changes)", gtid, statuses, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
