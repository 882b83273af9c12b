package cdc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// startPrivate starts a private MariaDB for one test, in dir.
func startPrivate(t *testing.T, name string, opts testbed.MariaDBOptions) (m *testbed.MySQL, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "readside-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	m, err = testbed.StartMariaDBWith(t.Context(), dir, opts)
	t.Cleanup(func() {
		if m == nil {
			return
		}
		if err := m.Close(); err != nil {
			t.Errorf("closing %s: %v", name, err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// change is one committed row change as the writer saw it.
type change struct {
	op string // c u d
	n  int    // the row's counter after (c, u) or before (d) the change
}

// rowWriter makes single-row changes on a source and remembers them.
type rowWriter struct {
	db, table string
	rng       *rand.Rand
	live      map[int]int // id -> n
	log       map[int][]change
	nextID    int
	total     int
}

func newRowWriter(db, table string, seed uint64) *rowWriter {
	return &rowWriter{db: db, table: table, rng: rand.New(rand.NewPCG(seed, 1)), live: map[int]int{}, log: map[int][]change{}, nextID: 1}
}

func (w *rowWriter) run(t *testing.T, src *testbed.MySQL, ops int) {
	t.Helper()
	ctx := t.Context()
	for range ops {
		var stmt string
		var c change
		var id int
		switch r := w.rng.IntN(10); {
		case len(w.live) < 5 || r < 3:
			id = w.nextID
			w.nextID++
			stmt = fmt.Sprintf("INSERT INTO `%s`.`%s` VALUES (%d, 1, 'v%d')", w.db, w.table, id, w.rng.IntN(1000))
			c = change{"c", 1}
		case r < 9:
			id = w.anyLive()
			stmt = fmt.Sprintf("UPDATE `%s`.`%s` SET n = n + 1, v = 'v%d' WHERE id = %d", w.db, w.table, w.rng.IntN(1000), id)
			c = change{"u", w.live[id] + 1}
		default:
			id = w.anyLive()
			stmt = fmt.Sprintf("DELETE FROM `%s`.`%s` WHERE id = %d", w.db, w.table, id)
			c = change{"d", w.live[id]}
		}
		if err := src.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
		if c.op == "d" {
			delete(w.live, id)
		} else {
			w.live[id] = c.n
		}
		w.log[id] = append(w.log[id], c)
		w.total++
	}
}

func (w *rowWriter) anyLive() int {
	ids := make([]int, 0, len(w.live))
	for id := range w.live {
		ids = append(ids, id)
	}
	// Map order is random but not seeded: pick by the seeded rng from a
	// sorted list so runs repeat.
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
	return ids[w.rng.IntN(len(ids))]
}

// verify reads the topic until it holds as many change events as the
// writer made and checks that every key's events are exactly its changes,
// in order, with strictly increasing versions; then that nothing more
// arrives.
func (w *rowWriter) verify(t *testing.T, cons *consumer) []testEvent {
	t.Helper()
	events := cons.next(w.total, 90*time.Second)
	if extra := pollOnce(cons, 3*time.Second); len(extra) > 0 {
		events = append(events, extra...)
	}
	if len(events) != w.total {
		t.Errorf("%d events for %d committed changes", len(events), w.total)
	}
	got := map[int][]change{}
	lastVersion := map[int]uint64{}
	for _, e := range events {
		img := e.After
		if e.Op == "d" {
			img = e.Before
		}
		id, _ := strconv.Atoi(fmt.Sprint(img["id"]))
		n, _ := strconv.Atoi(fmt.Sprint(img["n"]))
		got[id] = append(got[id], change{e.Op, n})
		if e.Version <= lastVersion[id] {
			t.Errorf("row %d: version %d after %d", id, e.Version, lastVersion[id])
		}
		lastVersion[id] = e.Version
	}
	for id, want := range w.log {
		if fmt.Sprint(got[id]) != fmt.Sprint(want) {
			t.Errorf("row %d: events %v, committed %v", id, got[id], want)
		}
	}
	return events
}

// TestGTIDFailover: a tailer on a MariaDB primary, writes, kill -9 of the
// primary, the same tailer configuration pointed at the replica (GTID
// replication, log_slave_updates): it resumes from its GTID checkpoint with
// nothing lost, nothing doubled and versions increasing per row.
func TestGTIDFailover(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs private MariaDB servers")
	}
	ctx := t.Context()
	primary, _ := startPrivate(t, "primary", testbed.MariaDBOptions{ServerID: 11})
	replica, _ := startPrivate(t, "replica", testbed.MariaDBOptions{ServerID: 12})
	pos, err := primary.CurrentPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The replica starts from the primary's current GTID (both servers
	// created their users locally) and logs what it applies.
	if err := replica.Exec(ctx, "RESET MASTER", "SET GLOBAL gtid_slave_pos = '"+pos.GTID+"'",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
			primary.Port, testbed.AdminUser, testbed.AdminPassword),
		"START SLAVE"); err != nil {
		t.Fatal(err)
	}
	caughtUp := func() {
		t.Helper()
		p, err := primary.CurrentPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var rc int
		if err := replica.DB().QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 60)", p.GTID).Scan(&rc); err != nil || rc != 0 {
			t.Fatalf("replica not at %s within 60s: %d %v", p.GTID, rc, err)
		}
	}
	db, err := primary.CreateDatabase(ctx, "fo")
	if err != nil {
		t.Fatal(err)
	}
	if err := primary.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.f (id INT PRIMARY KEY, n INT NOT NULL, v VARCHAR(20))", db)); err != nil {
		t.Fatal(err)
	}
	caughtUp()

	cfg := tailerConfig(t, bed, db+".f")
	cfg.Source.DSN = config.Secret(primary.ReplDSN())
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "f"))
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tl.Run(runCtx) }()
	waitForTailerOn(t, bed, primary, cfg)

	w := newRowWriter(db, "f", 42)
	w.run(t, primary, 1500)
	caughtUp()
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	// The tailer keeps retrying the dead primary; the operator repoints it.
	time.Sleep(2 * time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tailer on the killed primary: %v (it should retry until stopped)", err)
	}
	cp := lastCheckpoint(t, bed, cfg)
	t.Logf("checkpoint at the failover: %s", cp.Position)

	if err := replica.Exec(ctx, "STOP SLAVE", "RESET SLAVE ALL"); err != nil {
		t.Fatal(err)
	}
	cfg.Source.DSN = config.Secret(replica.ReplDSN())
	startTailer(t, cfg)
	w.run(t, replica, 500)
	events := w.verify(t, cons)
	servers := map[string]int{}
	for _, e := range events {
		servers[fmt.Sprint(e.Source["server_id"])]++
	}
	if servers["11"] == 0 || servers["12"] == 0 {
		t.Errorf("events by origin server_id %v: want changes written on both the primary (11) and the promoted replica (12)", servers)
	}
	t.Logf("%d changes, by origin server_id %v", w.total, servers)
}

// lastCheckpoint reads the tailer's committed checkpoint.
func lastCheckpoint(t *testing.T, bed *testbed.Bed, cfg config.Config) Checkpoint {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(event.CheckpointTopic(cfg.Kafka.TopicPrefix)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var last []byte
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) == cfg.TransactionalID() {
				last = r.Value
			}
		})
	}
	cp, err := decodeCheckpoint(last)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestFilePosCheckpointOtherServer: a checkpoint that is only a binlog
// file and offset (a source without GTIDs) is refused on another server,
// naming both servers and the fix, and accepted on its own server.
func TestFilePosCheckpointOtherServer(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs private MariaDB servers")
	}
	ctx := t.Context()
	a, _ := startPrivate(t, "filepos", testbed.MariaDBOptions{ServerID: 21})
	db, err := a.CreateDatabase(ctx, "fp")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.x (id INT PRIMARY KEY)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".x")
	cfg.Source.DSN = config.Secret(a.ReplDSN())
	stop := startTailer(t, cfg)
	waitForTailerOn(t, bed, a, cfg)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Make it the checkpoint of a source without GTIDs.
	cp := lastCheckpoint(t, bed, cfg)
	if cp.ServerID != 21 {
		t.Fatalf("checkpoint server_id %d, want 21", cp.ServerID)
	}
	cp.Position.GTID = ""
	value, err := encodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: event.CheckpointTopic(cfg.Kafka.TopicPrefix), Key: []byte(cfg.TransactionalID()), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	other := cfg
	other.Source.DSN = config.Secret(bed.MySQL.ReplDSN())
	tl, err := New(sectionsOf(other), other.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err = tl.Run(runCtx)
	var fatal *FatalError
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "server_id 21") || !strings.Contains(err.Error(), "GTID") {
		t.Fatalf("file/offset checkpoint on another server: %v; want a fatal error naming both servers and the fix", err)
	}
	t.Logf("refused: %v", err)

	// On its own server the same checkpoint resumes (file/offset).
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "x"))
	startTailer(t, cfg)
	if err := a.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.x VALUES (7)", db)); err != nil {
		t.Fatal(err)
	}
	e := cons.next(1, 60*time.Second)[0]
	if b, _ := json.Marshal(e.After); string(b) != `{"id":7}` {
		t.Errorf("after resuming by file/offset: %s", b)
	}
}
