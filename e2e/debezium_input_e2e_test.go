package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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

// TestDebeziumConnectorReadModels: `readside run --role projector` with
// input.kind: debezium keeps a copy with a joined column and an aggregate
// from the topics the real Debezium MariaDB connector writes: its initial
// snapshot, then a seeded workload (inserts, updates, deletes, primary key
// changes) during which the connector is killed with SIGKILL and started
// again on its offsets (it writes what it wrote since its last offset
// flush a second time) and readside is killed with SIGKILL once. Both read
// tables end equal to SQL on the source.
func TestDebeziumConnectorReadModels(t *testing.T) {
	bed := testbed.Get(t)
	if testbed.BrokerKind() == "kfake" {
		t.Skip("Kafka Connect's Java clients need a real broker (E2E_BROKER=kafka)")
	}
	ctx := t.Context()
	if flavor, err := bed.MySQL.Flavor(ctx); err != nil || flavor != "mariadb" {
		t.Skipf("Debezium's MariaDB connector: a MariaDB source only (this one: %q, %v)", flavor, err)
	}
	m := newOrderReadModels(t, bed, "dbzin", 21) // its first rows: the connector's snapshot
	db, seed := m.db, m.seed

	run := rand.IntN(1e9)
	dz := fmt.Sprintf("dzin%09d", run)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Three partitions: a primary key change's d and c land apart.
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 3, -1, nil, dz+"."+db+".orders", dz+"."+db+".customers"); err != nil {
		t.Fatal(err)
	}
	admin, err := mysql.ParseDSN(bed.MySQL.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	connector := strings.Join([]string{"name=" + dz, "connector.class=io.debezium.connector.mariadb.MariaDbConnector", "tasks.max=1",
		"database.hostname=" + bed.MySQL.Host, "database.port=" + strconv.Itoa(bed.MySQL.Port),
		"database.user=" + admin.User, "database.password=" + admin.Passwd,
		"database.server.id=" + strconv.Itoa(int(testbed.NewServerID())), "database.ssl.mode=disable",
		"topic.prefix=" + dz, "database.include.list=" + db, "table.include.list=" + db + ".orders," + db + ".customers",
		"include.schema.changes=false", "snapshot.mode=initial",
		"schema.history.internal.kafka.bootstrap.servers=" + strings.Join(bed.Kafka.Brokers(), ","),
		"schema.history.internal.kafka.topic=" + dz + ".schema-history",
	}, "\n") + "\n"
	cdir := filepath.Join(t.TempDir(), "connect")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	conn, err := bed.StartConnect(ctx, cdir, connector)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close() }()

	dir := t.TempDir()
	cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
	cfg := fmt.Sprintf(`source:
  dsn: "%s"
  server_id: %d
  tables: [%[3]s.orders, %[3]s.customers]
kafka:
  brokers: [%s]
  topic_prefix: rs%09d
input:
  kind: debezium
  topic_prefix: %s
data_dir: %s
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), run, dz, filepath.Join(dir, "data")) + m.projections()
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := startDaemon(t, logPath, "run", "--role", "projector", "-c", cfgPath)

	ops := envInt("E2E_DBZ_OPS", 800)
	werr := m.writeInBackground(ctx, ops) // the writes go on while the connector and readside die
	waitFor := m.waitForSteps
	// At-least-once: a restarted worker writes again what it produced
	// since the offsets it finds. Those of an eighth of the writes are
	// kept and put back after the kill: a lost offset flush, so the
	// duplicates are many and certain rather than the few a flush
	// interval leaves.
	waitFor(ops / 8)
	// The offsets kept must be a streaming position: offsets kept while the
	// connector still snapshots (a slow start under load) make the
	// restarted one snapshot again and stream from that new snapshot's
	// position, writing no change twice.
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		recs, _, snap := dbzTopicStats(t, bed.Kafka.Brokers(), dz+"."+db+".orders")
		return recs > snap, fmt.Sprintf("the connector streamed no change yet (%d snapshot rows): still snapshotting", snap)
	})
	// ... and the worker must have flushed one (offset.flush.interval.ms
	// 250, later under load): a file still holding the snapshot's offset
	// (Debezium 3 marks it "snapshot":"INITIAL", older versions
	// "snapshot":true) makes the restarted connector snapshot again and
	// stream from that new snapshot's position, so the deletes between
	// the old connector's last record and the new snapshot are never
	// written: rows deleted meanwhile stay in every sink.
	offsets := filepath.Join(cdir, "connect.offsets")
	var old []byte
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, err := os.ReadFile(offsets)
		old = b
		return err == nil && bytes.Contains(b, []byte(`"pos"`)) && !bytes.Contains(b, []byte(`"snapshot"`)),
			fmt.Sprintf("the worker's offsets file holds no streaming position yet (%v): %q", err, b)
	})
	_, _, firstSnapshot := dbzTopicStats(t, bed.Kafka.Brokers(), dz+"."+db+".orders")
	if i := bytes.LastIndex(old, []byte(`{"`)); i >= 0 {
		t.Logf("offsets kept: %s", bytes.TrimRight(old[i:], "x"))
	}
	adm := kadm.NewClient(cl)
	produced := func() int64 {
		ends, err := adm.ListEndOffsets(ctx, dz+"."+db+".orders")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	// Records produced after the copy are past its offsets: the restarted
	// worker writes them again.
	since := produced()
	waitFor(ops / 4)
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		n := produced()
		if n < since+20 && m.done.Load() == int64(ops) {
			// The workload ended first (a quiet box writes it in
			// seconds): write more here, its goroutine is done with w.
			for i := 0; i < 10; i++ {
				if err := m.w.step(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		return n >= since+20, fmt.Sprintf("the connector produced %d records since the offsets were copied, want 20", n-since)
	})
	if err := conn.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := os.WriteFile(offsets, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if conn, err = bed.StartConnect(ctx, cdir, connector); err != nil {
		t.Fatal(err)
	}
	t.Logf("connector killed and running again in %s", time.Since(killed).Round(time.Millisecond))
	waitFor(ops / 2)
	d.kill9()
	d.start()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes (seed %d) in %s, the connector and readside each killed once", ops, seed, time.Since(start).Round(time.Millisecond))

	var gotCopy, wantCopy string
	equal := func() bool {
		if err := conn.Check(); err != nil {
			t.Fatal(err)
		}
		var gotAgg, wantAgg string
		gotCopy, wantCopy, gotAgg, wantAgg = m.tables(t)
		return wantCopy == gotCopy && wantAgg == gotAgg
	}
	pctx, cancelPoll := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelPoll()
	if !testbed.Poll(pctx, 200*time.Millisecond, equal) {
		clog, _ := os.ReadFile(filepath.Join(cdir, "connect.log"))
		var restart []string
		for _, l := range strings.Split(string(clog), "\n") {
			if ll := strings.ToLower(l); strings.Contains(ll, "gtid") || strings.Contains(ll, "skip") || strings.Contains(ll, "binlog") || strings.Contains(ll, "offset") {
				restart = append(restart, l)
			}
		}
		t.Fatalf("not within 2m: the copy differs from the source: %s\nthe topic's records of the first differing keys:\n%s\noffsets put back: %q\nconnect log:\n%s\nlog tail:\n%s",
			rowDiff(gotCopy, wantCopy, 10), dbzKeyHistory(t, bed.Kafka.Brokers(), dz+"."+db+".orders", diffKeys(gotCopy, wantCopy, 3)), old, strings.Join(restart, "\n"), tail(logPath))
	}
	converged := time.Since(start)
	// The read tables can converge before the restarted worker has written
	// its repeats (the first copies already carried every change); the
	// repeats must still come, and then the tables must still be right.
	var recs, dups, snap int
	deadline := time.Now().Add(time.Minute)
	for {
		recs, dups, snap = dbzTopicStats(t, bed.Kafka.Brokers(), dz+"."+db+".orders")
		if dups > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("orders topic: %d records, %d snapshot rows, %d written again by the restarted connector; converged %s after the start",
		recs, snap, dups, converged.Round(time.Millisecond))
	if snap == 0 {
		t.Error("the connector's topic holds no snapshot rows: the test did not cover the snapshot")
	}
	if snap != firstSnapshot {
		t.Errorf("the restarted connector snapshotted again (%d snapshot rows, %d before the kill): the offsets put back were not a streaming position", snap, firstSnapshot)
	}
	if dups == 0 {
		t.Error("the restarted connector wrote nothing again within a minute: the test did not cover duplicates")
	}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		ok, diff := m.equal(t, logPath)()
		return ok, "after the repeats, " + diff
	})
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

// dbzTopicStats reads topic to its end: its change records, how many of
// them repeat an earlier one's op and source position (a restarted
// connector's duplicates), and its snapshot rows.
func dbzTopicStats(t *testing.T, brokers []string, topic string) (records, dups, snapshot int) {
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
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(want) > 0 && ctx.Err() == nil {
		for p, end := range want {
			if end == 0 {
				delete(want, p)
			}
		}
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
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
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("record at %d/%d: %v", r.Partition, r.Offset, err)
			}
			records++
			pl := v.Payload
			if pl.Op == "r" {
				snapshot++
				return
			}
			id := fmt.Sprintf("%s %s:%d:%d %s", pl.Op, pl.Source.File, pl.Source.Pos, pl.Source.Row, r.Key)
			if seen[id] {
				dups++
			}
			seen[id] = true
		})
	}
	return records, dups, snapshot
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
func dbzKeyHistory(t *testing.T, brokers []string, topic string, ids []int) string {
	t.Helper()
	want := map[int]bool{}
	for _, id := range ids {
		want[id] = true
	}
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
	var b strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(left) > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
			var k struct {
				Payload struct{ ID int } `json:"payload"`
			}
			_ = json.Unmarshal(r.Key, &k)
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
				_ = json.Unmarshal(r.Value, &v)
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
	}
	return b.String()
}

// orderWorkload writes orders and customers at random: inserts, updates
// of every column, customer renames, deletes and primary key changes.
type orderWorkload struct {
	db   *sql.DB
	o, c string
	rng  *rand.Rand
	live map[int]bool
	n    int
}

func (w *orderWorkload) step(ctx context.Context) error {
	w.n++
	id := 1 + w.rng.IntN(300)
	cust := 1 + w.rng.IntN(12)
	var err error
	switch r := w.rng.IntN(100); {
	case r < 8:
		_, err = w.db.ExecContext(ctx, "INSERT INTO "+w.c+" VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)", cust, fmt.Sprintf("c%d-%d", cust, w.n))
	case !w.live[id]:
		_, err = w.db.ExecContext(ctx, "INSERT INTO "+w.o+" VALUES (?, ?, ?, ?, ?, ?, ?, ?)", id, cust,
			fmt.Sprintf("%d.%02d", w.rng.IntN(100000)-50000, w.rng.IntN(100)),
			fmt.Sprintf("2026-%02d-%02d 12:%02d:%02d.%06d", 1+w.rng.IntN(12), 1+w.rng.IntN(28), w.rng.IntN(60), w.rng.IntN(60), w.rng.IntN(1e6)),
			nullIf(w.rng.IntN(3) == 0, fmt.Sprintf("2025-01-01 00:00:%02d.%03d", w.rng.IntN(60), w.rng.IntN(1000))),
			w.rng.IntN(2), nullIf(w.rng.IntN(4) == 0, []byte{byte(w.rng.IntN(256)), 0, byte(w.n)}), fmt.Sprintf("n%d", w.n))
		w.live[id] = true
	case r < 45:
		_, err = w.db.ExecContext(ctx, "UPDATE "+w.o+" SET amount = amount + ?, flag = 1 - flag, note = ?, placed = placed + INTERVAL 1 SECOND WHERE id = ?",
			w.rng.IntN(1000), fmt.Sprintf("u%d", w.n), id)
	case r < 65:
		_, err = w.db.ExecContext(ctx, "UPDATE "+w.o+" SET customer_id = ? WHERE id = ?", cust, id)
	case r < 80:
		// A primary key change (to a free id).
		to := 301 + w.rng.IntN(300)
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
