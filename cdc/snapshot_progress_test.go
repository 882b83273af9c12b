package cdc

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestInitialSnapshotOf: /status, `readside status` and readiness read the
// initial load from a checkpoint; a wrong state either calls the load
// complete while a table is still loading or never calls it complete.
func TestInitialSnapshotOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	est := func(n int64) *int64 { return &n }
	now := t0.Add(100 * time.Second)
	// render is the report in one line: overall, then table:state:rows.
	render := func(s *InitialSnapshot) string {
		if s == nil {
			return "none"
		}
		out := fmt.Sprintf("%s complete=%v %d/%d rows=%d secs=%g", s.State, s.Complete, s.TablesDone, s.TableCount, s.Rows, s.Seconds)
		for _, tb := range s.Tables {
			out += fmt.Sprintf(" %s:%s:%d", tb.Table, tb.State, tb.Rows)
			if tb.RowsEstimate != nil {
				out += fmt.Sprintf("~%d", *tb.RowsEstimate)
			}
		}
		return out
	}
	running := &InitialLoad{StartedAt: t0, First: true, Tables: []TableLoad{
		{Table: "d.a", Estimate: est(10), StartedAt: at(1), FinishedAt: at(2), State: "done", Rows: 10},
		{Table: "d.b", Estimate: est(900), StartedAt: at(2)},
		{Table: "d.c"},
	}}
	detail := &InitialLoad{StartedAt: t0, First: true, CompletedAt: at(9), Tables: []TableLoad{
		{Table: "d.a", StartedAt: at(1), FinishedAt: at(2), State: "done", Rows: 10},
		{Table: "d.b", StartedAt: at(2), FinishedAt: at(9), State: "done", Rows: 950},
	}}
	summary := &InitialLoad{StartedAt: t0, First: true, CompletedAt: at(9), TableCount: 2, Rows: 960}
	for _, c := range []struct {
		why    string
		cp     Checkpoint
		detail *InitialLoad
		want   string
	}{
		{"mode never, nothing recorded: no load to report", Checkpoint{}, nil, "none"},
		{"only requested snapshots queued: they are not the initial load",
			Checkpoint{Snapshots: []SnapshotTask{{ID: 7, Table: "d.a", Rows: 5}}}, nil, "none"},
		{"mid-load: the done table with its rows, the head running with the queue's committed rows, the rest pending",
			Checkpoint{InitialLoad: running, Snapshots: []SnapshotTask{{Table: "d.b", Rows: 400}, {Table: "d.c"}}}, nil,
			"running complete=false 1/3 rows=410 secs=100 d.a:done:10~10 d.b:running:400~900 d.c:pending:0"},
		{"the last table's rows are published but its end not recorded: still running, never complete early",
			Checkpoint{InitialLoad: &InitialLoad{StartedAt: t0, Tables: []TableLoad{{Table: "d.a", StartedAt: at(1)}}}, Snapshots: []SnapshotTask{{Table: "d.a", Rows: 2000}}}, nil,
			"running complete=false 0/1 rows=2000 secs=100 d.a:running:2000"},
		{"a checkpoint of an older readside mid-snapshot: the queue alone, the head with rows running",
			Checkpoint{Snapshots: []SnapshotTask{{Table: "d.a", Rows: 30}, {Table: "d.b"}}}, nil,
			"running complete=false 0/2 rows=30 secs=0 d.a:running:30 d.b:pending:0"},
		{"every table over, one failed: complete (nothing more will happen), the failure shown",
			Checkpoint{InitialLoad: &InitialLoad{StartedAt: t0, CompletedAt: at(5), Tables: []TableLoad{
				{Table: "d.a", FinishedAt: at(3), State: "done", Rows: 3}, {Table: "d.b", FinishedAt: at(5), State: "failed"}}}}, nil,
			"complete complete=true 2/2 rows=3 secs=5 d.a:done:3 d.b:failed:0"},
		{"the completion commit keeps only a summary; the stream's record of the same load gives the tables",
			Checkpoint{InitialLoad: summary}, detail, "complete complete=true 2/2 rows=960 secs=9 d.a:done:10 d.b:done:950"},
		{"after a restart only the summary is known",
			Checkpoint{InitialLoad: summary}, nil, "complete complete=true 2/2 rows=960 secs=9"},
		{"a record of another load is not this one's detail",
			Checkpoint{InitialLoad: summary}, &InitialLoad{StartedAt: t0.Add(time.Hour), Tables: detail.Tables}, "complete complete=true 2/2 rows=960 secs=9"},
	} {
		if got := render(initialSnapshotOf(c.cp, c.detail, now)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.why, got, c.want)
		}
	}
}

// TestLoadTracker: the stream's hooks and the commits drive the record
// and the one completion line, which must come only when the last table's
// end is committed, and once.
func TestLoadTracker(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var logged strings.Builder
	tl := &Tailer{}
	tl.now = func() time.Time { return clock }
	tl.log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	tl.load.now, tl.load.log = tl.now, tl.log
	s := &stream{t: tl}
	cp := Checkpoint{Snapshots: []SnapshotTask{{Table: "d.a"}, {Table: "d.b"}}}
	tl.load.resume(t.Context(), nil, &cp, map[string]string{"d.a": "", "d.b": ""}, true)
	s.snapshots = cp.Snapshots
	commit := func() {
		c := cp
		c.Snapshots = append([]SnapshotTask(nil), s.snapshots...)
		c.InitialLoad = tl.load.record()
		tl.committed(c)
	}
	complete := func() bool { v, _ := tl.InitialSnapshot(); return v != nil && v.Complete }

	s.reader = &chunkReader{}
	s.snapshotStarted()
	clock = clock.Add(2 * time.Second)
	s.snapshots[0].Rows = 5
	s.snapshotDone(&s.snapshots[0])
	s.snapshots = s.snapshots[1:]
	commit()
	if complete() {
		t.Fatal("complete after the first of two tables")
	}
	s.snapshotStarted()
	clock = clock.Add(3 * time.Second)
	s.snapshots[0].Rows = 7
	s.snapshotDone(&s.snapshots[0])
	s.snapshots = s.snapshots[1:]
	if complete() {
		t.Fatal("complete before the last table's end was committed")
	}
	commit()
	if !complete() {
		t.Fatal("not complete after every table's end was committed")
	}
	commit()
	v, _ := tl.InitialSnapshot()
	if v.Rows != 12 || v.Seconds != 5 || v.TablesDone != 2 || v.Tables[1].Seconds != 3 {
		t.Errorf("report %+v: want 12 rows in 5 s, d.b in 3 s", v)
	}
	if rec := tl.load.record(); rec.Tables != nil || rec.TableCount != 2 || rec.Rows != 12 {
		t.Errorf("checkpoint record after completion %+v: want the summary only", rec)
	}
	log := logged.String()
	if n := strings.Count(log, "initial snapshot complete"); n != 1 {
		t.Errorf("%d completion lines, want 1:\n%s", n, log)
	}
	for _, want := range []string{`msg="snapshot done" table=d.a rows=5 took=2s initial=true`, `msg="snapshot done" table=d.b rows=7 took=3s initial=true`, "tables=2 rows=12 took=5s first=true"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Index(log, "table=d.b rows=7") > strings.Index(log, "initial snapshot complete") {
		t.Errorf("completion logged before the last table's line:\n%s", log)
	}
}

// TestLoadResume: a restart carries the load on from its checkpoint (what
// was done stays done, with its times), a table added after a finished
// load starts a new one that does not hold readiness (First false), and a
// table dropped from source.tables leaves the load.
func TestLoadResume(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	captured := map[string]string{"d.a": "", "d.b": "", "d.c": ""}
	for _, c := range []struct {
		why   string
		cp    Checkpoint
		found bool
		want  string // started first tables...
	}{
		{"first start: a new load of every queued table, first",
			Checkpoint{Snapshots: []SnapshotTask{{Table: "d.a"}, {Table: "d.b"}}}, false,
			"2026-01-01T00:01:40Z first=true [d.a: d.b:]"},
		{"restart mid-load: the done table and the running one's start are kept",
			Checkpoint{Snapshots: []SnapshotTask{{Table: "d.b", Rows: 40}}, InitialLoad: &InitialLoad{StartedAt: t0, First: true, Tables: []TableLoad{
				{Table: "d.a", StartedAt: at(1), FinishedAt: at(2), State: "done", Rows: 9}, {Table: "d.b", StartedAt: at(2)}}}}, true,
			"2026-01-01T00:00:00Z first=true [d.a:done d.b:]"},
		{"a table added after a finished load: a new load of it alone, not first",
			Checkpoint{Snapshots: []SnapshotTask{{Table: "d.c"}}, InitialLoad: &InitialLoad{StartedAt: t0, First: true, CompletedAt: at(5), TableCount: 2, Rows: 9}}, true,
			"2026-01-01T00:01:40Z first=false [d.c:]"},
		{"a requested snapshot queued after a finished load: the load stays finished",
			Checkpoint{Snapshots: []SnapshotTask{{ID: 3, Table: "d.c"}}, InitialLoad: &InitialLoad{StartedAt: t0, First: true, CompletedAt: at(5), TableCount: 2, Rows: 9}}, true,
			"2026-01-01T00:00:00Z first=true []"},
		{"a table dropped from source.tables mid-load leaves it",
			Checkpoint{Snapshots: []SnapshotTask{{Table: "d.x"}, {Table: "d.b"}}, InitialLoad: &InitialLoad{StartedAt: t0, First: true, Tables: []TableLoad{{Table: "d.x"}, {Table: "d.b"}}}}, true,
			"2026-01-01T00:00:00Z first=true [d.b:]"},
	} {
		var l loadTracker
		l.now, l.log = func() time.Time { return t0.Add(100 * time.Second) }, slog.New(slog.DiscardHandler)
		cp := c.cp
		l.resume(t.Context(), nil, &cp, captured, !c.found)
		got := "none"
		if rec := l.cur; rec != nil {
			got = fmt.Sprintf("%s first=%v [", rec.StartedAt.Format(time.RFC3339), rec.First)
			for i, tl := range rec.Tables {
				if i > 0 {
					got += " "
				}
				got += tl.Table + ":" + tl.State
			}
			got += "]"
		}
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.why, got, c.want)
		}
		if cp.InitialLoad == nil && l.cur != nil {
			t.Errorf("%s: the checkpoint the stream starts from lacks the record", c.why)
		}
	}
}
