package cdc

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The initial load is the snapshot of every captured table that the first
// start queues (and, later, of a table added to source.tables): the
// queue's tasks without a request id. How far it got travels in the
// checkpoint (InitialLoad), committed with the chunks' rows, so `/status`
// and `readside status` tell the same story from the daemon and from the
// checkpoint topic, and a restart carries on counting.
//
// The stream records, in order with what it publishes, when each table's
// snapshot starts and ends (the hooks below, at chunk boundaries: nothing
// per row); what is reported is what the last committed checkpoint says,
// so a table is "done" once its last chunk is in Kafka, where the
// projections can read it.

// InitialLoad is the checkpoint's record of the initial load.
type InitialLoad struct {
	StartedAt time.Time `json:"started_at"`
	// First: the first start's load, of every captured table (not one of
	// tables added later). Only it holds /readyz back.
	First       bool       `json:"first,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Tables, while any is pending or running; once every one is over,
	// the checkpoint keeps only TableCount and Rows (a checkpoint is
	// written several times a second, for ever).
	Tables     []TableLoad `json:"tables,omitempty"`
	TableCount int         `json:"table_count,omitempty"`
	Rows       int64       `json:"rows,omitempty"`
}

// TableLoad is one table of the initial load.
type TableLoad struct {
	Table string `json:"table"`
	// Estimate is information_schema.TABLES.TABLE_ROWS when the load
	// began: InnoDB's estimate, often off by tens of percent.
	Estimate   *int64     `json:"estimate,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// State and Rows once it is over: done, failed (the request failed
	// and was skipped, snapshot_request.go) or cancelled.
	State string `json:"state,omitempty"`
	Rows  int64  `json:"rows,omitempty"`
}

func (tl TableLoad) over() bool { return tl.FinishedAt != nil }

// InitialSnapshot is the initial load as /status reports it
// (docs/operations.md, "The initial load").
type InitialSnapshot struct {
	// State: "running" while a table's snapshot is pending or running,
	// else "complete".
	State    string `json:"state"`
	Complete bool   `json:"complete"`
	// First: the first start's load of every captured table (false: of
	// tables added to source.tables later). While it runs /readyz is 503.
	First       bool       `json:"first"`
	StartedAt   time.Time  `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Seconds: how long it took, or has been running.
	Seconds    float64 `json:"seconds"`
	TableCount int     `json:"tables"`
	TablesDone int     `json:"tables_done"`
	// Rows are the snapshot rows committed to the topics, summed.
	Rows int64 `json:"rows"`
	// Tables per table, in load order; absent when only the checkpoint's
	// summary of a finished load is known (after a restart).
	Tables []TableSnapshot `json:"per_table,omitempty"`
}

// TableSnapshot is one table's initial snapshot.
type TableSnapshot struct {
	Table string `json:"table"`
	// State: pending, running, done, failed or cancelled.
	State string `json:"state"`
	// Rows: snapshot rows committed to the topic so far.
	Rows int64 `json:"rows"`
	// RowsEstimate is the source's TABLE_ROWS estimate when the load
	// began (information_schema; not a count).
	RowsEstimate *int64     `json:"rows_estimate,omitempty"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	// Seconds: how long it took, or has been running.
	Seconds float64 `json:"seconds,omitempty"`
}

// Loading are the tables whose initial snapshot is pending or running.
func (s *InitialSnapshot) Loading() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, t := range s.Tables {
		if t.State == "pending" || t.State == "running" {
			out = append(out, t.Table)
		}
	}
	return out
}

// InitialSnapshotOf is the initial load recorded in cp, nil when there is
// none to report (source.snapshot.mode never, or a checkpoint of an older
// readside with nothing queued).
func InitialSnapshotOf(cp Checkpoint, now time.Time) *InitialSnapshot {
	return initialSnapshotOf(cp, nil, now)
}

// initialSnapshotOf reads cp; detail is the stream's own record of the
// same load, whose tables stand in for a finished load's summary.
func initialSnapshotOf(cp Checkpoint, detail *InitialLoad, now time.Time) *InitialSnapshot {
	rec := cp.InitialLoad
	queued := map[string]SnapshotTask{}
	var order []string
	for _, task := range cp.Snapshots {
		if task.ID == 0 {
			if _, ok := queued[task.Table]; !ok {
				order = append(order, task.Table)
			}
			queued[task.Table] = task
		}
	}
	if rec == nil && len(queued) == 0 {
		return nil
	}
	out := &InitialSnapshot{}
	var tables []TableLoad
	if rec != nil {
		out.StartedAt, out.First, out.CompletedAt = rec.StartedAt, rec.First, rec.CompletedAt
		tables = rec.Tables
		if tables == nil && detail != nil && detail.StartedAt.Equal(rec.StartedAt) {
			tables = detail.Tables
		}
		if tables == nil && len(queued) == 0 {
			out.State, out.Complete = "complete", true
			out.TableCount, out.TablesDone, out.Rows = rec.TableCount, rec.TableCount, rec.Rows
			if rec.CompletedAt != nil {
				out.Seconds = rec.CompletedAt.Sub(rec.StartedAt).Seconds()
			}
			return out
		}
	}
	seen := map[string]bool{}
	for _, tl := range tables {
		seen[tl.Table] = true
		ts := TableSnapshot{Table: tl.Table, RowsEstimate: tl.Estimate, StartedAt: tl.StartedAt, FinishedAt: tl.FinishedAt}
		task, isQueued := queued[tl.Table]
		switch {
		case tl.over():
			ts.State, ts.Rows = tl.State, tl.Rows
		case isQueued && tl.StartedAt != nil:
			ts.State, ts.Rows = "running", task.Rows
		case isQueued:
			ts.State, ts.Rows = "pending", task.Rows
		default:
			// Neither over nor queued: dropped from the queue by a way
			// the stream did not record (a table no longer captured).
			ts.State = "cancelled"
		}
		out.add(ts, now)
	}
	for _, name := range order {
		if !seen[name] {
			ts := TableSnapshot{Table: name, State: "pending", Rows: queued[name].Rows}
			if ts.Rows > 0 {
				ts.State = "running"
			}
			out.add(ts, now)
		}
	}
	out.Complete = len(out.Loading()) == 0
	out.State = "running"
	if out.Complete {
		out.State = "complete"
	}
	switch {
	case out.StartedAt.IsZero():
	case out.Complete && out.CompletedAt != nil:
		out.Seconds = out.CompletedAt.Sub(out.StartedAt).Seconds()
	case !out.Complete:
		out.Seconds = now.Sub(out.StartedAt).Seconds()
	}
	return out
}

func (s *InitialSnapshot) add(ts TableSnapshot, now time.Time) {
	switch {
	case ts.StartedAt != nil && ts.FinishedAt != nil:
		ts.Seconds = ts.FinishedAt.Sub(*ts.StartedAt).Seconds()
	case ts.StartedAt != nil && ts.State == "running":
		ts.Seconds = now.Sub(*ts.StartedAt).Seconds()
	}
	s.Tables = append(s.Tables, ts)
	s.TableCount++
	s.Rows += ts.Rows
	if ts.State != "pending" && ts.State != "running" {
		s.TablesDone++
	}
}

// loadTracker is the Tailer's side of the initial load.
type loadTracker struct {
	mu   sync.Mutex
	cur  *InitialLoad     // the stream's record, ahead of the committed one
	view *InitialSnapshot // from the last committed checkpoint
	// known: the stream has read the checkpoint, so a nil view means
	// there is no initial load (not that it is not known yet).
	known bool
	now   func() time.Time
	log   *slog.Logger

	// The head of the snapshot queue as the stream last saw it, and when
	// its snapshot started here; the stream's goroutine only.
	headID    uint64
	headTable string
	headStart time.Time
}

// pendingTables is readside_source_initial_snapshot_pending_tables.
func (l *loadTracker) pendingTables() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(len(l.view.Loading()))
}

func (l *loadTracker) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "readside_source_initial_snapshot_pending_tables",
		Help: "Captured tables whose initial snapshot is queued or running (committed to Kafka as far as the last checkpoint); 0 once the initial load is complete, or when there is none.",
	}, l.pendingTables))
}

// InitialSnapshot is the initial load as far as committed; known is
// false until the tailer has read its checkpoint (then nil means there
// is no initial load).
func (t *Tailer) InitialSnapshot() (s *InitialSnapshot, known bool) {
	t.load.mu.Lock()
	known = t.load.known
	t.load.mu.Unlock()
	return t.load.status(), known
}

// status is the committed view, for Tailer.Status.
func (l *loadTracker) status() *InitialSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.view == nil {
		return nil
	}
	v := *l.view
	v.Tables = slices.Clone(v.Tables)
	if !v.Complete && !v.StartedAt.IsZero() {
		v.Seconds = l.now().Sub(v.StartedAt).Seconds()
	}
	return &v
}

// resume sets up the stream's record from cp, the checkpoint the stream
// starts from (after coverTables queued the added tables): a load in
// progress carries on; tables queued without a request id after a
// finished load (added tables) begin a new one. It reads the row
// estimates from the source and puts the record into cp.
func (l *loadTracker) resume(ctx context.Context, src *sourceDB, cp *Checkpoint, captured map[string]string, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known = true
	l.headID, l.headTable = 0, ""
	var queued []string
	for _, task := range cp.Snapshots {
		if _, ok := captured[task.Table]; ok && task.ID == 0 && !slices.Contains(queued, task.Table) {
			queued = append(queued, task.Table)
		}
	}
	rec := cloneLoad(cp.InitialLoad)
	if rec == nil || rec.Tables == nil && len(queued) > 0 {
		if len(queued) == 0 {
			l.cur = nil
			l.view = initialSnapshotOf(*cp, nil, l.now())
			return
		}
		rec = &InitialLoad{StartedAt: l.now().UTC(), First: first}
	}
	kept := rec.Tables[:0]
	for _, tl := range rec.Tables {
		if _, ok := captured[tl.Table]; ok {
			kept = append(kept, tl)
		}
	}
	rec.Tables = kept
	for _, name := range queued {
		if !slices.ContainsFunc(rec.Tables, func(tl TableLoad) bool { return tl.Table == name }) {
			rec.Tables = append(rec.Tables, TableLoad{Table: name})
		}
	}
	l.estimate(ctx, src, rec)
	if rec.Tables != nil && len(queued) == 0 && rec.CompletedAt == nil {
		l.finish(rec) // its last tables were dropped from source.tables
	}
	l.cur = rec
	cp.InitialLoad = l.record()
	l.view = initialSnapshotOf(*cp, l.cur, l.now())
	if len(queued) > 0 {
		var estimate int64
		for _, tl := range rec.Tables {
			if tl.Estimate != nil && !tl.over() {
				estimate += *tl.Estimate
			}
		}
		l.log.Info("initial snapshot: loading tables", "tables", queued, "rows_estimate", estimate, "first", rec.First)
	}
}

// estimate reads TABLE_ROWS for the tables not over and without one.
func (l *loadTracker) estimate(ctx context.Context, src *sourceDB, rec *InitialLoad) {
	for i := range rec.Tables {
		tl := &rec.Tables[i]
		if tl.Estimate != nil || tl.over() || src == nil {
			continue
		}
		db, name, _ := strings.Cut(tl.Table, ".")
		var n int64
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := src.db.QueryRowContext(qctx, "SELECT COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, name).Scan(&n)
		cancel()
		if err != nil {
			l.log.Debug("initial snapshot: no row estimate", "table", tl.Table, "err", err)
			continue
		}
		tl.Estimate = &n
	}
}

// finish marks rec complete when every table is over.
func (l *loadTracker) finish(rec *InitialLoad) {
	if rec.CompletedAt != nil || slices.ContainsFunc(rec.Tables, func(tl TableLoad) bool { return !tl.over() }) {
		return
	}
	at := rec.StartedAt
	for _, tl := range rec.Tables {
		if tl.FinishedAt.After(at) {
			at = *tl.FinishedAt
		}
	}
	rec.CompletedAt = &at
}

// record is the stream's record as the next checkpoint stores it.
func (l *loadTracker) record() *InitialLoad {
	rec := cloneLoad(l.cur)
	if rec == nil || rec.CompletedAt == nil {
		return rec
	}
	if rec.Tables != nil {
		rec.TableCount, rec.Rows = len(rec.Tables), 0
		for _, tl := range rec.Tables {
			rec.Rows += tl.Rows
		}
		rec.Tables = nil
	}
	return rec
}

func cloneLoad(rec *InitialLoad) *InitialLoad {
	if rec == nil {
		return nil
	}
	c := *rec
	c.Tables = slices.Clone(rec.Tables)
	return &c
}

// committed updates the view from a committed checkpoint, and logs the
// load's completion once.
func (l *loadTracker) committed(cp Checkpoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was := l.view
	l.view = initialSnapshotOf(cp, l.cur, l.now())
	if was == nil || was.Complete || l.view == nil || !l.view.Complete {
		return
	}
	v := l.view
	attrs := []any{"tables", v.TableCount, "rows", v.Rows, "took", time.Duration(v.Seconds * float64(time.Second)).Round(time.Millisecond), "first", v.First}
	var notDone []string
	for _, t := range v.Tables {
		if t.State != "done" {
			notDone = append(notDone, t.Table+" ("+t.State+")")
		}
	}
	if len(notDone) > 0 {
		l.log.Warn("initial snapshot complete, but not every table was loaded", append(attrs, "not_loaded", notDone)...)
		return
	}
	l.log.Info("initial snapshot complete: every captured table's existing rows are in the topics", attrs...)
}

// update changes the stream's record of table, if the load has it.
func (l *loadTracker) update(table string, f func(*TableLoad)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return
	}
	for i := range l.cur.Tables {
		if tl := &l.cur.Tables[i]; tl.Table == table && !tl.over() {
			f(tl)
			l.finish(l.cur)
			return
		}
	}
}

// snapshotStarted notes when the queue's head began: called before each
// event, it does nothing until the reader of a new head is running.
func (s *stream) snapshotStarted() {
	if s.reader == nil || len(s.snapshots) == 0 {
		return
	}
	l, task := &s.t.load, &s.snapshots[0]
	if task.ID == l.headID && task.Table == l.headTable {
		return
	}
	l.headID, l.headTable, l.headStart = task.ID, task.Table, l.now()
	if task.ID == 0 {
		l.update(task.Table, func(tl *TableLoad) {
			if tl.StartedAt == nil {
				at := l.headStart.UTC()
				tl.StartedAt = &at
			}
		})
	}
}

// snapshotDone logs the end of the queue's head, task, whose last chunk
// was just published, and records it.
func (s *stream) snapshotDone(task *SnapshotTask) {
	l := &s.t.load
	now := l.now()
	took := now.Sub(l.headStart)
	if task.ID == 0 {
		l.update(task.Table, func(tl *TableLoad) {
			if tl.StartedAt != nil {
				took = now.Sub(*tl.StartedAt)
			}
			at := now.UTC()
			tl.FinishedAt, tl.State, tl.Rows = &at, "done", task.Rows
		})
		s.t.log.Info("snapshot done", "table", task.Table, "rows", task.Rows, "took", took.Round(time.Millisecond), "initial", true)
		return
	}
	s.finished = append(s.finished, SnapshotFinished{ID: task.ID, Table: task.Table, Rows: task.Rows, Seconds: took.Seconds(), FinishedAt: now.UTC()})
	if n := len(s.finished); n > maxFinished {
		s.finished = slices.Clone(s.finished[n-maxFinished:])
	}
	s.t.log.Info("snapshot done", "table", task.Table, "rows", task.Rows, "took", took.Round(time.Millisecond), "request", task.ID)
}

// snapshotDropped records a task of the initial load that ended without
// all its rows: state is failed or cancelled.
func (s *stream) snapshotDropped(task SnapshotTask, state string) {
	if task.ID != 0 {
		return
	}
	l := &s.t.load
	l.update(task.Table, func(tl *TableLoad) {
		at := l.now().UTC()
		tl.FinishedAt, tl.State, tl.Rows = &at, state, task.Rows
	})
}
