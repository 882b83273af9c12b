package cdc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestSchemaHistoryWithoutFullMetadata: on a source whose binlog does not
// name columns (binlog_row_metadata=MINIMAL, then MariaDB's default
// NO_LOG), the DDL sequence of TestDDLMidStream (mid-stream and while the
// tailer is stopped) and the type matrix decode exactly as with FULL
// metadata: names, primary keys, ENUM/SET members and unsigned integers
// come from the schema history.
func TestSchemaHistoryWithoutFullMetadata(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	dir, err := os.MkdirTemp("", "readside-minimal-src-")
	if err != nil {
		t.Fatal(err)
	}
	src, err := testbed.StartMariaDBWith(t.Context(), dir, testbed.MariaDBOptions{Args: []string{"--binlog-row-metadata=MINIMAL"}})
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("closing the MINIMAL source: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"MINIMAL", "NO_LOG"} {
		if err := src.Exec(t.Context(), "SET GLOBAL binlog_row_metadata = "+level); err != nil {
			t.Fatal(err)
		}
		t.Run(level+"/ddl", func(t *testing.T) {
			testDDLMidStream(t, bed, src)
			expectHistory(t, bed)
		})
		t.Run(level+"/types", func(t *testing.T) {
			testTypeMatrix(t, bed, src)
			expectHistory(t, bed)
		})
	}
}

// expectHistory checks the tailer of this test really kept a schema
// history (and did not get names from the binlog after all).
func expectHistory(t *testing.T, bed *testbed.Bed) {
	t.Helper()
	topic := event.SchemaHistoryTopic("t" + strings.ReplaceAll(t.Name(), "/", "_"))
	cons := newConsumer(t, bed, topic)
	if recs := pollOnce(cons, 5*time.Second); len(recs) == 0 {
		// pollOnce decodes change envelopes; history records are not
		// envelopes, so count raw records.
		ctx, cancel := contextWithTimeout(t, 10*time.Second)
		defer cancel()
		if n := cons.cl.PollFetches(ctx).NumRecords(); n == 0 {
			t.Errorf("no records in %s: the tailer did not track the schema", topic)
		}
	}
}

// TestSchemaHistoryFromFullCheckpoint: a checkpoint written while the
// source had FULL metadata has no schema history. Switched to MINIMAL, the
// tailer takes the schema now and resumes when no DDL ran since the
// checkpoint, and stops with the fix when one did (the schema at the
// checkpoint is then unknown).
func TestSchemaHistoryFromFullCheckpoint(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	ctx := t.Context()
	src, db, cfg, run := privateSourceTable(t, bed, "full2minimal", "f2m", "CREATE TABLE `%s`.t (id INT PRIMARY KEY, a INT)", testbed.MariaDBOptions{})
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t"))
	if err := run()(); err != nil {
		t.Fatal(err)
	}
	// No DDL since the checkpoint: resumes, the row decodes by name.
	if err := src.Exec(ctx, "SET GLOBAL binlog_row_metadata = MINIMAL", fmt.Sprintf("INSERT INTO `%s`.t VALUES (1, 10)", db)); err != nil {
		t.Fatal(err)
	}
	stop := run()
	if e := cons.next(1, 60*time.Second)[0]; fmt.Sprint(e.After) != "map[a:10 id:1]" {
		t.Errorf("after switching to MINIMAL: %v", e.After)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// A new checkpoint written with FULL metadata, then a DDL, then MINIMAL.
	cfg.Kafka.TopicPrefix += "-2"
	if err := src.Exec(ctx, "SET GLOBAL binlog_row_metadata = FULL"); err != nil {
		t.Fatal(err)
	}
	if err := run()(); err != nil {
		t.Fatal(err)
	}
	// A row under the old name, then the rename: decoded with today's
	// schema the row would carry the new name.
	cons2 := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t"))
	if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.t VALUES (2, 20)", db), fmt.Sprintf("ALTER TABLE `%s`.t RENAME COLUMN a TO c", db),
		"SET GLOBAL binlog_row_metadata = MINIMAL"); err != nil {
		t.Fatal(err)
	}
	tl, err := New(sectionsOf(*cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err = tl.Run(runCtx)
	var fatal *FatalError
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "no schema history") || !strings.Contains(err.Error(), "RENAME COLUMN a TO c") || !strings.Contains(err.Error(), "binlog_row_metadata=FULL") {
		t.Fatalf("DDL between a FULL-metadata checkpoint and now: %v; want a fatal error naming the DDL and the fix", err)
	}
	if evs := pollOnce(cons2, 3*time.Second); len(evs) > 0 {
		t.Errorf("published %v before refusing", evs[0].After)
	}
	t.Logf("refused: %v", err)
}
