package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// TestSnapshotResumesAfterKill9: the initial snapshot of a table of many
// chunks (source.snapshot.chunk_rows small) under live writes; `readside
// run --role tailer` is SIGKILLed once some but not all chunks are on the
// topic and started again. The snapshot resumes from its checkpoint and
// completes: no row arrives as a snapshot read twice (the chunk in flight
// at the kill was never committed, and the checkpoint that moves past a
// chunk commits in the chunk's own Kafka transaction), so in particular
// every repeated key lies in one chunk, as docs/operations.md promises;
// and the state rebuilt from the topic (newest version per key wins)
// equals the source table.
func TestSnapshotResumesAfterKill9(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	rows := envInt("E2E_SNAPSHOT_KILL_ROWS", 30_000)
	const chunkRows = 100 // rows/chunkRows chunks
	dbName, err := bed.MySQL.CreateDatabase(ctx, "snapk")
	if err != nil {
		t.Fatal(err)
	}
	table := "`" + dbName + "`.s"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY, n INT NOT NULL, pad VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// Plain multi-row inserts: no server-specific row generators.
	for from := 1; from <= rows; from += 1000 {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " VALUES ")
		for id := from; id < from+1000 && id <= rows; id++ {
			if id > from {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%d, 0, 'pad-%d')", id, id)
		}
		if err := bed.MySQL.Exec(ctx, b.String()); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	prefix := "snk" + strconv.Itoa(rand.IntN(1e6))
	cfgPath := filepath.Join(dir, "readside.yaml")
	cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %d
  tables: [%s.s]
  snapshot:
    mode: initial
    chunk_rows: %d
kafka:
  brokers: [%s]
  topic_prefix: %s
  partitions: 4
`, testbed.NewServerID(), dbName, chunkRows, strings.Join(bed.Kafka.Brokers(), ", "), prefix)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	logPath := filepath.Join(dir, "readside.log")
	topic := newSnapshotTopic(t, bed, prefix+"."+dbName+".s")

	// Live writes all along: updates and deletes of snapshotted rows,
	// inserts past them. The writer stops between statements, never
	// inside one, so the source read at the end has every change it made.
	seed := seedFromEnv(t)
	var stopped atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 21))
		next := rows
		for !stopped.Load() && ctx.Err() == nil {
			var q string
			switch r := rng.IntN(100); {
			case r < 70:
				q = fmt.Sprintf("UPDATE %s SET n = n + 1 WHERE id = %d", table, 1+rng.IntN(rows))
			case r < 85:
				next++
				q = fmt.Sprintf("INSERT INTO %s VALUES (%d, 1, 'live')", table, next)
			default:
				q = fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, 1+rng.IntN(rows))
			}
			if _, err := bed.MySQL.DB().ExecContext(ctx, q); err != nil {
				if ctx.Err() == nil {
					t.Errorf("live write %s: %v", q, err)
				}
				return
			}
			writes.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	stopWriter := func() { stopped.Store(true); wg.Wait() }
	defer stopWriter()

	d := startDaemon(t, logPath, "run", "--role", "tailer", "-c", cfgPath)
	// Kill once a few chunks are committed, well before the last.
	killAt := 5 * chunkRows
	if !topic.pollUntil(3*time.Minute, func() bool { return len(topic.reads) >= killAt }) {
		t.Fatalf("fewer than %d snapshot rows on the topic after 3 minutes (%d); log:\n%s", killAt, len(topic.reads), tail(logPath))
	}
	d.kill9()
	// What the killed process committed, all of it: its last commit may
	// still be on its way to the consumer.
	topic.pollQuiet(3 * time.Second)
	before := len(topic.reads)
	t.Logf("SIGKILL with %d of %d rows read by the snapshot (%d chunks of %d) on the topic", before, rows, before/chunkRows, chunkRows)
	if before >= rows-chunkRows {
		t.Fatalf("the snapshot was (nearly) done before the kill (%d of %d rows): raise E2E_SNAPSHOT_KILL_ROWS", before, rows)
	}
	topic.restarted = true
	d.start()

	// The restart resumes the snapshot and finishes it.
	lastStart := func() string { s := strings.Split(readFile(logPath), "=== start"); return s[len(s)-1] }
	if !topic.pollUntil(4*time.Minute, func() bool { return strings.Contains(lastStart(), "snapshot done") }) {
		t.Fatalf("the restarted tailer did not finish the snapshot within 4 minutes; log:\n%s", tail(logPath))
	}
	if s := lastStart(); !strings.Contains(s, "resuming from checkpoint") {
		t.Errorf("the restart did not resume from a checkpoint; its log:\n%s", s)
	}
	stopWriter()
	t.Logf("%d live writes during the snapshot", writes.Load())

	// Repeated snapshot reads: none, with the chunk's rows and the
	// checkpoint past it in one Kafka transaction; the docs' bound is one
	// chunk, so say also whether that held.
	var twice []int
	for id, n := range topic.reads {
		if n > 1 {
			twice = append(twice, id)
		}
	}
	slices.Sort(twice)
	redone := 0
	for _, id := range twice {
		redone += topic.reads[id] - 1
	}
	t.Logf("after the restart %d rows read by the snapshot, %d of them again", topic.readsAfter, redone)
	if len(twice) > 0 {
		lo, hi := twice[0], twice[len(twice)-1]
		span := 0 // snapshot-read keys between the first and last repeated one
		for id := range topic.reads {
			if id >= lo && id <= hi {
				span++
			}
		}
		if span > chunkRows {
			t.Errorf("rows read twice span %d keys (ids %d..%d), more than one chunk of %d: the snapshot restarted further back than the chunk in flight", span, lo, hi, chunkRows)
		}
		t.Errorf("%d rows arrived as snapshot reads more than once (ids %v…): a committed chunk was published again", len(twice), twice[:min(10, len(twice))])
	}

	// The topic's state equals the source's.
	want := map[int]string{}
	src, err := bed.MySQL.DB().QueryContext(ctx, "SELECT id, n FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	for src.Next() {
		var id int
		var n string
		if err := src.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		want[id] = n
	}
	src.Close()
	var diff string
	if !topic.pollUntil(2*time.Minute, func() bool { diff = topic.diff(want); return diff == "" }) {
		t.Errorf("the state rebuilt from the topic differs from the source: %s", diff)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside exited %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// snapshotTopic reads a table topic read-committed from the start and
// keeps, per id, how many snapshot reads ('r') arrived and the newest
// version's row.
type snapshotTopic struct {
	t          *testing.T
	cl         *kgo.Client
	reads      map[int]int // id -> 'r' events
	readsAfter int         // 'r' events consumed after restarted was set
	restarted  bool
	state      map[int]rowVersion
}

type rowVersion struct {
	version uint64
	n       string // "" once deleted
}

func newSnapshotTopic(t *testing.T, bed *testbed.Bed, name string) *snapshotTopic {
	cl := newClient(t, bed, kgo.ConsumeTopics(name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxBytes(64<<20))
	return &snapshotTopic{t: t, cl: cl, reads: map[int]int{}, state: map[int]rowVersion{}}
}

// poll consumes what arrives within d.
func (s *snapshotTopic) poll(d time.Duration) int {
	ctx, cancel := context.WithTimeout(s.t.Context(), d)
	defer cancel()
	n := 0
	s.cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
		if r.Value == nil {
			return // a delete's tombstone
		}
		var e envelope
		dec := json.NewDecoder(bytes.NewReader(r.Value))
		dec.UseNumber()
		if err := dec.Decode(&e); err != nil {
			s.t.Fatalf("bad envelope at %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		n++
		id, err := strconv.Atoi(e.key())
		if err != nil {
			s.t.Fatalf("key %s: %v", r.Key, err)
		}
		if e.Op == "r" {
			s.reads[id]++
			if s.restarted {
				s.readsAfter++
			}
		}
		if e.Version <= s.state[id].version {
			return // older than what this key has: newest version wins
		}
		v := rowVersion{version: e.Version}
		if e.Op != "d" {
			v.n = string(e.After["n"])
		}
		s.state[id] = v
	})
	return n
}

// pollUntil consumes until cond holds or timeout passes.
func (s *snapshotTopic) pollUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		s.poll(200 * time.Millisecond)
	}
	return true
}

// pollQuiet consumes until nothing has arrived for quiet.
func (s *snapshotTopic) pollQuiet(quiet time.Duration) {
	for s.poll(quiet) > 0 {
	}
}

// diff describes up to five ids whose state differs from want (id -> n).
func (s *snapshotTopic) diff(want map[int]string) string {
	var out []string
	bad := 0
	note := func(id int, w, g string) {
		if bad++; bad <= 5 {
			out = append(out, fmt.Sprintf("id %d: source %q, topic %q", id, w, g))
		}
	}
	for id, n := range want {
		if g := s.state[id].n; g != n {
			note(id, n, g)
		}
	}
	for id, v := range s.state {
		if _, ok := want[id]; !ok && v.n != "" {
			note(id, "<no row>", v.n)
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("%d ids differ: %s", bad, strings.Join(out, "; "))
}
