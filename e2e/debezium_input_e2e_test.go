package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/e2e/testbed"
)

// TestProjectionsOverDebeziumFormat: readside's own tailer writes
// kafka.format: debezium and the same process's projection reads it back
// (the Debezium decoder, versions from the source position): rows from
// before the start arrive as the snapshot's op r, then a seeded workload
// of inserts, edits, read-key moves, deletes and primary key changes runs
// while `readside run` is killed with SIGKILL and restarted. The read
// table ends equal to the source.
func TestProjectionsOverDebeziumFormat(t *testing.T) {
	bed := testbed.Get(t)
	p := newPipeline(t, "dbzown", pipelineOptions{brokers: bed.Kafka.Brokers(), kafkaExtra: "  format: debezium\n"})
	ctx := t.Context()
	table := "`" + p.src + "`.messages"
	// Ids above the workload's 1-2000: the snapshot's rows, re-keyed later.
	for i := 5001; i <= 5100; i++ {
		if _, err := bed.MySQL.DB().ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?, ?, ?)", i, i%7,
			fmt.Sprintf("2025-06-01 10:00:%02d.%06d", i%60, i*7919%1e6), fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	d := p.start()
	waitForCheckpoint(t, bed, p.prefix)

	seed := seedFromEnv(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	wctx, stopWriter := context.WithCancel(ctx)
	werr := make(chan error, 1)
	ops := envInt("E2E_DBZ_OPS", 3000)
	go func() {
		err := p.write(wctx, rng, ops)
		// Primary key changes: Debezium's d + tombstone + c, one version.
		for i := 5001; i <= 5100 && err == nil && wctx.Err() == nil; i += 3 {
			_, err = bed.MySQL.DB().ExecContext(wctx, "UPDATE "+table+" SET id = id + 1000, body = CONCAT(body, '+') WHERE id = ?", i)
		}
		werr <- err
	}()
	kills := d.killWhile(rand.New(rand.NewPCG(seed, 12)), werr, 1)
	stopWriter()
	t.Logf("%d writes, %d SIGKILLs of readside run", ops, kills)
	t.Logf("read table equals the source: %d rows", p.converge(2*time.Minute))
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(p.logPath))
	}
}

// dbzInput is one converter the real connector writes with, and the
// input: lines readside reads its topics with.
type dbzInput struct {
	tag   string // in the topic prefix and sink database
	input func(reg *testbed.Registry) string
	conv  func(reg *testbed.Registry) []string
	avro  bool
}

// dbzInputs: the JSON converter with its schema block (its default),
// without it (bare payloads, the column types from the source's live
// schema), and Avro through the registry in Confluent's wire format.
var dbzInputs = []dbzInput{
	{tag: "j", input: func(*testbed.Registry) string { return "" }, conv: func(*testbed.Registry) []string { return dbzJSONConverters(true) }},
	{tag: "b", input: func(*testbed.Registry) string { return "  debezium: {schemas.enable: false}\n" }, conv: func(*testbed.Registry) []string { return dbzJSONConverters(false) }},
	{tag: "a", avro: true, input: func(reg *testbed.Registry) string {
		return "  format: avro\n  schema_registry: {url: \"" + reg.URL() + "\"}\n"
	}, conv: dbzAvroConverters},
}

// connectorBed is the test bed of a test that runs the real Debezium
// MariaDB connector: skipped on kfake (Kafka Connect's clients need a real
// broker) and on a source that is not MariaDB.
func connectorBed(t *testing.T) *testbed.Bed {
	t.Helper()
	bed := testbed.Get(t)
	if testbed.BrokerKind() == "kfake" {
		t.Skip("Kafka Connect's Java clients need a real broker (E2E_BROKER=kafka)")
	}
	if flavor, err := bed.MySQL.Flavor(t.Context()); err != nil || flavor != "mariadb" {
		t.Skipf("Debezium's MariaDB connector: a MariaDB source only (this one: %q, %v)", flavor, err)
	}
	return bed
}

// mariadbConnector is the properties file of a MariaDB connector named
// name (also its topic.prefix) capturing db's orders and customers from
// an initial snapshot on, with extra settings (its converters first).
func mariadbConnector(t *testing.T, bed *testbed.Bed, name, db string, extra ...string) string {
	t.Helper()
	admin, err := mysql.ParseDSN(bed.MySQL.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	props := []string{"name=" + name, "connector.class=io.debezium.connector.mariadb.MariaDbConnector", "tasks.max=1",
		"database.hostname=" + bed.MySQL.Host, "database.port=" + strconv.Itoa(bed.MySQL.Port),
		"database.user=" + admin.User, "database.password=" + admin.Passwd,
		"database.server.id=" + strconv.Itoa(int(testbed.NewServerID())), "database.ssl.mode=disable",
		"topic.prefix=" + name, "database.include.list=" + db, "table.include.list=" + db + ".orders," + db + ".customers",
		"include.schema.changes=false", "snapshot.mode=initial",
		"schema.history.internal.kafka.bootstrap.servers=" + strings.Join(bed.Kafka.Brokers(), ","),
		"schema.history.internal.kafka.topic=" + name + ".schema-history",
	}
	return strings.Join(append(props, extra...), "\n") + "\n"
}

// dbzInputConfig is the head of a config whose projectors read db's
// orders and customers from the topics connector prefix dz writes
// (input.kind: debezium, with the input: lines input adds), readside's
// own topics under topicPrefix.
func dbzInputConfig(bed *testbed.Bed, db, topicPrefix, dz, input, dataDir string) string {
	return fmt.Sprintf(`source:
  dsn: "%s"
  server_id: %d
  tables: [%[3]s.orders, %[3]s.customers]
kafka:
  brokers: [%s]
  topic_prefix: %s
input:
  kind: debezium
  topic_prefix: %s
%sdata_dir: %s
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), topicPrefix, dz, input, dataDir)
}

// TestDebeziumConnectorReadModels: `readside run --role projector` with
// input.kind: debezium keeps read models from the topics the real
// Debezium MariaDB connector writes, once per converter (dbzInputs: JSON
// with schemas, JSON without, Avro through the registry): one Kafka
// Connect worker runs a connector per converter on the same source, and
// one readside per converter keeps four projections in a sink database
// of its own: a copy with a joined column, an aggregate, customers with
// their orders nested (children), and, added by SIGHUP once the source
// has it, a copy that maps a column added mid-stream. The connectors
// take their initial snapshot, then a seeded workload (inserts, updates,
// deletes, primary key changes, an ALTER TABLE ADD COLUMN DECIMAL with a
// default and writes of the new column) runs while the worker is killed
// with SIGKILL and started again on offsets of a lost flush (every
// connector writes what it wrote since then a second time) and then every
// readside is killed with SIGKILL once, before the ALTER, which the
// restarted projectors follow live. Every read table ends equal to SQL on
// the source, the nested arrays to JSON_ARRAYAGG.
func TestDebeziumConnectorReadModels(t *testing.T) {
	bed := connectorBed(t)
	ctx := t.Context()
	begin := time.Now()
	reg := bed.Registry(t)
	m := newOrderReadModels(t, bed, "dbzin", 21) // its first rows: the connectors' snapshots
	db, seed := m.db, m.seed
	ops := envInt("E2E_DBZ_OPS", 800)
	// The ADD COLUMN: after the connectors' and readside's restarts.
	m.w.alterAt = m.w.n + ops*3/8

	run := rand.IntN(1e9)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	type side struct {
		dbzInput
		dz, sink, cfgPath, logPath string
		d                          *daemon
		norm                       func([]byte) []byte
		firstSnapshot              int
		since                      int64
	}
	var sides []*side
	var connectors []string
	for _, in := range dbzInputs {
		// E2E_DBZ_INPUTS=b,a runs those converters only (a fast loop).
		if only := os.Getenv("E2E_DBZ_INPUTS"); only != "" && !slices.Contains(strings.Split(only, ","), in.tag) {
			continue
		}
		s := &side{dbzInput: in, dz: fmt.Sprintf("dz%s%09d", in.tag, run), norm: dbzJSON}
		if in.avro {
			s.norm = dbzAvroJSON(t, reg.URL())
		}
		// Three partitions: a primary key change's d and c land apart.
		if _, err := adm.CreateTopics(ctx, 3, -1, nil, s.dz+"."+db+".orders", s.dz+"."+db+".customers"); err != nil {
			t.Fatal(err)
		}
		connectors = append(connectors, mariadbConnector(t, bed, s.dz, db, in.conv(reg)...))
		if s.sink, err = bed.MySQL.CreateDatabase(ctx, "dbzin_r"+in.tag); err != nil {
			t.Fatal(err)
		}
		sides = append(sides, s)
	}
	cdir := filepath.Join(t.TempDir(), "connect")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	conn, err := bed.StartConnect(ctx, cdir, connectors...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()

	config := func(s *side, added bool) {
		cfg := dbzInputConfig(bed, db, fmt.Sprintf("rs%s%09d", s.tag, run), s.dz, s.input(reg), filepath.Join(filepath.Dir(s.cfgPath), "data")) +
			m.projectionsIn(s.sink, true, added)
		if err := os.WriteFile(s.cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, s := range sides {
		dir := t.TempDir()
		s.cfgPath, s.logPath = filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
		config(s, false)
		s.d = startDaemon(t, s.logPath, "run", "--role", "projector", "-c", s.cfgPath)
	}

	werr := m.writeInBackground(ctx, ops) // the writes go on while the connectors and readside die
	waitFor := m.waitForSteps
	// At-least-once: a restarted worker writes again what it produced
	// since the offsets it finds. Those of an eighth of the writes are
	// kept and put back after the kill: a lost offset flush, so the
	// duplicates are many and certain rather than the few a flush
	// interval leaves.
	waitFor(ops / 8)
	// The offsets kept must be a streaming position: offsets kept while a
	// connector still snapshots (a slow start under load) make the
	// restarted one snapshot again and stream from that new snapshot's
	// position, writing no change twice.
	for _, s := range sides {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			recs, _, snap := dbzTopicStats(t, bed.Kafka.Brokers(), s.dz+"."+db+".orders", s.norm)
			return recs > snap, fmt.Sprintf("connector %s streamed no change yet (%d snapshot rows): still snapshotting", s.dz, snap)
		})
	}
	// ... and the worker must have flushed one for every connector
	// (offset.flush.interval.ms 250, later under load): a file still
	// holding a snapshot's offset (Debezium 3 marks it
	// "snapshot":"INITIAL", older versions "snapshot":true) makes that
	// restarted connector snapshot again and stream from that new
	// snapshot's position, so the deletes between the old connector's
	// last record and the new snapshot are never written: rows deleted
	// meanwhile stay in every sink.
	offsets := filepath.Join(cdir, "connect.offsets")
	var old []byte
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, err := os.ReadFile(offsets)
		old = b
		return err == nil && bytes.Count(b, []byte(`"pos"`)) >= len(sides) && !bytes.Contains(b, []byte(`"snapshot"`)),
			fmt.Sprintf("the worker's offsets file holds no streaming position of every connector yet (%v): %q", err, b)
	})
	produced := func(s *side) int64 {
		ends, err := adm.ListEndOffsets(ctx, s.dz+"."+db+".orders")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	for _, s := range sides {
		_, _, s.firstSnapshot = dbzTopicStats(t, bed.Kafka.Brokers(), s.dz+"."+db+".orders", s.norm)
		// Records produced after the copy are past its offsets: the
		// restarted worker writes them again.
		s.since = produced(s)
	}
	waitFor(ops / 4)
	for _, s := range sides {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			n := produced(s)
			if n < s.since+20 && m.done.Load() == int64(ops) {
				// The workload ended first (a quiet box writes it in
				// seconds): write more here, its goroutine is done with w.
				for i := 0; i < 10; i++ {
					if err := m.w.step(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			return n >= s.since+20, fmt.Sprintf("connector %s produced %d records since the offsets were copied, want 20", s.dz, n-s.since)
		})
	}
	if err := conn.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := os.WriteFile(offsets, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if conn, err = bed.StartConnect(ctx, cdir, connectors...); err != nil {
		t.Fatal(err)
	}
	t.Logf("the worker killed and its %d connectors running again in %s", len(sides), time.Since(killed).Round(time.Millisecond))
	// readside killed before the ADD COLUMN: the projectors started again
	// follow it live, holding the schemas read before it.
	waitFor(ops * 5 / 16)
	for _, s := range sides {
		s.d.kill9()
		s.d.start()
	}
	// SIGHUP before the daemon handles it (a moment after it logs
	// "starting") would end the process: wait until its projections run.
	for _, s := range sides {
		testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
			b, _ := os.ReadFile(s.logPath)
			_, after, _ := strings.Cut(string(b[bytes.LastIndex(b, []byte("=== start")):]), "msg=starting")
			return strings.Count(after, `msg="caught up`) >= 3, s.tag + ": readside's projections did not catch up after its restart:\n" + tail(s.logPath)
		})
	}
	// What a user does for a column added to the source: add a projection
	// that maps it, and SIGHUP the projector.
	waitFor(ops * 3 / 8) // the ALTER ran
	for _, s := range sides {
		config(s, true)
		if err := s.d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sides {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			b, _ := os.ReadFile(s.logPath)
			return s.d.running() && bytes.Contains(b, []byte(`projection=new_orders`)), s.tag + ": SIGHUP started no new_orders:\n" + tail(s.logPath)
		})
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes (seed %d) in %s, the worker and readside each killed once", ops, seed, time.Since(start).Round(time.Millisecond))

	for _, s := range sides {
		var diff string
		equal := m.equalIn(t, s.sink, true, s.logPath)
		pctx, cancelPoll := context.WithTimeout(ctx, 2*time.Minute)
		ok := testbed.Poll(pctx, 200*time.Millisecond, func() bool {
			if err := conn.Check(); err != nil {
				t.Fatal(err)
			}
			var ok bool
			ok, diff = equal()
			return ok
		})
		cancelPoll()
		if !ok {
			clog, _ := os.ReadFile(filepath.Join(cdir, "connect.log"))
			var restart []string
			for _, l := range strings.Split(string(clog), "\n") {
				if ll := strings.ToLower(l); strings.Contains(ll, "gtid") || strings.Contains(ll, "skip") || strings.Contains(ll, "binlog") || strings.Contains(ll, "offset") {
					restart = append(restart, l)
				}
			}
			rt := m.tables(t, s.sink, true)[0]
			t.Fatalf("%s (input%s): not within 2m: %s\nthe orders topic's records of the first differing copy keys:\n%s\noffsets put back: %q\nconnect log:\n%s",
				s.tag, strings.ReplaceAll("\n"+s.input(reg), "\n", " "), diff, dbzKeyHistory(t, bed.Kafka.Brokers(), s.dz+"."+db+".orders", s.norm, diffKeys(rt.got, rt.want, 3)), old, strings.Join(restart, "\n"))
		}
		t.Logf("%s: read tables equal the source %s after the start", s.tag, time.Since(start).Round(time.Millisecond))
	}
	// The read tables can converge before the restarted worker has written
	// its repeats (the first copies already carried every change); the
	// repeats must still come, and then the tables must still be right.
	for _, s := range sides {
		var recs, dups, snap int
		deadline := time.Now().Add(time.Minute)
		for {
			recs, dups, snap = dbzTopicStats(t, bed.Kafka.Brokers(), s.dz+"."+db+".orders", s.norm)
			if dups > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("%s: orders topic: %d records, %d snapshot rows, %d written again by the restarted connector", s.tag, recs, snap, dups)
		if snap == 0 {
			t.Errorf("%s: the connector's topic holds no snapshot rows: the test did not cover the snapshot", s.tag)
		}
		if snap != s.firstSnapshot {
			t.Errorf("%s: the restarted connector snapshotted again (%d snapshot rows, %d before the kill): the offsets put back were not a streaming position", s.tag, snap, s.firstSnapshot)
		}
		if dups == 0 {
			t.Errorf("%s: the restarted connector wrote nothing again within a minute: the test did not cover duplicates", s.tag)
		}
	}
	for _, s := range sides {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			ok, diff := m.equalIn(t, s.sink, true, s.logPath)()
			return ok, s.tag + ": after the repeats, " + diff
		})
		// Not equal by being empty: the added column's copy and the
		// nested arrays hold rows.
		for _, rt := range m.tables(t, s.sink, true)[2:] {
			if n := strings.Count(rt.got, "\n"); n < 5 {
				t.Errorf("%s: read table %s holds %d rows: the workload did not cover it", s.tag, rt.name, n)
			}
		}
		if code := s.d.stop(30 * time.Second); code != 0 {
			t.Errorf("%s: exit %d after SIGTERM; log:\n%s", s.tag, code, tail(s.logPath))
		}
	}
	t.Logf("wall time %s (the registry, the source, the worker's two starts, %d writes, convergence)", time.Since(begin).Round(time.Millisecond), ops)
}

// dbzJSONConverters are the JSON converter's settings for keys and values.
func dbzJSONConverters(schemas bool) []string {
	return []string{"key.converter=org.apache.kafka.connect.json.JsonConverter", "value.converter=org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable=" + strconv.FormatBool(schemas), "value.converter.schemas.enable=" + strconv.FormatBool(schemas)}
}

// dbzAvroConverters are Apicurio's AvroConverter for keys and values set
// up as Confluent's (as TestDebeziumMatchesConnector's variant a, where
// each setting is explained): the Confluent frame with a 4-byte id the
// ccompat API serves, no Apicurio headers, each schema whole.
func dbzAvroConverters(reg *testbed.Registry) []string {
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
			p+".apicurio.registry.dereference-schema=true")
	}
	return out
}

// dbzJSON is a JSON converter's key or value in the form with the
// schema block ({"payload": ...}), whether or not it has one.
func dbzJSON(b []byte) []byte {
	if bytes.HasPrefix(b, []byte(`{"schema"`)) {
		return b
	}
	return append(append([]byte(`{"payload":`), b...), '}')
}

// dbzAvroJSON reads a Confluent-framed Avro key or value (its writer's
// schema by id from the registry at url) into dbzJSON's form.
func dbzAvroJSON(t *testing.T, url string) func([]byte) []byte {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[int]string{}
	return func(b []byte) []byte {
		if len(b) < 5 || b[0] != 0 {
			t.Fatalf("not a Confluent-framed Avro record: %x", b)
		}
		id := int(binary.BigEndian.Uint32(b[1:5]))
		if _, ok := schemas[id]; !ok {
			s, err := cl.SchemaByID(t.Context(), id)
			if err != nil {
				t.Fatalf("schema id %d: %v", id, err)
			}
			schemas[id] = s.Schema
		}
		v, err := testbed.AvroAsJSON(schemas[id], b[5:])
		if err != nil {
			t.Fatalf("schema id %d: %v", id, err)
		}
		out, err := json.Marshal(map[string]any{"payload": v})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// dbzTopicStats reads topic to its end: its change records, how many of
// them repeat an earlier one's op and source position (a restarted
// connector's duplicates), and its snapshot rows. norm turns a key or
// value into the JSON converter's form with the schema block.
func dbzTopicStats(t *testing.T, brokers []string, topic string, norm func([]byte) []byte) (records, dups, snapshot int) {
	t.Helper()
	seen := map[string]bool{}
	eachRecordToEnd(t, brokers, topic, func(r *kgo.Record) {
		if r.Value == nil {
			return
		}
		var v struct {
			Payload struct {
				Op     string `json:"op"`
				Source struct {
					File     string `json:"file"`
					Pos, Row int64
				} `json:"source"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(norm(r.Value), &v); err != nil {
			t.Fatalf("record at %d/%d: %v", r.Partition, r.Offset, err)
		}
		records++
		pl := v.Payload
		if pl.Op == "r" {
			snapshot++
			return
		}
		id := fmt.Sprintf("%s %s:%d:%d %s", pl.Op, pl.Source.File, pl.Source.Pos, pl.Source.Row, norm(r.Key))
		if seen[id] {
			dups++
		}
		seen[id] = true
	})
	return records, dups, snapshot
}

// eachRecordToEnd calls fn for every record of topic, from its start to
// the end offsets it had when called, for 30 s at most; complete: it got
// there.
func eachRecordToEnd(t *testing.T, brokers []string, topic string, fn func(*kgo.Record)) (complete bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(left) > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
			fn(r)
		})
	}
	return len(left) == 0
}

// diffKeys is the first column (an integer key) of up to n lines that
// are in got only or in want only.
func diffKeys(got, want string, n int) []int {
	lines := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	g, w := lines(got), lines(want)
	var keys []int
	for _, side := range [][2]map[string]bool{{g, w}, {w, g}} {
		for l := range side[0] {
			if l != "" && !side[1][l] && len(keys) < n {
				id, _ := strconv.Atoi(strings.SplitN(l, "|", 2)[0])
				keys = append(keys, id)
			}
		}
	}
	return keys
}

// dbzKeyHistory lists every record of topic (a Debezium table topic keyed
// by id) whose key, before or after image holds one of ids: partition,
// offset, op, source position and the images' ids, to tell a change the
// connector never wrote from one the projector lost.
func dbzKeyHistory(t *testing.T, brokers []string, topic string, norm func([]byte) []byte, ids []int) string {
	t.Helper()
	want := map[int]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var b strings.Builder
	eachRecordToEnd(t, brokers, topic, func(r *kgo.Record) {
		var k struct {
			Payload struct{ ID int } `json:"payload"`
		}
		_ = json.Unmarshal(norm(r.Key), &k)
		var v struct {
			Payload struct {
				Op            string
				Before, After *struct{ ID int }
				Source        struct {
					File     string
					Pos, Row int64
					Snapshot any
					GTID     *string
				}
			} `json:"payload"`
		}
		if r.Value != nil {
			_ = json.Unmarshal(norm(r.Value), &v)
		}
		pl := v.Payload
		hit := want[k.Payload.ID] || pl.Before != nil && want[pl.Before.ID] || pl.After != nil && want[pl.After.ID]
		if !hit {
			return
		}
		img := func(i *struct{ ID int }) string {
			if i == nil {
				return "-"
			}
			return strconv.Itoa(i.ID)
		}
		if r.Value == nil {
			fmt.Fprintf(&b, "  %d/%d key %d tombstone\n", r.Partition, r.Offset, k.Payload.ID)
			return
		}
		gtid := ""
		if pl.Source.GTID != nil {
			gtid = *pl.Source.GTID
		}
		fmt.Fprintf(&b, "  %d/%d key %d op %s before %s after %s at %s:%d row %d snapshot %v gtid %s\n", r.Partition, r.Offset,
			k.Payload.ID, pl.Op, img(pl.Before), img(pl.After), pl.Source.File, pl.Source.Pos, pl.Source.Row, pl.Source.Snapshot, gtid)
	})
	return b.String()
}

// orderWorkload writes orders and customers at random: inserts, updates
// of every column, customer renames, deletes and primary key changes.
//
// With alterAt set, step alterAt adds the column discount (DECIMAL(10,2)
// NOT NULL with a default) to orders while the workload runs; the steps
// after it write discount in their inserts and updates, and also insert,
// update and delete "new orders", ids above 2000, which only ever exist
// with the column.
type orderWorkload struct {
	db      *sql.DB
	o, c    string
	rng     *rand.Rand
	live    map[int]bool
	n       int
	alterAt int
	altered bool
}

// newOrderIDs are the ids of orders written only after the ADD COLUMN.
const newOrderIDs = 2000

func (w *orderWorkload) step(ctx context.Context) error {
	w.n++
	if w.alterAt > 0 && w.n == w.alterAt {
		w.altered = true
		_, err := w.db.ExecContext(ctx, "ALTER TABLE "+w.o+" ADD COLUMN discount DECIMAL(10,2) NOT NULL DEFAULT 1.25")
		return err
	}
	id := 1 + w.rng.IntN(300)
	cust := 1 + w.rng.IntN(12)
	if w.altered && w.rng.IntN(4) == 0 {
		id = newOrderIDs + 1 + w.rng.IntN(40)
	}
	discount := fmt.Sprintf("%d.%02d", w.rng.IntN(200)-100, w.rng.IntN(100))
	var err error
	switch r := w.rng.IntN(100); {
	case r < 8:
		_, err = w.db.ExecContext(ctx, "INSERT INTO "+w.c+" VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)", cust, fmt.Sprintf("c%d-%d", cust, w.n))
	case !w.live[id]:
		cols, marks := "id, customer_id, amount, placed, paid, flag, code, note", "?, ?, ?, ?, ?, ?, ?, ?"
		args := []any{id, cust,
			fmt.Sprintf("%d.%02d", w.rng.IntN(100000)-50000, w.rng.IntN(100)),
			fmt.Sprintf("2026-%02d-%02d 12:%02d:%02d.%06d", 1+w.rng.IntN(12), 1+w.rng.IntN(28), w.rng.IntN(60), w.rng.IntN(60), w.rng.IntN(1e6)),
			nullIf(w.rng.IntN(3) == 0, fmt.Sprintf("2025-01-01 00:00:%02d.%03d", w.rng.IntN(60), w.rng.IntN(1000))),
			w.rng.IntN(2), nullIf(w.rng.IntN(4) == 0, []byte{byte(w.rng.IntN(256)), 0, byte(w.n)}), fmt.Sprintf("n%d", w.n)}
		if w.altered {
			cols, marks, args = cols+", discount", marks+", ?", append(args, discount)
		}
		_, err = w.db.ExecContext(ctx, "INSERT INTO "+w.o+" ("+cols+") VALUES ("+marks+")", args...)
		w.live[id] = true
	case r < 45:
		set := "amount = amount + ?, flag = 1 - flag, note = ?, placed = placed + INTERVAL 1 SECOND"
		args := []any{w.rng.IntN(1000), fmt.Sprintf("u%d", w.n)}
		if w.altered {
			set, args = set+", discount = ?", append(args, discount)
		}
		_, err = w.db.ExecContext(ctx, "UPDATE "+w.o+" SET "+set+" WHERE id = ?", append(args, id)...)
	case r < 65:
		_, err = w.db.ExecContext(ctx, "UPDATE "+w.o+" SET customer_id = ? WHERE id = ?", cust, id)
	case r < 80:
		// A primary key change (to a free id; a new order's stays one).
		to := 301 + w.rng.IntN(300)
		if id > newOrderIDs {
			to = newOrderIDs + 41 + w.rng.IntN(40)
		}
		if w.live[to] {
			return nil
		}
		var res sql.Result
		if res, err = w.db.ExecContext(ctx, "UPDATE "+w.o+" SET id = ? WHERE id = ?", to, id); err == nil {
			if n, _ := res.RowsAffected(); n == 1 {
				delete(w.live, id)
				w.live[to] = true
			}
		}
	default:
		_, err = w.db.ExecContext(ctx, "DELETE FROM "+w.o+" WHERE id = ?", id)
		delete(w.live, id)
	}
	return err
}

func nullIf(null bool, v any) any {
	if null {
		return nil
	}
	return v
}

// queryText is q's rows, one line each, columns separated by |.
func queryText(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	return rowsText(t, rows)
}

// rowsText is rows, one line each, columns separated by |.
func rowsText(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteByte('|')
			}
			if v.Valid {
				b.WriteString(v.String)
			} else {
				b.WriteString("<null>")
			}
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
