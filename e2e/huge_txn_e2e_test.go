package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestHugeTransaction: one 500,000-row INSERT and one 500,000-row UPDATE,
// each a single source transaction. The tailer streams them through one
// Kafka transaction each instead of holding them in memory: its peak RSS
// stays far below the size of the transaction's events, and every row
// arrives exactly once.
func TestHugeTransaction(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	rows := envInt("E2E_HUGE_ROWS", 500_000)
	dbName, err := bed.MySQL.CreateDatabase(ctx, "huge")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.big (id INT PRIMARY KEY, x INT NOT NULL, pad VARCHAR(200) NOT NULL)", dbName)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix := "huge" + strconv.Itoa(rand.IntN(1e6))
	cfgPath := writeTailerConfig(t, bed, dir, dbName, prefix, "big")
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "--role", "tailer", "-c", cfgPath)
	waitForCheckpoint(t, bed, prefix)

	peak := make(chan int64, 1)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() { peak <- testbed.SamplePeakRSS(sampleCtx, d.cmd.Process.Pid) }()

	start := time.Now()
	if err := bed.MySQL.Exec(ctx,
		fmt.Sprintf("INSERT INTO `%s`.big SELECT seq, 0, REPEAT('x', 150) FROM %s", dbName, testbed.Seq(rows)),
		fmt.Sprintf("UPDATE `%s`.big SET x = x + 1", dbName)); err != nil {
		t.Fatal(err)
	}
	t.Logf("source: %d-row INSERT and UPDATE committed in %s", rows, time.Since(start).Round(time.Millisecond))
	events := consumeEvents(t, bed, 2*rows, 10*time.Minute, prefix+"."+dbName+".big")
	elapsed := time.Since(start)
	stopSampling()
	peakRSS := <-peak
	t.Logf("tailer: %d events through Kafka in %s (%.0f events/s end to end, commit to consumed); peak RSS %d MiB",
		len(events), elapsed.Round(time.Millisecond), float64(len(events))/elapsed.Seconds(), peakRSS>>20)

	seen := map[string]int{}
	for _, e := range events {
		seen[e.Op+e.key()]++
	}
	for id := 1; id <= rows; id++ {
		for _, op := range []string{"c", "u"} {
			if n := seen[op+strconv.Itoa(id)]; n != 1 {
				t.Fatalf("row %d op %s arrived %d times", id, op, n)
			}
		}
	}
	// Streaming keeps the tailer near 130 MiB here (most of it the
	// producer's 32 MiB buffer, twice over: the collector's headroom);
	// holding the transaction (as go-mysql's default 10240-event
	// read-ahead did) took 434 MiB. The bound only tells them apart on a
	// transaction this big.
	const bound = 160 << 20
	if rows >= 500_000 && peakRSS > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB: the transaction was buffered, not streamed", peakRSS>>20, bound>>20)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
