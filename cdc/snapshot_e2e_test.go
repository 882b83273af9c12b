package cdc

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestSnapshotUnderLiveWrites: the initial snapshot of a table that takes
// updates all along. Writers never block (no locks), every row arrives, and
// the state rebuilt from the topic — snapshot rows and live changes, each
// applied only if its version is newer — equals the source at the end.
func TestSnapshotUnderLiveWrites(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	rows := envIntCDC("E2E_SNAPSHOT_ROWS", 1_000_000)
	db, err := bed.MySQL.CreateDatabase(ctx, "snap")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("CREATE TABLE `%s`.s (id INT PRIMARY KEY, n INT NOT NULL, f FLOAT, ts TIMESTAMP(6) NULL, pad VARCHAR(100))", db),
		fmt.Sprintf("INSERT INTO `%s`.s SELECT seq, 0, seq / 7, FROM_UNIXTIME(1700000000 + seq), REPEAT('p', 80) FROM %s", db, testbed.Seq(rows)),
	); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".s")
	cfg.Source.Snapshot.Mode = "initial"
	cfg.Source.Snapshot.ChunkRows = 5000
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "s"))

	// Live updates at ~1k rows/s for the whole snapshot, timing each write.
	// The writer stops between statements, never inside one: a statement
	// cancelled by its context returns at once while the server may still
	// commit it, and the source read below would then miss a change the
	// topic carries (a CI run failed so, with 10 rows — one UPDATE — apart).
	var stopped atomic.Bool
	stopWriter := func() { stopped.Store(true) }
	var writes atomic.Int64
	var maxLatency atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; !stopped.Load() && ctx.Err() == nil; i++ {
			<-tick.C
			start := time.Now()
			id := 1 + (i*7919)%rows
			q := fmt.Sprintf("UPDATE `%s`.s SET n = n + 1 WHERE id BETWEEN %d AND %d", db, id, id+9)
			if _, err := bed.MySQL.DB().ExecContext(ctx, q); err != nil {
				if ctx.Err() == nil {
					t.Errorf("live update: %v", err)
				}
				return
			}
			writes.Add(10)
			if l := time.Since(start).Nanoseconds(); l > maxLatency.Load() {
				maxLatency.Store(l)
			}
		}
	}()

	start := time.Now()
	startTailer(t, cfg)
	state := map[string]testEvent{} // newest version per key
	reads := 0
	deadline := time.Now().Add(5 * time.Minute)
	// Every row arrives as a snapshot read or, when a live change touched
	// it while its chunk was between watermarks, as that live change.
	for len(state) < rows && time.Now().Before(deadline) {
		for _, e := range cons.next(1, time.Minute) {
			if e.Op == "r" {
				reads++
			}
			apply(state, e)
		}
	}
	snapTime := time.Since(start)
	stopWriter()
	wg.Wait()
	t.Logf("snapshot of %d rows (%d as 'r' events, the rest superseded by live changes) in %s with %d live row updates meanwhile; slowest live write %s",
		rows, reads, snapTime.Round(time.Millisecond), writes.Load(), time.Duration(maxLatency.Load()).Round(time.Microsecond))
	if len(state) < rows {
		t.Fatalf("only %d of %d rows arrived within 5 minutes", len(state), rows)
	}
	if reads > rows {
		t.Errorf("%d snapshot reads for %d rows", reads, rows)
	}
	if time.Duration(maxLatency.Load()) > 2*time.Second {
		t.Errorf("a live write took %s during the snapshot: writers were blocked", time.Duration(maxLatency.Load()))
	}

	// Drain the live changes made up to now, then compare with the source.
	want := map[string]string{}
	r, err := bed.MySQL.DB().QueryContext(ctx, fmt.Sprintf("SELECT id, n FROM `%s`.s", db))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id, n int
		if err := r.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		want[strconv.Itoa(id)] = strconv.Itoa(n)
	}
	r.Close()
	deadline = time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && diffState(state, want) > 0 {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cons.cl.PollRecords(ctx, 10000)
		cancel()
		_ = fetches
		for _, e := range decodeFetches(t, fetches) {
			apply(state, e)
		}
	}
	if n := diffState(state, want); n > 0 {
		t.Errorf("%d rows differ between the topic and the source; the first: %s", n, diffSample(state, want, 5))
	}
	// Every snapshot row has the live stream's key encoding: one record key
	// per row across 'r' and 'u' events is checked by apply.
}

// apply keeps the newest version of each key, as a read table would.
func apply(state map[string]testEvent, e testEvent) {
	key := e.recKey
	if old, ok := state[key]; ok && old.Version >= e.Version {
		return
	}
	state[key] = e
}

func diffState(state map[string]testEvent, want map[string]string) int {
	diff := 0
	for id, n := range want {
		if keyDiff(state, id, n) != "" {
			diff++
		}
	}
	return diff + max(0, len(state)-len(want))
}

// keyDiff says how the topic's state of id differs from the source's n,
// or "" when it does not; with both sides' values, so a failure says
// whether the topic is behind the source (a change lost) or ahead of it
// (a write the source read missed).
func keyDiff(state map[string]testEvent, id, n string) string {
	e, ok := state[`{"id":`+id+`}`]
	switch {
	case !ok:
		return fmt.Sprintf("id %s: missing from the topic, source n=%s", id, n)
	case e.Op == "d":
		return fmt.Sprintf("id %s: deleted in the topic (version %v), source n=%s", id, e.Version, n)
	case fmt.Sprint(e.After["n"]) != n:
		return fmt.Sprintf("id %s: topic n=%v (op %s, version %v), source n=%s", id, e.After["n"], e.Op, e.Version, n)
	}
	return ""
}

// diffSample names up to n keys whose state differs from want (keyDiff).
func diffSample(state map[string]testEvent, want map[string]string, n int) string {
	var out []string
	for id, v := range want {
		if len(out) == n {
			break
		}
		if d := keyDiff(state, id, v); d != "" {
			out = append(out, d)
		}
	}
	return strings.Join(out, "; ")
}

func envIntCDC(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// TestSnapshotOnRequest: `readside snapshot --table --where` asks a running
// tailer, through a request row in the binlog, to snapshot matching rows.
func TestSnapshotOnRequest(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "snapreq")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("CREATE TABLE `%s`.q (a INT NOT NULL, b VARBINARY(8) NOT NULL, v DECIMAL(10,3), PRIMARY KEY (a, b))", db),
		fmt.Sprintf("INSERT INTO `%s`.q SELECT seq %% 10, UNHEX(HEX(seq)), seq / 1000 FROM %s", db, testbed.Seq(1000)),
	); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".q") // snapshot mode never: nothing at start
	cfg.Source.Snapshot.ChunkRows = 64   // many chunks over a composite key
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "q"))
	startTailer(t, cfg)
	waitForTailer(t, bed, cfg)
	if err := RequestSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, db+".q", "a < 5"); err != nil {
		t.Fatal(err)
	}
	events := cons.next(500, time.Minute)
	keys := map[string]bool{}
	for _, e := range events {
		if e.Op != "r" || fmt.Sprint(e.After["a"]) >= "5" {
			t.Fatalf("unexpected event %s %v", e.Op, e.After)
		}
		keys[e.recKey] = true
	}
	if len(keys) != 500 {
		t.Errorf("%d distinct rows, want 500", len(keys))
	}
	// A live update of a snapshotted row has the same record key.
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.q SET v = -1 WHERE a = 1 AND b = UNHEX(HEX(11))", db)); err != nil {
		t.Fatal(err)
	}
	u := cons.next(1, 30*time.Second)[0]
	if u.Op != "u" || !keys[u.recKey] {
		t.Errorf("live update key %s not among the snapshot's keys", u.recKey)
	}
}

// TestSnapshotLiveChangeInWindowWins: with chunks read ahead of the
// stream, a live update committed between a chunk's SELECT and its high
// watermark (the first row of every chunk, updated from the reader's
// hook) must win: its key is dropped from that chunk, whichever chunks
// are in flight when the stream meets the update, so the newest version
// of each updated row is the update, and the topic rebuilds the source.
func TestSnapshotLiveChangeInWindowWins(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	const rows, chunkRows = 20_000, 250 // 80 chunks, several in flight at a time
	db, err := bed.MySQL.CreateDatabase(ctx, "snaprace")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("CREATE TABLE `%s`.r (id INT PRIMARY KEY, n INT NOT NULL)", db),
		fmt.Sprintf("INSERT INTO `%s`.r SELECT seq, 0 FROM %s", db, testbed.Seq(rows)),
	); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	updated := map[string]bool{}
	chunkRead = func(table string, first [][]byte) {
		if table != db+".r" {
			return
		}
		id := string(first[0])
		if _, err := bed.MySQL.DB().ExecContext(ctx, fmt.Sprintf("UPDATE `%s`.r SET n = n + 1 WHERE id = %s", db, id)); err != nil {
			t.Errorf("live update of id %s: %v", id, err)
		}
		mu.Lock()
		updated[id] = true
		mu.Unlock()
	}
	t.Cleanup(func() { chunkRead = nil })
	cfg := tailerConfig(t, bed, db+".r")
	cfg.Source.Snapshot.Mode = "initial"
	cfg.Source.Snapshot.ChunkRows = chunkRows
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "r"))
	startTailer(t, cfg)

	state := map[string]testEvent{}
	reads := map[string]int{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(state) < rows && time.Now().Before(deadline) {
		for _, e := range cons.next(1, time.Minute) {
			if e.Op == "r" {
				reads[fmt.Sprint(e.After["id"])]++
			}
			apply(state, e)
		}
	}
	// The update of the last chunk's first row may come after every key
	// has arrived once.
	mu.Lock()
	n := len(updated)
	mu.Unlock()
	want := map[string]string{}
	for i := 1; i <= rows; i++ {
		want[strconv.Itoa(i)] = "0"
	}
	mu.Lock()
	for id := range updated {
		want[id] = "1"
	}
	mu.Unlock()
	deadline = time.Now().Add(30 * time.Second)
	for diffState(state, want) > 0 && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cons.cl.PollRecords(pctx, 10000)
		cancel()
		for _, e := range decodeFetches(t, fetches) {
			apply(state, e)
		}
	}
	if n < rows/chunkRows {
		t.Fatalf("the hook updated %d chunks' first rows, want %d", n, rows/chunkRows)
	}
	if d := diffState(state, want); d > 0 {
		t.Errorf("%d rows differ between the topic and the source (a snapshot row published over a newer live change?); the first: %s", d, diffSample(state, want, 5))
	}
	for id := range updated {
		if reads[id] > 0 {
			t.Errorf("id %s, updated between its chunk's watermarks, was also published as a snapshot read", id)
		}
	}
}

// TestSnapshotDDLMidSnapshot: a DDL of the table while it is snapshotted.
// The reader keeps the table's columns from when it started, so the
// stream must stop it at the DDL (the chunks in flight read again with
// the new columns: every chunk after the DDL carries an added column),
// and a chunk SELECT naming a column dropped since must be read again with
// the columns as they are (not fail the request: every row arrives).
func TestSnapshotDDLMidSnapshot(t *testing.T) {
	const rows, chunkRows = 5000, 250 // 20 chunks, several in flight at a time
	const atChunk = 4                 // the DDL runs while this chunk (0-based) is read
	for _, tc := range []struct {
		name, why, ddl string
		// ok says whether a row's last event has the table's columns as
		// they are after the DDL.
		ok func(after map[string]any) bool
	}{
		{"added_column", "an added column is in every chunk after the DDL: the stream restarts the reader at it",
			"ADD COLUMN c INT NOT NULL DEFAULT 7",
			func(after map[string]any) bool { return fmt.Sprint(after["c"]) == "7" }},
		{"dropped_column", "a dropped column fails no chunk and is in none after the DDL: a SELECT naming it is read again with the columns as they are",
			"DROP COLUMN b",
			func(after map[string]any) bool { _, has := after["b"]; return !has && after["a"] != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bed := testbed.Get(t)
			ctx := t.Context()
			db, err := bed.MySQL.CreateDatabase(ctx, "snapddl")
			if err != nil {
				t.Fatal(err)
			}
			if err := bed.MySQL.Exec(ctx,
				fmt.Sprintf("CREATE TABLE `%s`.d (id INT PRIMARY KEY, a INT NOT NULL, b INT NOT NULL)", db),
				fmt.Sprintf("INSERT INTO `%s`.d SELECT seq, seq, seq FROM %s", db, testbed.Seq(rows)),
			); err != nil {
				t.Fatal(err)
			}
			ddlDone := make(chan error, 1)
			var fired atomic.Bool
			firstKey := strconv.Itoa(atChunk*chunkRows + 1)
			chunkRead = func(table string, first [][]byte) {
				if table != db+".d" || string(first[0]) != firstKey || !fired.CompareAndSwap(false, true) {
					return
				}
				// The DDL may wait for this chunk's SELECT to end (its
				// metadata lock): the hook returns once it is over or
				// queued, so it comes before the next chunk's SELECT.
				go func() {
					_, err := bed.MySQL.DB().ExecContext(ctx, fmt.Sprintf("ALTER TABLE `%s`.d %s", db, tc.ddl))
					ddlDone <- err
				}()
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
					if len(ddlDone) > 0 {
						return
					}
					var n int
					if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table metadata lock%' AND INFO LIKE 'ALTER TABLE%'").Scan(&n); err == nil && n > 0 {
						return
					}
				}
				t.Errorf("the ALTER neither ran nor waited for its lock within 10 s")
			}
			t.Cleanup(func() { chunkRead = nil })
			cfg := tailerConfig(t, bed, db+".d")
			cfg.Source.Snapshot.Mode = "initial"
			cfg.Source.Snapshot.ChunkRows = chunkRows
			cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "d"))
			startTailer(t, cfg)

			state := map[string]testEvent{}
			for deadline := time.Now().Add(time.Minute); len(state) < rows && time.Now().Before(deadline); {
				for _, e := range cons.next(1, time.Minute) {
					apply(state, e)
				}
			}
			select {
			case err := <-ddlDone:
				if err != nil {
					t.Fatalf("the DDL: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the DDL did not end within 30 s of the snapshot")
			}
			if len(state) != rows {
				t.Fatalf("%d rows in the topic, want %d (a chunk failed the request?); want: %s", len(state), rows, tc.why)
			}
			var stale []int
			for _, e := range state {
				id, _ := strconv.Atoi(fmt.Sprint(e.After["id"]))
				if id > (atChunk+1)*chunkRows && !tc.ok(e.After) {
					stale = append(stale, id)
				}
			}
			if len(stale) > 0 {
				slices.Sort(stale)
				t.Errorf("%d rows after the DDL's chunk were published with the columns from before it (ids %d..%d); want: %s", len(stale), stale[0], stale[len(stale)-1], tc.why)
			}
		})
	}
}

// TestSnapshotReadStaleColumns: the reader keeps a table's columns from
// when it started; a chunk whose SELECT names a column dropped since (a
// DDL the stream has not met yet) must be read with the columns read
// again, not fail: failing would drop the whole request (unknown column
// is a request error) before the stream meets the DDL and restarts it.
func TestSnapshotReadStaleColumns(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "snapstale")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("CREATE TABLE `%s`.s (id INT PRIMARY KEY, a INT NOT NULL, b INT NOT NULL)", db),
		fmt.Sprintf("INSERT INTO `%s`.s SELECT seq, seq, seq FROM %s", db, testbed.Seq(10)),
	); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".s")
	src, err := openSource(ctx, cfg.Source.DSN.Reveal(), "", cfg.Source.TLS)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.ensureSignalTables(ctx, cfg.Source.Snapshot.SignalDB); err != nil {
		t.Fatal(err)
	}
	rd := &chunkReads{src: src, task: SnapshotTask{Table: db + ".s"}, topic: "stale", signalDB: cfg.Source.Snapshot.SignalDB,
		serverID: cfg.Source.ServerID, limit: 100, free: make(chan *rawRows, 1)}
	tbl, err := rd.columns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.s DROP COLUMN b", db)); err != nil {
		t.Fatal(err)
	}
	c := &chunk{id: "0123456789abcdef0123456789abcdef", read: make(chan struct{})}
	raw, err := rd.read(ctx, c, &tbl, nil)
	if err != nil {
		t.Fatalf("a chunk read with columns from before a DROP COLUMN failed: %v", err)
	}
	if got := strings.Join(c.table.colNames, ","); got != "id,a" || tbl != c.table {
		t.Errorf("the chunk was read with columns %s, want id,a (read again; and kept for the next chunks: %v)", got, tbl == c.table)
	}
	if raw.rows() != 10 || !c.complete {
		t.Errorf("%d rows read (complete %v), want all 10", raw.rows(), c.complete)
	}
}
