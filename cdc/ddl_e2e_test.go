package cdc

import (
	"cmp"
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

// TestDDLMidStream: ADD, DROP, RENAME and reorder columns, and RENAME
// TABLE, with writes between every step — some while the tailer runs, some
// while it is stopped. Every event must carry each value under the column
// name it had when the row was written: the binlog's own metadata names the
// columns, never the current schema.
func TestDDLMidStream(t *testing.T) {
	bed := testbed.Get(t)
	testDDLMidStream(t, bed, bed.MySQL)
}

// testDDLMidStream runs the DDL sequence against src (the test bed's
// source, or one configured differently).
func testDDLMidStream(t *testing.T, bed *testbed.Bed, src *testbed.MySQL) {
	ctx := t.Context()
	db, err := src.CreateDatabase(ctx, "ddl")
	if err != nil {
		t.Fatal(err)
	}
	q := func(format string, args ...any) string { return fmt.Sprintf(format, append([]any{db}, args...)...) }
	if err := src.Exec(ctx, q("CREATE TABLE `%s`.d (id INT PRIMARY KEY, a VARCHAR(20), b INT)")); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".d")
	cfg.Source.DSN = config.Secret(src.ReplDSN())
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "d"), event.TopicFor(cfg.Kafka.TopicPrefix, db, "d2"))
	stop := startTailer(t, cfg)
	waitForTailerOn(t, bed, src, cfg)

	type want struct {
		table string
		after map[string]string
	}
	var wants []want
	step := func(stmts []string, table string, after map[string]string) {
		t.Helper()
		if err := src.Exec(ctx, stmts...); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			wants = append(wants, want{table, after})
		}
	}
	step([]string{q("INSERT INTO `%s`.d VALUES (1, 'one', 10)")}, "d", map[string]string{"id": "1", "a": "one", "b": "10"})
	step([]string{q("ALTER TABLE `%s`.d ADD COLUMN c VARCHAR(10) DEFAULT 'dflt' AFTER id")}, "", nil)
	step([]string{q("INSERT INTO `%s`.d (id, a, b) VALUES (2, 'two', 20)")}, "d", map[string]string{"id": "2", "c": "dflt", "a": "two", "b": "20"})
	step([]string{q("ALTER TABLE `%s`.d DROP COLUMN a")}, "", nil)
	step([]string{q("INSERT INTO `%s`.d VALUES (3, 'three', 30)")}, "d", map[string]string{"id": "3", "c": "three", "b": "30"})

	// While the tailer is down: three DDLs interleaved with writes. On
	// restart the old events must still decode with their old shape.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	step([]string{q("ALTER TABLE `%s`.d RENAME COLUMN b TO bee")}, "", nil)
	step([]string{q("INSERT INTO `%s`.d VALUES (4, 'four', 40)")}, "d", map[string]string{"id": "4", "c": "four", "bee": "40"})
	step([]string{q("ALTER TABLE `%s`.d MODIFY COLUMN bee BIGINT FIRST")}, "", nil)
	step([]string{q("INSERT INTO `%s`.d VALUES (50, 5, 'five')")}, "d", map[string]string{"bee": "50", "id": "5", "c": "five"})
	step([]string{q("ALTER TABLE `%s`.d MODIFY COLUMN c VARCHAR(100)")}, "", nil)
	step([]string{q("UPDATE `%s`.d SET c = 'widened to a longer value' WHERE id = 5")}, "d", map[string]string{"bee": "50", "id": "5", "c": "widened to a longer value"})
	// Renaming the captured table to a name readside does not capture would
	// silently end its stream: the tailer stops and says what to do, and
	// doing it continues the stream.
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	step([]string{q("INSERT INTO `%s`.d VALUES (70, 7, 'seven')")}, "d", map[string]string{"bee": "70", "id": "7", "c": "seven"})
	before := cons.next(len(wants), 60*time.Second) // the tailer is streaming
	step([]string{q("RENAME TABLE `%s`.d TO `%[1]s`.d2")}, "", nil)
	select {
	case err := <-done:
		var fatal *FatalError
		if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "add "+db+".d2 to source.tables") {
			t.Fatalf("tailer stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tailer kept running after its table was renamed away")
	}
	cfg.Source.Tables = append(cfg.Source.Tables, db+".d2")
	startTailer(t, cfg)
	step([]string{q("INSERT INTO `%s`.d2 VALUES (60, 6, 'six')")}, "d2", map[string]string{"bee": "60", "id": "6", "c": "six"})

	events := append(before, cons.next(len(wants)-len(before), 60*time.Second)...)
	slices.SortFunc(events, func(a, b testEvent) int { return cmp.Compare(a.Version, b.Version) })
	for i, w := range wants {
		e := events[i]
		got := map[string]string{}
		for k, v := range e.After {
			got[k] = fmt.Sprint(v)
		}
		if e.Table != w.table || fmt.Sprint(got) != fmt.Sprint(w.after) {
			t.Errorf("event %d: %s %v, want %s %v", i, e.Table, got, w.table, w.after)
		}
	}
	// The schema version follows the shape.
	if events[0].Schema.Version == events[1].Schema.Version {
		t.Error("schema version unchanged after ADD COLUMN")
	}
}
