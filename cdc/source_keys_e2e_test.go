package cdc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestSourceKeys: a table without a primary key, keyed by a composite
// UNIQUE NOT NULL index named in source.keys, captured with FULL row
// metadata (the test bed) and without it (NO_LOG: the schema history): its
// snapshot (in chunks ordered by the key), inserts, updates, deletes and
// key-column changes are keyed by those columns, a change of them is a
// delete of the old key and a create of the new with one version, and the
// tailer fails closed — at start and mid-stream — when a key column turns
// nullable or the unique index is dropped.
func TestSourceKeys(t *testing.T) {
	bed := testbed.Get(t)
	t.Run("FULL", func(t *testing.T) { testSourceKeys(t, bed, bed.MySQL) })
	t.Run("NO_LOG", func(t *testing.T) {
		if !bed.MySQL.Private() {
			t.Skip("needs a private MariaDB")
		}
		src, _ := startPrivate(t, "keys-nolog", testbed.MariaDBOptions{Args: []string{"--binlog-row-metadata=NO_LOG"}})
		testSourceKeys(t, bed, src)
	})
}

func testSourceKeys(t *testing.T, bed *testbed.Bed, src *testbed.MySQL) {
	ctx := t.Context()
	db, err := src.CreateDatabase(ctx, "keys")
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if err := src.Exec(ctx, strings.ReplaceAll(q, "$t", "`"+db+"`.audit_log")); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE $t (request_id VARCHAR(36) NOT NULL, seq INT NOT NULL, note VARCHAR(100) NULL, UNIQUE KEY uq_req (request_id, seq))")
	for i := 1; i <= 10; i++ {
		exec(fmt.Sprintf("INSERT INTO $t VALUES ('r%d', 1, 'n%d'), ('r%d', 2, NULL)", i, i, i))
	}
	cfg := tailerConfig(t, bed, db+".audit_log")
	cfg.Source.DSN = config.Secret(src.ReplDSN())
	cfg.Source.Snapshot.Mode = config.SnapshotInitial
	cfg.Source.Snapshot.ChunkRows = 3 // seven chunks over the composite key

	// Without source.keys, run refuses the table at start, naming its
	// unique index and the line to add.
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = tl.Run(runCtx)
	var fatal *FatalError
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), db+".audit_log has no primary key") || !strings.Contains(err.Error(), "uq_req (request_id, seq; all NOT NULL)") ||
		!strings.Contains(err.Error(), "source.keys: {"+db+".audit_log: [request_id, seq]}") {
		t.Fatalf("run without source.keys: %v; want a refusal naming the table, its unique index and the source.keys line", err)
	}

	cfg.Source.Keys = config.TableKeys{db + ".audit_log": {"request_id", "seq"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	done := runTailer(t, cfg)
	waitForTailerOn(t, bed, src, cfg)
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "audit_log"))
	reads := cons.next(20, 60*time.Second)

	exec("INSERT INTO $t VALUES ('r11', 1, 'new')")
	exec("UPDATE $t SET note = 'edited' WHERE request_id = 'r2' AND seq = 1")
	exec("DELETE FROM $t WHERE request_id = 'r3' AND seq = 2")
	exec("UPDATE $t SET seq = 7 WHERE request_id = 'r4' AND seq = 1")                // one key column changes
	exec("UPDATE $t SET request_id = 'r5b', note = 'moved' WHERE request_id = 'r5'") // two rows move, each keeps its seq
	live := cons.next(1+1+1+2+4, 60*time.Second)

	type change struct{ op, key, note string }
	keyOf := func(e testEvent) string {
		img := e.After
		if e.Op == "d" {
			img = e.Before
		}
		return fmt.Sprintf(`{"request_id":%q,"seq":%v}`, img["request_id"], img["seq"])
	}
	partOf := map[string]int32{}
	check := func(e testEvent) change {
		t.Helper()
		k := keyOf(e)
		if e.recKey != k || string(e.Key) != k {
			t.Errorf("%s event of %s: record key %s, envelope key %s; want the source.keys columns %s", e.Op, k, e.recKey, e.Key, k)
		}
		if p, ok := partOf[k]; ok && p != e.part {
			t.Errorf("key %s in partitions %d and %d", k, p, e.part)
		}
		partOf[k] = e.part
		note := fmt.Sprint(e.After["note"])
		if e.Op == "d" {
			note = ""
		}
		return change{e.Op, k, note}
	}
	seen := map[string]bool{}
	for _, e := range reads {
		c := check(e)
		if c.op != "r" || seen[c.key] {
			t.Errorf("snapshot: %+v (seen before: %v); want one read per row", c, seen[c.key])
		}
		seen[c.key] = true
	}
	if len(seen) != 20 {
		t.Errorf("snapshot read %d distinct keys, want 20", len(seen))
	}
	// Partitions interleave: commit order is version order, and a moved
	// row's create takes the version after its delete's.
	slices.SortStableFunc(live, func(a, b testEvent) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(b.Op, a.Op))
	})
	var got []string
	byVersion := map[uint64][]change{}
	for _, e := range live {
		c := check(e)
		got = append(got, fmt.Sprintf("%s %s %s", c.op, c.key, c.note))
		byVersion[e.Version] = append(byVersion[e.Version], c)
	}
	want := []string{
		`c {"request_id":"r11","seq":1} new`,
		`u {"request_id":"r2","seq":1} edited`,
		`d {"request_id":"r3","seq":2} `,
		`d {"request_id":"r4","seq":1} `, `c {"request_id":"r4","seq":7} n4`,
		`d {"request_id":"r5","seq":1} `, `c {"request_id":"r5b","seq":1} moved`,
		`d {"request_id":"r5","seq":2} `, `c {"request_id":"r5b","seq":2} moved`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("live changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range live {
		if e.Op == "c" && e.After["request_id"] != "r11" {
			if own, del := byVersion[e.Version], byVersion[e.Version-1]; len(own) != 1 || len(del) != 1 || del[0].op != "d" {
				t.Errorf("the create of moved key %s (version %d) has %+v at its version and %+v right before; want itself, after exactly the delete of the old key", keyOf(e), e.Version, own, del)
			}
		}
	}

	// A key column made nullable: the next row of the table stops the
	// tailer (the TABLE_MAP's nullability, in every metadata mode).
	exec("ALTER TABLE $t MODIFY seq INT NULL")
	exec("INSERT INTO $t VALUES ('r12', 1, 'after null')")
	expectStop(t, done, "key column seq", "is nullable now", db+".audit_log", "NOT NULL")

	// Started again on a fresh checkpoint, run refuses it at start, with
	// the fix.
	cfg.Kafka.TopicPrefix += "b"
	cfg.Source.Snapshot.Mode = config.SnapshotNever
	tl, err = New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel = context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := tl.Run(runCtx); !errors.As(err, &fatal) || !strings.Contains(err.Error(), "source.keys."+db+".audit_log names column seq, which is nullable") {
		t.Fatalf("run with a nullable key column: %v; want a refusal naming the column", err)
	}

	// NOT NULL again: it runs; then the unique index is dropped and the
	// next row stops the tailer.
	exec("DELETE FROM $t WHERE seq IS NULL")
	exec("ALTER TABLE $t MODIFY seq INT NOT NULL")
	done = runTailer(t, cfg)
	waitForTailerOn(t, bed, src, cfg)
	exec("ALTER TABLE $t DROP INDEX uq_req")
	exec("INSERT INTO $t VALUES ('r13', 1, 'after drop')")
	expectStop(t, done, db+".audit_log is keyed by source.keys (request_id, seq)", "no UNIQUE index covers", "DROP INDEX uq_req", "ADD UNIQUE (`request_id`, `seq`)")
}

// runTailer runs a tailer until the test ends; its error arrives on the
// channel when it stops on its own.
func runTailer(t *testing.T, cfg config.Config) <-chan error {
	t.Helper()
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	t.Cleanup(cancel)
	return done
}

// expectStop waits for the tailer to fail with a FatalError holding every
// fragment.
func expectStop(t *testing.T, done <-chan error, fragments ...string) {
	t.Helper()
	select {
	case err := <-done:
		var fatal *FatalError
		if !errors.As(err, &fatal) {
			t.Fatalf("tailer stopped with %v; want a fatal error", err)
		}
		for _, f := range fragments {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("the tailer's error lacks %q:\n%v", f, err)
			}
		}
		t.Logf("stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the tailer kept running")
	}
}

// TestCheckSourceKeys: `readside check` (CheckSource) refuses a captured
// table with neither a primary key nor source.keys, naming its unique
// indexes and the exact fix; refuses source.keys with a nullable column or
// without a unique index over them; accepts them right.
func TestCheckSourceKeys(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "checkkeys")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE `%s`.audit (a INT NOT NULL, b VARCHAR(10) NOT NULL, c INT NULL, UNIQUE KEY uq_ab (a, b), UNIQUE KEY uq_c (c))",
		"CREATE TABLE `%s`.bare (x INT NOT NULL, y INT)",
	} {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf(q, db)); err != nil {
			t.Fatal(err)
		}
	}
	audit, bare := db+".audit", db+".bare"
	cases := []struct {
		why    string
		keys   config.TableKeys
		errors []string // each fragment in some error finding (what or fix)
		clean  string   // in no error finding
	}{
		{"neither key: the table is refused with its unique indexes and the source.keys line", nil, []string{
			audit + " has no primary key and no source.keys entry", "uq_ab (a, b; all NOT NULL)", "uq_c (c; nullable)", "add source.keys: {" + audit + ": [a, b]}",
			bare + " has no primary key and no source.keys entry", "it has no unique index", "ALTER TABLE `" + db + "`.`bare` ADD PRIMARY KEY"}, ""},
		{"a nullable key column", config.TableKeys{audit: {"c"}, bare: {"x"}}, []string{
			"source.keys." + audit + " names column c, which is nullable", "MODIFY `c` … NOT NULL",
			"source.keys." + bare + ": columns (x) of " + bare + " contain no UNIQUE index", "ADD UNIQUE (`x`)"}, ""},
		{"the unique NOT NULL columns", config.TableKeys{audit: {"a", "b"}}, []string{bare + " has no primary key"}, audit},
	}
	for _, c := range cases {
		cfg := tailerConfig(t, bed, audit, bare)
		cfg.Source.Keys = c.keys
		var errs []string
		for _, f := range CheckSource(ctx, cfg) {
			if f.Severity == "error" {
				errs = append(errs, f.What+" | fix: "+f.Fix)
			}
		}
		all := strings.Join(errs, "\n")
		for _, w := range c.errors {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no error finding holds %q; errors:\n%s", c.why, w, all)
			}
		}
		if c.clean != "" && strings.Contains(all, c.clean) {
			t.Errorf("%s: an error names %s:\n%s", c.why, c.clean, all)
		}
		t.Logf("%s:\n%s", c.why, all)
	}
}

// TestSourceKeysOverridePrimaryKey: on a table that has a primary key,
// source.keys (unique NOT NULL columns) replaces it as the key, as
// Debezium's message.key.columns does: snapshot reads and live changes
// are keyed by them, and a change of them (the primary key unchanged) is
// a delete and a create with one version.
func TestSourceKeysOverridePrimaryKey(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "keyspk")
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if err := bed.MySQL.Exec(ctx, strings.ReplaceAll(q, "$t", "`"+db+"`.t")); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE $t (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL, v INT, UNIQUE KEY uq_code (code))")
	exec("INSERT INTO $t VALUES (1, 'a', 1)")
	cfg := tailerConfig(t, bed, db+".t")
	cfg.Source.Snapshot.Mode = config.SnapshotInitial
	cfg.Source.Keys = config.TableKeys{db + ".t": {"code"}}
	runTailer(t, cfg)
	waitForTailerOn(t, bed, bed.MySQL, cfg)
	exec("INSERT INTO $t VALUES (2, 'b', 2)")
	exec("UPDATE $t SET code = 'c' WHERE id = 2")
	exec("UPDATE $t SET id = 3 WHERE id = 1") // the primary key moves, the key does not
	evs := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t")).next(5, 60*time.Second)
	slices.SortStableFunc(evs, func(a, b testEvent) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(b.Op, a.Op))
	})
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %s", e.Op, e.recKey, e.Key))
	}
	want := []string{`r {"code":"a"} {"code":"a"}`, `c {"code":"b"} {"code":"b"}`, `d {"code":"b"} {"code":"b"}`, `c {"code":"c"} {"code":"c"}`, `u {"code":"a"} {"code":"a"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if evs[3].Version != evs[2].Version+1 {
		t.Errorf("the key move's delete and create have versions %d and %d; want the create's the next", evs[2].Version, evs[3].Version)
	}
}
