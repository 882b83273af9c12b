package e2e

// A table added to source.tables after the first start, on the real test
// bed: its existing rows are snapshotted on the next start, once.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestSnapshotOfAddedTable: readside runs with messages only; notes has
// rows written before and while it runs. notes is then added to
// source.tables (and a projection of it) and readside restarted with
// source.snapshot.mode initial: notes' existing rows (read in several
// chunks, while it is written) and its live ones reach its topic with
// each (key, version) once and at most one snapshot read per key, and
// the read table equals the source. Another restart snapshots nothing
// again. Then, with mode never, a third table added to source.tables makes
// `readside check` warn naming it and `readside snapshot --table`, until
// that snapshot is requested.
func TestSnapshotOfAddedTable(t *testing.T) {
	bed := testbed.Get(t)
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__CHUNK_ROWS", "40")
	p := newOpsPipeline(t, "snapadd", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	db := bed.MySQL.DB()
	notes, extras := "`"+p.src+"`.notes", "`"+p.src+"`.extras"
	for _, q := range []string{
		"CREATE TABLE " + notes + " LIKE `" + p.src + "`.messages",
		"CREATE TABLE " + extras + " LIKE `" + p.src + "`.messages",
	} {
		if err := bed.MySQL.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(table string, lo, hi int, tag string) {
		t.Helper()
		var vals []string
		for id := lo; id <= hi; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, '2026-01-01 00:00:%02d.%06d', '%s%d')", id, id%20, id%60, id, tag, id))
		}
		if err := bed.MySQL.Exec(ctx, "INSERT INTO "+table+" VALUES "+strings.Join(vals, ", ")); err != nil {
			t.Fatal(err)
		}
	}
	insert(notes, 1, 100, "before")
	p.insertRange(ctx, 1, 20, "m")

	d := p.run()
	p.waitRows(p.rows("`"+p.src+"`.messages"), 2*time.Minute, "messages before notes is captured")
	insert(notes, 101, 150, "while")
	if _, err := db.ExecContext(ctx, "UPDATE "+notes+" SET body = 'edited' WHERE id <= 10"); err != nil {
		t.Fatal(err)
	}
	// A marker on messages after the notes writes: once it is applied, the
	// tailer has read past them (and left them out).
	p.insertRange(ctx, 21, 21, "m")
	p.waitRows(p.rows("`"+p.src+"`.messages"), 2*time.Minute, "marker after the notes writes")
	d.stopClean()

	cfgText, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	withNotes := strings.Replace(string(cfgText), "tables: ["+p.src+".messages]", "tables: ["+p.src+".messages, "+p.src+".notes]", 1)
	withNotes = strings.Replace(withNotes, "projections:\n", fmt.Sprintf(`projections:
  notes_by_sender:
    from: %s.notes
    sink: reads
    key: [sender_id, created_at, id]
    columns: {sender_id: sender_id, created_at: created_at, id: id, body: body}
`, p.src), 1)
	if err := os.WriteFile(p.cfgPath, []byte(withNotes), 0o600); err != nil {
		t.Fatal(err)
	}
	d.restart()
	// Live writes while the snapshot may still be running.
	insert(notes, 151, 170, "live")
	if _, err := db.ExecContext(ctx, "UPDATE "+notes+" SET body = 'live-edit' WHERE id IN (15, 95, 145)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM "+notes+" WHERE id IN (20, 120)"); err != nil {
		t.Fatal(err)
	}
	waitTable := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var got, want string
		if !testbed.Poll(wctx, 500*time.Millisecond, func() bool {
			got, want = p.rows("`"+p.sink+"`.notes_by_sender"), p.rows(notes)
			return got == want
		}) {
			t.Fatalf("%s: notes_by_sender differs from notes (%d rows, want %d):\n%s\nlog tail:\n%s",
				what, strings.Count(got, "\n"), strings.Count(want, "\n"), rowDiff(got, want, 10), tail(p.logPath))
		}
	}
	waitTable("after adding notes")
	if !hasLine(p.lastStart(), "level=INFO msg=\"table added to source.tables since the last start: snapshotting its existing rows\"", " table="+p.src+".notes") {
		t.Errorf("no 'table added ... snapshotting' line naming notes; log:\n%s", tail(p.logPath))
	}

	adm := adminClient(t, bed.Kafka.Brokers())
	topic := strings.Replace(p.messagesTopic(adm), "."+p.src+".messages", "."+p.src+".notes", 1)
	// The topic as a whole: each (key, version) once, at most one snapshot
	// read per key, a snapshot read of every row that existed before the
	// start and was not touched since, a create of every live row.
	checkTopic := func(what string, want int) int {
		t.Helper()
		events := consumeEvents(t, bed, want, 2*time.Minute, topic)
		seen, reads := map[string]int{}, map[string]int{}
		creates := map[string]bool{}
		for _, e := range events {
			seen[fmt.Sprintf("%s@%d", e.key(), e.Version)]++
			switch e.Op {
			case "r":
				reads[e.key()]++
			case "c":
				creates[e.key()] = true
			}
		}
		for kv, n := range seen {
			if n > 1 {
				t.Errorf("%s: key@version %s is %d times on %s", what, kv, n, topic)
			}
		}
		for k, n := range reads {
			if n > 1 {
				t.Errorf("%s: key %s has %d snapshot reads on %s, want at most 1", what, k, n, topic)
			}
		}
		for id := 1; id <= 150; id++ {
			if k := fmt.Sprint(id); id != 15 && id != 20 && id != 95 && id != 120 && id != 145 && reads[k] != 1 {
				t.Errorf("%s: id %d existed before notes was captured and was not touched since: %d snapshot reads, want 1", what, id, reads[k])
			}
		}
		for id := 151; id <= 170; id++ {
			if !creates[fmt.Sprint(id)] {
				t.Errorf("%s: live id %d has no create on %s", what, id, topic)
			}
		}
		total := 0
		for _, n := range reads {
			total += n
		}
		t.Logf("%s: %d events on %s, %d snapshot reads", what, len(events), topic, total)
		return total
	}
	readsBefore := checkTopic("after the snapshot", 145+20)

	// A restart: notes is covered by the checkpoint now.
	d.stopClean()
	d.restart()
	insert(notes, 171, 171, "after-restart")
	waitTable("after the restart")
	if got := checkTopic("after the restart", 145+21); got != readsBefore {
		t.Errorf("the restart published %d more snapshot reads of notes, want 0", got-readsBefore)
	}
	if strings.Contains(p.lastStart(), "table added to source.tables since the last start") {
		t.Errorf("the restart took notes for a new table again; log:\n%s", tail(p.logPath))
	}

	// Mode never: a table added later is only warned about.
	d.stopClean()
	t.Setenv("READSIDE_SOURCE__SNAPSHOT__MODE", "never")
	insert(extras, 1, 5, "x")
	withExtras := strings.Replace(withNotes, p.src+".notes]", p.src+".notes, "+p.src+".extras]", 1)
	if err := os.WriteFile(p.cfgPath, []byte(withExtras), 0o600); err != nil {
		t.Fatal(err)
	}
	warning := "WARNING source       " + p.src + ".extras was added to source.tables after the tailer's first start"
	fix := "fix: readside snapshot --table " + p.src + ".extras"
	out, code := p.check(t)
	t.Logf("readside check with extras added (exit %d):\n%s", code, out)
	if !strings.Contains(out, warning) || !strings.Contains(out, fix) || strings.Contains(out, p.src+".notes was added") {
		t.Errorf("readside check does not warn about extras alone with the fix:\n%s", out)
	}
	d.restart()
	if !hasLine(p.lastStart(), "level=WARN msg=\"table added to source.tables since the last start: its existing rows are not published",
		" table="+p.src+".extras ", " fix=\"readside snapshot --table "+p.src+".extras\"") {
		t.Errorf("no WARN line naming extras and the fix; log:\n%s", tail(p.logPath))
	}
	if out, code := p.snapshotCmd(p.cfgPath, "--table", p.src+".extras"); code != 0 {
		t.Fatalf("snapshot (exit %d):\n%s", code, out)
	}
	extrasTopic := strings.Replace(topic, "."+p.src+".notes", "."+p.src+".extras", 1)
	consumeEvents(t, bed, 5, 2*time.Minute, extrasTopic)
	// The request is read with the snapshot's first chunk; its checkpoint
	// may come a commit later.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !testbed.Poll(wctx, time.Second, func() bool {
		out, _ = p.check(t)
		return !strings.Contains(out, p.src+".extras was added")
	}) {
		t.Errorf("readside check still warns about extras after its snapshot:\n%s", out)
	}
}

// check runs `readside check -c <config>`.
func (p *opsPipeline) check(t *testing.T) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), readsideBinary(t), "check", "-c", p.cfgPath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// lastStart is the log of the daemon's latest start.
func (p *opsPipeline) lastStart() string {
	log := p.log()
	return log[strings.LastIndex(log, "=== start "):]
}

// hasLine reports whether a line of log holds every one of parts.
func hasLine(log string, parts ...string) bool {
	for _, l := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
