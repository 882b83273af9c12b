package e2e

// readside replay --backfill: a column added to a projection's columns is
// filled into the rows already in the read table from the topics, while
// the daemon applies live writes, and survives a SIGKILL of the backfill.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/internal/testsync"
)

// TestBackfillAddedColumn: messages_by_sender runs without body; 40,000
// rows are inserted, a third get a new body, some NULL, a fifth move to
// another read key, a seventh are deleted, and 1,500 more random writes
// run. Then body is added to columns, `plan --apply` adds the column
// (every read row NULL in it: checked), the daemon restarts with the new
// config, and while a writer keeps updating bodies, moving keys, deleting
// and inserting, `replay --backfill body` runs, is SIGKILLed once it has
// stored offsets, and runs again: it says it resumes, exits 0, and leaves
// no bookkeeping. The read table then equals the source, body included
// (deleted rows stay deleted), and no sampled row's version ever went
// back.
func TestBackfillAddedColumn(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "bfill", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	db := bed.MySQL.DB()
	withBody, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	noBody := strings.Replace(string(withBody), ", body: body}", "}", 1)
	if noBody == string(withBody) {
		t.Fatal("the ops pipeline's columns no longer end with body: body")
	}
	if err := os.WriteFile(p.cfgPath, []byte(noBody), 0o600); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.waitReady(90 * time.Second)
	src := "`" + p.src + "`.messages"
	readTable := "`" + p.sink + "`.messages_by_sender"
	for _, st := range []string{
		"INSERT INTO " + src + " SELECT 10000 + seq, seq % 50, TIMESTAMP('2026-01-01') + INTERVAL seq SECOND, CONCAT('b', seq) FROM " + testbed.Seq(40000),
		"UPDATE " + src + " SET body = CONCAT('u', id) WHERE id % 3 = 0",
		"UPDATE " + src + " SET body = NULL WHERE id % 11 = 0",
		"UPDATE " + src + " SET sender_id = (sender_id + 7) % 50 WHERE id % 5 = 0",
		"DELETE FROM " + src + " WHERE id % 7 = 0",
	} {
		if _, err := db.ExecContext(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	seed := seedFromEnv(t)
	if err := p.write(ctx, rand.New(rand.NewPCG(seed, 51)), 1500); err != nil {
		t.Fatal(err)
	}
	keys := func(table string) string {
		return testbed.RowsText(t, db, "SELECT sender_id, created_at, id FROM "+table+" ORDER BY sender_id, created_at, id")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !testbed.Poll(cctx, 500*time.Millisecond, func() bool { return keys(src) == keys(readTable) }) {
		t.Fatalf("the read table's keys never equalled the source's; log:\n%s", tail(p.logPath))
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Fatalf("exit %d after SIGTERM; log:\n%s", code, tail(p.logPath))
	}

	if err := os.WriteFile(p.cfgPath, withBody, 0o600); err != nil {
		t.Fatal(err)
	}
	plan := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", p.cfgPath)
	out, err := plan.CombinedOutput()
	t.Logf("readside plan --apply:\n%s", out)
	if err != nil || !strings.Contains(string(out), "ADD COLUMN `body`") || !strings.Contains(string(out), "readside replay --projection messages_by_sender --backfill body") {
		t.Fatalf("plan --apply (%v) did not add body and name the backfill", err)
	}
	if n := testbed.RowsText(t, db, "SELECT COUNT(*), COUNT(body) FROM "+readTable); !strings.HasSuffix(n, "|0|\n") || strings.HasPrefix(n, "0|") {
		t.Fatalf("after plan --apply, rows and rows with a body: %s; want rows, every body NULL", n)
	}
	bad, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--backfill", "sender_id")
	if code != 1 || !strings.Contains(bad, "key column") || !strings.Contains(bad, "--rebuild") {
		t.Errorf("--backfill of a key column: exit %d, want 1 naming the rebuild:\n%s", code, bad)
	}

	d = p.start()
	p.waitReady(90 * time.Second)
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	werr := make(chan error, 1)
	go func() { werr <- backfillWriter(wctx, p, rand.New(rand.NewPCG(seed, 52))) }()
	// Versions sampled throughout: a backfill never touches _rs_version.
	var mu sync.Mutex
	var wentBack []string
	sctx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	var sampled sync.WaitGroup
	sampled.Go(func() {
		seen := map[string]uint64{}
		for sctx.Err() == nil {
			rows, err := db.QueryContext(sctx, "SELECT id, _rs_version FROM "+readTable+" WHERE id % 97 = 0")
			if err != nil {
				continue
			}
			for rows.Next() {
				var id string
				var v uint64
				if rows.Scan(&id, &v) == nil {
					if v < seen[id] {
						mu.Lock()
						wentBack = append(wentBack, fmt.Sprintf("id %s: %d after %d", id, v, seen[id]))
						mu.Unlock()
					}
					seen[id] = max(seen[id], v)
				}
			}
			rows.Close()
			time.Sleep(200 * time.Millisecond)
		}
	})
	time.Sleep(time.Second) // the writer is going

	// First run: SIGKILLed as soon as it has stored offsets.
	first := exec.Command(readsideBinary(t), "replay", "-c", p.cfgPath, "--projection", "messages_by_sender", "--backfill", "body", "--progress-every", "1s")
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	first.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = first.Wait(); close(exited) }()
	stored := func() string {
		return testbed.RowsText(t, db, "SELECT COUNT(*) FROM `"+p.sink+"`._readside_offsets WHERE projection = 'messages_by_sender__backfill'")
	}
	kctx, cancelKill := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelKill()
	killed := testbed.Poll(kctx, 20*time.Millisecond, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		return stored() != "0|\n"
	})
	_ = first.Process.Signal(syscall.SIGKILL)
	<-exited
	t.Logf("first backfill, SIGKILLed:\n%s", firstOut.String())
	if !killed || first.ProcessState.Success() {
		t.Fatalf("the first backfill ended before it was killed (or stored no offsets in 3 minutes): the test needs a longer backfill")
	}
	if phase := testbed.RowsText(t, db, "SELECT phase FROM `"+p.sink+"`._readside_rebuilds WHERE projection = 'messages_by_sender__backfill'"); !strings.HasPrefix(phase, "backfill ") {
		t.Fatalf("after the kill the backfill's bookkeeping is %q, want its phase row", phase)
	}

	// Second run. Once it has taken its end offsets, a third of the rows
	// get a new body in one statement: the backfill then reads older
	// records of those rows than the ones the live projector applies
	// (its resumed consumer waits ~10 s for the killed one's group
	// session to expire first), which only the version condition keeps
	// from being written over the newer bodies.
	bctx, cancelBackfill := context.WithTimeout(ctx, 4*time.Minute)
	defer cancelBackfill()
	start := time.Now()
	second := exec.CommandContext(bctx, readsideBinary(t), "replay", "-c", p.cfgPath, "--projection", "messages_by_sender", "--backfill", "body", "--progress-every", "1s")
	var secondOut testsync.Buffer
	second.Stdout, second.Stderr = &secondOut, &secondOut
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = second.Wait(); close(done) }()
	if !testbed.Poll(bctx, 20*time.Millisecond, func() bool { return strings.Contains(secondOut.String(), "backfill: filling columns from the topics") }) {
		t.Fatalf("the second backfill never started filling:\n%s", secondOut.String())
	}
	res, err := db.ExecContext(ctx, "UPDATE "+src+" SET body = CONCAT('late', id) WHERE id % 3 = 1")
	if err != nil {
		t.Fatal(err)
	}
	late, _ := res.RowsAffected()
	<-done
	again, code := secondOut.String(), second.ProcessState.ExitCode()
	t.Logf("second backfill (exit %d, %s; %d rows updated in one statement after it took its end offsets):\n%s", code, time.Since(start).Round(time.Millisecond), late, again)
	if code != 0 || !strings.Contains(again, "backfilled body of messages_by_sender") {
		t.Fatalf("the backfill after the kill failed (exit %d); daemon log:\n%s", code, tail(p.logPath))
	}
	if !strings.Contains(again, "resuming a backfill from its stored offsets") {
		t.Errorf("the second run did not resume from the stored offsets")
	}
	time.Sleep(time.Second) // live writes go on after the backfill
	stopWriter()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	n := p.converge(2 * time.Minute)
	stopSampler()
	sampled.Wait()
	t.Logf("after the backfill the read table equals the source, body included: %d rows", n)
	if len(wentBack) > 0 {
		t.Errorf("%d sampled versions went back, first: %s", len(wentBack), wentBack[0])
	}
	if nulls := testbed.RowsText(t, db, "SELECT COUNT(*) FROM "+readTable+" WHERE body IS NULL"); nulls == "0|\n" {
		t.Errorf("no NULL body left: the source's NULL bodies (id %% 11 = 0) were not kept")
	}
	if left := testbed.RowsText(t, db, "SELECT projection FROM `"+p.sink+"`._readside_rebuilds UNION ALL SELECT DISTINCT projection FROM `"+p.sink+"`._readside_offsets WHERE projection LIKE '%\\_\\_backfill'"); left != "" {
		t.Errorf("backfill bookkeeping left behind:\n%s", left)
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// backfillWriter updates bodies, moves keys, deletes and inserts over the
// whole table until ctx ends, each body unique, so an older value written
// over a newer one shows in the comparison with the source.
func backfillWriter(ctx context.Context, p *opsPipeline, rng *rand.Rand) error {
	table := "`" + p.src + "`.messages"
	db := p.bed.MySQL.DB()
	ids, err := p.messageIDs(ctx)
	if err != nil {
		return err
	}
	next := 100000
	return writeUntilDone(ctx, func(i int) (err error) {
		k := rng.IntN(len(ids))
		switch r := rng.IntN(100); {
		case r < 55:
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET body = ? WHERE id = ?", fmt.Sprintf("live%d", i), ids[k])
		case r < 75:
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET sender_id = ?, body = ? WHERE id = ?", rng.IntN(50), fmt.Sprintf("moved%d", i), ids[k])
		case r < 87:
			_, err = db.ExecContext(ctx, "DELETE FROM "+table+" WHERE id = ?", ids[k])
			ids[k] = ids[len(ids)-1]
			ids = ids[:len(ids)-1]
		default:
			next++
			_, err = db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?, '2026-01-03 00:00:00', ?)", next, rng.IntN(50), fmt.Sprintf("new%d", i))
			ids = append(ids, next)
		}
		return err
	})
}

// TestBackfillProgressLines: `replay --backfill` with stderr not a
// terminal prints a timestamped progress line each --progress-every while
// the offsets move (how many of the topic's offsets it has applied), no
// carriage return, and a final line with the totals: every offset of the
// end it took, 100%.
func TestBackfillProgressLines(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "bfprog", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	db := bed.MySQL.DB()
	withBody, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfgPath, []byte(strings.Replace(string(withBody), ", body: body}", "}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.waitReady(90 * time.Second)
	src := "`" + p.src + "`.messages"
	// Enough offsets that the backfill outlasts the first second, before
	// which no line has a rate (internal/progress): 40,000 took 1.05 s on
	// a quiet box, all of its lines rate-less.
	if _, err := db.ExecContext(ctx, "INSERT INTO "+src+" SELECT seq, seq % 50, TIMESTAMP('2026-01-01') + INTERVAL seq SECOND, CONCAT('b', seq) FROM "+testbed.Seq(160000)); err != nil {
		t.Fatal(err)
	}
	count := func(table string) string { return testbed.RowsText(t, db, "SELECT COUNT(*) FROM "+table) }
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !testbed.Poll(cctx, 500*time.Millisecond, func() bool { return count("`"+p.sink+"`.messages_by_sender") == count(src) }) {
		t.Fatalf("the read table never got the source's rows; log:\n%s", tail(p.logPath))
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	if err := os.WriteFile(p.cfgPath, withBody, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", p.cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("plan --apply: %v\n%s", err, out)
	}
	d = p.start()
	t.Cleanup(func() { d.stop(time.Minute) })
	p.waitReady(90 * time.Second)

	cmd := exec.CommandContext(ctx, readsideBinary(t), "replay", "-c", p.cfgPath, "--projection", "messages_by_sender", "--backfill", "body", "--progress-every", "200ms")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	t.Logf("replay --backfill: exit %d after %s\nstdout:\n%s\nstderr:\n%s", cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	line := regexp.MustCompile(`^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\S* backfilling \S+ \(body\): ([0-9.]+)% \((\d+) of (\d+) offsets\)(, \d+ offsets/s(, \S+ left)?)?$`)
	var progress []string
	var final []string
	withRate := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "\r") {
			t.Errorf("a carriage return on a stderr that is no terminal: %q", l)
		}
		if m := line.FindStringSubmatch(l); m != nil {
			progress = append(progress, l)
			final = m
			if m[4] != "" {
				withRate++
			}
		}
	}
	if len(progress) < 3 {
		t.Errorf("%d progress lines, want periodic ones before the final (at least 2, then the final)", len(progress))
	}
	if withRate == 0 {
		t.Errorf("no progress line with the rate")
	}
	if final == nil || final[1] != "100.0" || final[2] != final[3] || final[3] == "0" {
		t.Errorf("the last progress line is not the final one with the totals (100.0%%, N of N offsets): %v", final)
	}
	if !strings.Contains(stdout.String(), "backfilled body of messages_by_sender") {
		t.Errorf("stdout lacks the result line")
	}
}
