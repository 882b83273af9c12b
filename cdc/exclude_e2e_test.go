package cdc

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestExcludeColumns: a column listed in source.exclude_columns never
// appears in an event — not in before, after, or the schema — in live
// changes and in snapshot reads alike.
func TestExcludeColumns(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "excl")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("CREATE TABLE `%s`.u (id INT PRIMARY KEY, name VARCHAR(20), email VARCHAR(50))", db),
		fmt.Sprintf("INSERT INTO `%s`.u VALUES (1, 'ann', 'ann@example.com')", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".u")
	cfg.Source.ExcludeColumns = []string{db + ".u.email"}
	cfg.Source.Snapshot.Mode = "initial"
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "u"))
	startTailer(t, cfg)
	waitForTailer(t, bed, cfg)
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("INSERT INTO `%s`.u VALUES (2, 'bob', 'bob@example.com')", db),
		fmt.Sprintf("UPDATE `%s`.u SET email = 'x@example.com', name = 'bobby' WHERE id = 2", db),
		fmt.Sprintf("DELETE FROM `%s`.u WHERE id = 2", db)); err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, e := range cons.next(4, 60*time.Second) {
		ops[e.Op] = true
		for _, img := range []map[string]any{e.Before, e.After} {
			if _, ok := img["email"]; ok {
				t.Errorf("%s event carries the excluded column: %v", e.Op, img)
			}
		}
		if _, ok := e.Schema.Columns["email"]; ok {
			t.Errorf("%s event's schema lists the excluded column", e.Op)
		}
		if bytes.Contains(e.raw, []byte("example.com")) {
			t.Errorf("%s event leaks the excluded value: %s", e.Op, e.raw)
		}
	}
	for _, op := range []string{"r", "c", "u", "d"} {
		if !ops[op] {
			t.Errorf("no %s event", op)
		}
	}
}
