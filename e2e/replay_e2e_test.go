package e2e

// readside replay against a running daemon: an offset reset from earliest
// is taken by the daemon's projector and re-applied harmlessly, and
// --rebuild swaps in a shadow table while the source takes writes and a
// reader counts rows throughout.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// replayCmd runs `readside replay -c <config>` with args.
func (p *opsPipeline) replayCmd(ctx context.Context, args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.CommandContext(ctx, readsideBinary(p.t), append([]string{"replay", "-c", p.cfgPath}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		p.t.Fatal(err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

func (p *opsPipeline) count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := p.bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
	return n, err
}

// TestReplayFromEarliest: with the daemon running and caught up, `replay
// --from earliest` is taken by the daemon's projector (it rejoins and
// resets every partition to the start), which re-applies the whole
// history: the applied-rows and stale-skipped counters grow while the
// source is idle, the offsets return to the end, and the read table still
// equals the source (version guards and tombstones make the replay
// harmless: the deleted rows stay deleted).
func TestReplayFromEarliest(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "rply", bed.Kafka.Brokers(), "")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	if err := p.write(ctx, rand.New(rand.NewPCG(seedFromEnv(t), 21)), 1500); err != nil {
		t.Fatal(err)
	}
	n := p.converge(time.Minute)
	labels := map[string]string{"projection": "messages_by_sender"}
	fams := p.scrape(ctx)
	applied0 := gauge(t, fams, "readside_projection_applied_rows_total", labels)
	stale0 := gauge(t, fams, "readside_projection_stale_skipped_total", labels)
	out, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--from", "earliest")
	t.Logf("readside replay (exit %d):\n%s", code, out)
	if code != 0 || !strings.Contains(out, "taken by the projector of messages_by_sender") {
		t.Fatalf("replay from earliest was not taken by the running daemon (exit %d):\n%s\nlog:\n%s", code, out, tail(p.logPath))
	}
	if c := strings.Count(p.log(), "replaying: partition reset by readside replay"); c != 4 {
		t.Errorf("%d partitions reset in the daemon's log, want 4 (partitions: 4)", c)
	}
	// The whole history is applied again: at least one write per
	// surviving row (each was inserted), and the upserts of deleted rows
	// meet their tombstones.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var applied, stale float64
	if !testbed.Poll(wctx, 250*time.Millisecond, func() bool {
		fams := p.scrape(ctx)
		applied = gauge(t, fams, "readside_projection_applied_rows_total", labels) - applied0
		stale = gauge(t, fams, "readside_projection_stale_skipped_total", labels) - stale0
		return applied >= float64(n) && stale > 0
	}) {
		t.Fatalf("after the replay: %v more applied writes (want >= %d rows), %v more stale skips (want > 0)", applied, n, stale)
	}
	t.Logf("replay re-applied %v writes, %v skipped as stale (under tombstones or coalesced), %d rows", applied, stale, n)
	if got := p.converge(time.Minute); got != n {
		t.Fatalf("read table has %d rows after the replay, the source %d", got, n)
	}
	p.waitReady(30 * time.Second) // offsets back at the end: consumer lag 0
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// TestReplayRebuildWhileWriting is the acceptance test of --rebuild:
// `readside replay --rebuild` runs while the daemon runs and the source
// takes inserts, updates, key moves and deletes. A reader counts the read
// table's rows every few milliseconds throughout. The check: with N0 the
// rows present (and equal to the source) before the rebuild starts and
// D(t) the deletes the writer has issued (counted before each is sent) by
// the time a count returns, every count succeeds (the table never goes
// missing) and is >= N0 - D(t): only a delete can take a row away (a key
// move deletes and inserts in one sink transaction), so a lower count
// means rows went missing (an empty or partial table was served). After
// the swap the read table equals the source, the old table is kept as
// messages_by_sender__old until --drop-old, and the rebuild's bookkeeping
// is gone.
func TestReplayRebuildWhileWriting(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "rbld", bed.Kafka.Brokers(), "")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	seed := seedFromEnv(t)
	if err := p.write(ctx, rand.New(rand.NewPCG(seed, 31)), 4000); err != nil {
		t.Fatal(err)
	}
	n0 := int64(p.converge(time.Minute))
	readTable := "`" + p.sink + "`.messages_by_sender"

	var deletes atomic.Int64
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	werr := make(chan error, 1)
	go func() { werr <- p.writeCountingDeletes(wctx, rand.New(rand.NewPCG(seed, 32)), &deletes) }()

	rctx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	var reads, violations atomic.Int64
	var firstViolation atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			c, err := p.count(rctx, readTable)
			del := deletes.Load()
			if rctx.Err() != nil {
				return
			}
			reads.Add(1)
			if err != nil || c < n0-del {
				if violations.Add(1) == 1 {
					firstViolation.Store(fmt.Sprintf("count %d (err %v) with N0 %d and %d deletes issued", c, err, n0, del))
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	time.Sleep(time.Second) // the writer is going
	rbctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	start := time.Now()
	out, code := p.replayCmd(rbctx, "--projection", "messages_by_sender", "--rebuild", "--progress-every", "1s")
	took := time.Since(start)
	t.Logf("readside replay --rebuild (exit %d, %s):\n%s", code, took.Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("rebuild failed (exit %d); daemon log:\n%s", code, tail(p.logPath))
	}
	if !strings.Contains(out, "filling messages_by_sender__rebuild") || !strings.Contains(out, "catching up after the swap") {
		t.Errorf("no progress lines for both phases:\n%s", out)
	}
	time.Sleep(time.Second) // reads and writes go on after the swap
	stopWriter()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	stopReader()
	wg.Wait()
	t.Logf("reader: %d counts during the rebuild, N0 %d, %d deletes issued; violations %d", reads.Load(), n0, deletes.Load(), violations.Load())
	if v := violations.Load(); v > 0 {
		t.Errorf("%d counts broke count >= N0 - deletes issued; first: %v", v, firstViolation.Load())
	}
	if reads.Load() < 20 {
		t.Errorf("only %d counts during the rebuild: the check saw too little", reads.Load())
	}
	got := p.converge(time.Minute)
	t.Logf("after the swap the read table equals the source: %d rows", got)
	db := bed.MySQL.DB()
	tables := testbed.RowsText(t, db, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+p.sink+"' AND TABLE_NAME LIKE 'messages_by_sender%' ORDER BY 1")
	if tables != "messages_by_sender|\nmessages_by_sender__old|\n" {
		t.Errorf("tables after the rebuild:\n%s", tables)
	}
	if left := testbed.RowsText(t, db, "SELECT CONCAT(projection, ' ', phase) FROM `"+p.sink+"`._readside_rebuilds UNION ALL SELECT DISTINCT projection FROM `"+p.sink+"`._readside_offsets WHERE projection LIKE '%__rebuild'"); left != "" {
		t.Errorf("rebuild bookkeeping left behind:\n%s", left)
	}
	out, code = p.replayCmd(ctx, "--projection", "messages_by_sender", "--drop-old")
	if code != 0 || !strings.Contains(out, "dropped messages_by_sender__old") {
		t.Errorf("--drop-old (exit %d):\n%s", code, out)
	}
	if tables := testbed.RowsText(t, db, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+p.sink+"' AND TABLE_NAME LIKE 'messages_by_sender%'"); tables != "messages_by_sender|\n" {
		t.Errorf("tables after --drop-old:\n%s", tables)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// writeCountingDeletes writes (insert, edit, key move, delete) on the
// existing rows and new ids until ctx ends, counting each delete before
// it is sent.
func (p *opsPipeline) writeCountingDeletes(ctx context.Context, rng *rand.Rand, deletes *atomic.Int64) error {
	table := "`" + p.src + "`.messages"
	db := p.bed.MySQL.DB()
	ids, err := p.messageIDs(ctx)
	if err != nil {
		return err
	}
	live := map[int]bool{}
	for _, id := range ids {
		live[id] = true
	}
	return writeUntilDone(ctx, func(i int) (err error) {
		id := 1 + rng.IntN(3000)
		switch r := rng.IntN(100); {
		case !live[id]:
			_, err = db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?, ?, ?)", id, rng.IntN(50),
				fmt.Sprintf("2026-01-02 00:%02d:%02d.%06d", rng.IntN(60), rng.IntN(60), rng.IntN(1e6)), fmt.Sprintf("w%d", i))
			live[id] = true
		case r < 40:
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET body = ? WHERE id = ?", fmt.Sprintf("we%d", i), id)
		case r < 75:
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET sender_id = ? WHERE id = ?", rng.IntN(50), id)
		default:
			deletes.Add(1)
			_, err = db.ExecContext(ctx, "DELETE FROM "+table+" WHERE id = ?", id)
			delete(live, id)
		}
		return err
	})
}
