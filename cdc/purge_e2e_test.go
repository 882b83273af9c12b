package cdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestRotationAndPurgeWhileStopped: binlog rotations while the tailer is
// down are followed on restart; once the binlog at its checkpoint has been
// purged, it stops with an error naming the recovery instead of silently
// starting from "now".
func TestRotationAndPurgeWhileStopped(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB to purge binlogs")
	}
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "purge")
	if err != nil {
		t.Fatal(err)
	}
	exec := func(stmts ...string) {
		t.Helper()
		if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
			t.Fatal(err)
		}
	}
	exec(fmt.Sprintf("CREATE TABLE `%s`.p (id INT PRIMARY KEY)", db))
	cfg := tailerConfig(t, bed, db+".p")
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "p"))
	stop := startTailer(t, cfg)
	waitForTailer(t, bed, cfg)
	exec(fmt.Sprintf("INSERT INTO `%s`.p VALUES (1)", db))
	cons.next(1, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Rotation while stopped: resume across three new binlog files.
	for i := 2; i <= 4; i++ {
		exec(fmt.Sprintf("INSERT INTO `%s`.p VALUES (%d)", db, i), "FLUSH BINARY LOGS")
	}
	stop = startTailer(t, cfg)
	if got := cons.next(3, 30*time.Second); len(got) != 3 {
		t.Fatalf("after rotations: %d events", len(got))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Purge past the checkpoint while stopped.
	exec(fmt.Sprintf("INSERT INTO `%s`.p VALUES (5)", db))
	if err := bed.MySQL.PurgeAllBinlogs(ctx); err != nil {
		t.Fatal(err)
	}
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err = tl.Run(runCtx)
	var fatal *FatalError
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "re-snapshot") {
		t.Fatalf("after purge the tailer returned %v; want a fatal error naming the re-snapshot recovery", err)
	}
	t.Logf("purged-position error: %v", err)
}
