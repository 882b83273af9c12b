package cdc

import (
	"fmt"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestTruncate: TRUNCATE of a captured table removes rows without row
// events; the tailer publishes a 't' event to every partition of the
// table's topic, versioned above every change before it.
func TestTruncate(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "trunc")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".t")
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t"))
	startTailer(t, cfg)
	waitForTailer(t, bed, cfg)
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("INSERT INTO `%s`.t VALUES (1), (2), (3)", db),
		fmt.Sprintf("TRUNCATE TABLE `%s`.t", db)); err != nil {
		t.Fatal(err)
	}
	events := cons.next(3+int(cfg.Kafka.Partitions), 30*time.Second)
	var maxRow uint64
	parts := map[int32]bool{}
	for _, e := range events {
		switch e.Op {
		case "c":
			maxRow = max(maxRow, e.Version)
		case "t":
			parts[e.part] = true
			if e.Key != nil && string(e.Key) != "null" || e.recKey != "" {
				t.Errorf("truncate event has a key: %s / %q", e.Key, e.recKey)
			}
		default:
			t.Errorf("unexpected %s event", e.Op)
		}
	}
	for _, e := range events {
		if e.Op == "t" && e.Version <= maxRow {
			t.Errorf("truncate version %d not above the inserts' %d", e.Version, maxRow)
		}
	}
	if len(parts) != int(cfg.Kafka.Partitions) {
		t.Errorf("truncate reached partitions %v, want all %d", parts, cfg.Kafka.Partitions)
	}
}
