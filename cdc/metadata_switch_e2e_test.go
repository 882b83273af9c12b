package cdc

import (
	"fmt"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestSwitchToFullMetadataBehind: the tailer ran under MINIMAL metadata
// (keeping a schema history), stopped, the source wrote rows and a rename
// under MINIMAL, then switched to FULL (as `check` asks) and wrote more.
// The restarted tailer must decode the old events with the schema history
// (the binlog has no names there, although the server is FULL now) and the
// new ones by their names, and a later restart needs no history.
func TestSwitchToFullMetadataBehind(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	ctx := t.Context()
	src, db, cfg, run := privateSourceTable(t, bed, "minimal2full", "m2f", "CREATE TABLE `%s`.t (id INT PRIMARY KEY, a INT, e ENUM('x','y'))",
		testbed.MariaDBOptions{Args: []string{"--binlog-row-metadata=MINIMAL"}})
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t"))
	if err := run()(); err != nil {
		t.Fatal(err)
	}
	// Behind: under MINIMAL a row, a rename, a row; then FULL and more.
	if err := src.Exec(ctx,
		fmt.Sprintf("INSERT INTO `%s`.t VALUES (1, 10, 'x')", db),
		fmt.Sprintf("ALTER TABLE `%s`.t RENAME COLUMN a TO b", db),
		fmt.Sprintf("INSERT INTO `%s`.t VALUES (2, 20, 'y')", db),
		"SET GLOBAL binlog_row_metadata = FULL",
		fmt.Sprintf("INSERT INTO `%s`.t VALUES (3, 30, 'y')", db),
		fmt.Sprintf("UPDATE `%s`.t SET b = 11 WHERE id = 1", db),
	); err != nil {
		t.Fatal(err)
	}
	stop := startTailer(t, *cfg)
	// Per key, in order (keys sit in different partitions).
	want := map[string]string{
		"1": "[map[a:10 e:x id:1] map[b:11 e:x id:1]]",
		"2": "[map[b:20 e:y id:2]]",
		"3": "[map[b:30 e:y id:3]]",
	}
	perKey := map[string][]map[string]any{}
	for _, e := range cons.next(4, 90*time.Second) {
		id := fmt.Sprint(e.After["id"])
		perKey[id] = append(perKey[id], e.After)
	}
	for id, w := range want {
		if got := fmt.Sprint(perKey[id]); got != w {
			t.Errorf("row %s after the switch to FULL: %s, want %s", id, got, w)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if cp := lastCheckpoint(t, bed, *cfg); cp.SchemaHistory {
		t.Errorf("checkpoint %s past the switch to FULL still claims a schema history: the history would be kept forever", cp.Position)
	}
	// Past the switch: a restart decodes by the binlog's names alone.
	if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.t VALUES (4, 40, 'x')", db)); err != nil {
		t.Fatal(err)
	}
	stop = startTailer(t, *cfg)
	if e := cons.next(1, 90*time.Second)[0]; fmt.Sprint(e.After) != "map[b:40 e:x id:4]" {
		t.Errorf("after a restart past the switch: %v", e.After)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
