package e2e

// The initial load as an operator watches it: /status, `readside status`,
// /readyz and the log of the built binary on a fresh start with
// source.snapshot.mode initial (real MariaDB, real Kafka).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// loadReport is the part of /status the test reads.
type loadReport struct {
	Ready    bool     `json:"ready"`
	NotReady []string `json:"not_ready"`
	Source   struct {
		InitialSnapshot *struct {
			State      string `json:"state"`
			Complete   bool   `json:"complete"`
			First      bool   `json:"first"`
			TableCount int    `json:"tables"`
			TablesDone int    `json:"tables_done"`
			Rows       int64  `json:"rows"`
			Tables     []struct {
				Table        string     `json:"table"`
				State        string     `json:"state"`
				Rows         int64      `json:"rows"`
				RowsEstimate *int64     `json:"rows_estimate"`
				StartedAt    *time.Time `json:"started_at"`
				FinishedAt   *time.Time `json:"finished_at"`
			} `json:"per_table"`
		} `json:"initial_snapshot"`
	} `json:"source"`
}

// TestInitialLoadVisible: three tables of different sizes are loaded in
// source.tables order. While the load runs /status shows each table
// pending, running (its committed rows growing, with the source's row
// estimate) or done, `complete` is false and the process not ready, and
// `readside status` prints the table of progress; `complete` turns true
// only once every table is done with exactly its rows. The log has one
// "snapshot done" line per table with its rows and time, then one
// "initial snapshot complete" line; the projection's "caught up" line
// waits for its table's snapshot, the tailer's says the load still runs.
// After it, `readside status` (daemon and stores) says it is complete.
func TestInitialLoadVisible(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	// Chunks of 10 rows (2,000 for the big table, each with its watermark
	// commits): its load lasts seconds, so `readside status` sees it running.
	p := newPipeline(t, "initload", pipelineOptions{brokers: bed.Kafka.Brokers(), sourceExtra: "  snapshot:\n    chunk_rows: 10\n"})
	small, big, msgs := p.src+".small", p.src+".big", p.src+".messages"
	want := map[string]int64{small: 30, big: 20000, msgs: 2000}
	for _, name := range []string{"small", "big"} {
		if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+p.src+"`."+name+" (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	fill := func(table string, n int64) {
		for lo := int64(1); lo <= n; lo += 2000 {
			var vals []string
			for id := lo; id < lo+2000 && id <= n; id++ {
				vals = append(vals, fmt.Sprintf("(%d, 'v%d')", id, id))
			}
			db, name, _ := strings.Cut(table, ".")
			if err := bed.MySQL.Exec(ctx, "INSERT INTO `"+db+"`."+name+" VALUES "+strings.Join(vals, ", ")); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(small, want[small])
	fill(big, want[big])
	p.insertRange(ctx, 1, int(want[msgs]), "m")
	if err := bed.MySQL.Exec(ctx, "ANALYZE TABLE `"+p.src+"`.big"); err != nil {
		t.Fatal(err)
	}
	// The projected table last, so that its projection has had
	// nothing to wait for during most of the load.
	cfgText, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfgPath, []byte(strings.Replace(string(cfgText), "tables: ["+msgs+"]", "tables: ["+small+", "+big+", "+msgs+"]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	d := p.start()
	t.Cleanup(func() {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	})

	// Poll /status through the load; `readside status` alongside, until
	// one of its outputs showed the big table running.
	bigRunning := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(big) + `\s+running\s+\d+\s+~\d+`)
	var reports []loadReport
	const pendingMetric = "readside_source_initial_snapshot_pending_tables"
	pendingAtStart := -1.0
	var runningOut string
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		for runningOut == "" && ctx.Err() == nil {
			out, _ := p.status(t)
			// The daemon serves /status once its parts have started, and
			// the load may begin before that: until then this prints the
			// stores' report, which has no readiness to check.
			if strings.Contains(out, "from the daemon at") && strings.Contains(out, "initial snapshot: RUNNING") && bigRunning.MatchString(out) {
				runningOut = out
				return
			}
			if strings.Contains(out, "initial snapshot: complete") {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if !testbed.Poll(pctx, 100*time.Millisecond, func() bool {
		code, body, err := p.get(pctx, "/status")
		if err != nil || code != 200 {
			return false
		}
		var r loadReport
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("/status: %v\n%s", err, body)
		}
		if r.Source.InitialSnapshot == nil {
			return false
		}
		reports = append(reports, r)
		if len(reports) == 1 && r.Source.InitialSnapshot.TablesDone == 0 {
			pendingAtStart = gauge(t, p.scrape(pctx), pendingMetric, nil)
		}
		return r.Source.InitialSnapshot.Complete
	}) {
		t.Fatalf("/status never said the initial snapshot is complete\nlog:\n%s", tail(p.logPath))
	}
	<-statusDone

	var sawRunning, sawPartial, sawNotReady bool
	for i, r := range reports {
		s := r.Source.InitialSnapshot
		if !s.First || s.TableCount != 3 || len(s.Tables) != 3 {
			t.Fatalf("report %d: want the first start's load of 3 tables, got %+v", i, s)
		}
		var notDone []string
		for j, tb := range s.Tables {
			if tb.Table != []string{small, big, msgs}[j] {
				t.Errorf("report %d: table %d is %s, want source.tables order", i, j, tb.Table)
			}
			switch tb.State {
			case "done":
				if tb.Rows != want[tb.Table] || tb.StartedAt == nil || tb.FinishedAt == nil {
					t.Errorf("report %d: %s done with %d rows (started %v, finished %v), want %d", i, tb.Table, tb.Rows, tb.StartedAt, tb.FinishedAt, want[tb.Table])
				}
			case "running":
				sawRunning = true
				if tb.Rows > 0 && tb.Rows < want[tb.Table] {
					sawPartial = true
				}
				notDone = append(notDone, tb.Table)
			case "pending":
				notDone = append(notDone, tb.Table)
			default:
				t.Errorf("report %d: %s in state %q", i, tb.Table, tb.State)
			}
			if tb.Rows > want[tb.Table] {
				t.Errorf("report %d: %s has %d rows, more than the table's %d", i, tb.Table, tb.Rows, want[tb.Table])
			}
		}
		if s.Complete != (len(notDone) == 0) || (s.State == "complete") != s.Complete {
			t.Errorf("report %d: complete=%v state=%s while %v are not done", i, s.Complete, s.State, notDone)
		}
		if !s.Complete {
			reason := strings.Join(r.NotReady, "; ")
			if r.Ready || !strings.Contains(reason, "initial snapshot running") {
				t.Errorf("report %d: ready=%v (%s) during the first initial load; want not ready naming it", i, r.Ready, reason)
			}
			sawNotReady = true
		}
	}
	last := reports[len(reports)-1].Source.InitialSnapshot
	if last.Rows != want[small]+want[big]+want[msgs] || last.TablesDone != 3 {
		t.Errorf("complete load: %d rows over %d tables, want %d over 3", last.Rows, last.TablesDone, want[small]+want[big]+want[msgs])
	}
	if est := last.Tables[1].RowsEstimate; est == nil || *est <= 0 {
		t.Errorf("%s has no row estimate: %v", big, est)
	}
	if !sawRunning || !sawPartial || !sawNotReady {
		t.Errorf("the load was never seen running part-way (running %v, partial rows %v, not ready %v) in %d reports", sawRunning, sawPartial, sawNotReady, len(reports))
	}
	t.Logf("%d /status reports during the load", len(reports))
	if pendingAtStart != -1 && pendingAtStart < 2 {
		t.Errorf("%s was %g as the load began, want 2 or 3", pendingMetric, pendingAtStart)
	}
	if got := gauge(t, p.scrape(ctx), pendingMetric, nil); got != 0 {
		t.Errorf("%s is %g after the load, want 0", pendingMetric, got)
	}

	// `readside status` while it ran, from the daemon.
	t.Logf("readside status during the load:\n%s", runningOut)
	if !bigRunning.MatchString(runningOut) || !strings.Contains(runningOut, "ready: NO") ||
		!regexp.MustCompile(`(?m)^\s+`+regexp.QuoteMeta(msgs)+`\s+(pending|running)\s`).MatchString(runningOut) {
		t.Errorf("readside status during the load does not show %s running with rows and estimate and %s not done:\n%s", big, msgs, runningOut)
	}

	// After it: the daemon's and the stores' (the checkpoint) report.
	out, code := p.status(t)
	done := fmt.Sprintf("initial snapshot: complete, 3 table(s), %d rows", want[small]+want[big]+want[msgs])
	if code != 0 || !strings.Contains(out, done) {
		t.Errorf("readside status after the load (exit %d) lacks %q:\n%s", code, done, out)
	}
	out, _ = p.status(t, "--http", freeAddr(t))
	if !strings.Contains(out, done) {
		t.Errorf("readside status from the stores after the load lacks %q:\n%s", done, out)
	}
	p.waitReady(time.Minute)

	// The log, once the projection's caught-up line is in it (written
	// within a second of its lag falling, which a loaded box delays).
	caughtRe := regexp.MustCompile(`msg="caught up: the read table is current with the topics" projection=messages_by_sender`)
	lctx, lcancel := context.WithTimeout(ctx, time.Minute)
	defer lcancel()
	testbed.Poll(lctx, 200*time.Millisecond, func() bool { return caughtRe.MatchString(p.log()) })
	logText := p.log()
	var story []string
	for _, l := range strings.Split(logText, "\n") {
		if strings.Contains(l, "snapshot") || strings.Contains(l, "caught up") {
			story = append(story, l)
		}
	}
	t.Logf("the load in the log:\n%s", strings.Join(story, "\n"))
	lineAt := func(re string) int {
		loc := regexp.MustCompile(re).FindStringIndex(logText)
		if loc == nil {
			t.Errorf("log lacks a line matching %s", re)
			return -1
		}
		return loc[0]
	}
	var lastDone int
	for _, tb := range []string{small, big, msgs} {
		at := lineAt(fmt.Sprintf(`msg="snapshot done".* table=%s rows=%d took=\S+ initial=true`, regexp.QuoteMeta(tb), want[tb]))
		lastDone = max(lastDone, at)
	}
	complete := lineAt(fmt.Sprintf(`level=INFO msg="initial snapshot complete[^"]*".* tables=3 rows=%d took=\S+ first=true`, want[small]+want[big]+want[msgs]))
	if complete >= 0 && complete < lastDone {
		t.Errorf("the completion line comes before the last table's line:\n%s", logText)
	}
	if n := strings.Count(logText, "initial snapshot complete"); n != 1 {
		t.Errorf("%d completion lines, want 1", n)
	}
	msgsDone := lineAt(`msg="snapshot done".* table=` + regexp.QuoteMeta(msgs) + ` `)
	caught := lineAt(caughtRe.String())
	if caught >= 0 && caught < msgsDone {
		t.Errorf("messages_by_sender logged caught up before the snapshot of %s was done:\n%s", msgs, logText)
	}
	lineAt(`msg="caught up: reading the source's binlog as it is written".* initial_snapshot=running tables_loading=`)
}
