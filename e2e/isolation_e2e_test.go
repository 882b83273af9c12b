package e2e

// A projection that cannot go on stops alone: the tailer and the other
// projections keep applying, /healthz says degraded (200; 503 with
// ?strict=1), /status and `readside status` name it with the reason and
// the fix, readside_projection_stopped is 1, and SIGHUP resumes it once
// fixed, with nothing lost.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/projector"
)

// isolationRig is an opsPipeline (messages_by_sender, the healthy
// projection) with more projections on the same source table.
type isolationRig struct {
	*opsPipeline
	d *daemon
}

func newIsolationRig(t *testing.T, name, projections string) *isolationRig {
	t.Helper()
	bed := testbed.Get(t)
	p := newOpsPipeline(t, name, bed.Kafka.Brokers(), "")
	b, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "projections:\n", "projections:\n"+strings.ReplaceAll(projections, "SRC", p.src), 1)
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &isolationRig{opsPipeline: p}
}

// insert writes messages lo..hi with a body of bodyLen characters.
func (r *isolationRig) insert(lo, hi, bodyLen int) {
	r.t.Helper()
	for i := lo; i <= hi; i++ {
		body := fmt.Sprintf("b%d", i)
		body += strings.Repeat("x", max(0, bodyLen-len(body)))
		if err := r.bed.MySQL.Exec(r.t.Context(), fmt.Sprintf("INSERT INTO `%s`.messages (id, sender_id, created_at, body) VALUES (%d, %d, '2026-01-01 00:00:00', '%s')", r.src, i, i%7, body)); err != nil {
			r.t.Fatal(err)
		}
	}
}

// statusOf is the /status entry of projection.
func (r *isolationRig) statusOf(ctx context.Context, projection string) (httpapi.Report, httpapi.ProjectionStatus, error) {
	code, body, err := r.get(ctx, "/status")
	if err != nil || code != http.StatusOK {
		return httpapi.Report{}, httpapi.ProjectionStatus{}, fmt.Errorf("/status: %d %v", code, err)
	}
	var rep httpapi.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		return rep, httpapi.ProjectionStatus{}, err
	}
	for _, ps := range rep.Projections {
		if ps.Name == projection {
			return rep, ps, nil
		}
	}
	return rep, httpapi.ProjectionStatus{}, fmt.Errorf("/status has no projection %s: %s", projection, body)
}

// waitState waits until /status shows projection in state.
func (r *isolationRig) waitState(projection, state string, timeout time.Duration) httpapi.ProjectionStatus {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), timeout)
	defer cancel()
	var last httpapi.ProjectionStatus
	var lastErr error
	if !testbed.Poll(ctx, 300*time.Millisecond, func() bool {
		_, last, lastErr = r.statusOf(ctx, projection)
		return lastErr == nil && last.State == state
	}) {
		r.t.Fatalf("/status: projection %s is %q (%v), want %q within %s; log:\n%s", projection, last.State, lastErr, state, timeout, tail(r.logPath))
	}
	return last
}

// metric is the value of a per-projection gauge.
func (r *isolationRig) metric(name, projection string) float64 {
	r.t.Helper()
	return gauge(r.t, r.scrape(r.t.Context()), name, map[string]string{"projection": projection})
}

// healthz returns /healthz (strict or not): the code and the decoded body.
func (r *isolationRig) healthz(strict bool) (int, map[string]any) {
	r.t.Helper()
	path := "/healthz"
	if strict {
		path += "?strict=1"
	}
	code, body, err := r.get(r.t.Context(), path)
	if err != nil {
		r.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		r.t.Fatalf("%s: %v: %s", path, err, body)
	}
	return code, m
}

// assertDegraded checks /healthz, /metrics and `readside status` while
// projection is broken (state "stopped" or "dead-lettering", gauge the
// metric that says so); wantFix is a part of the fix shown.
func (r *isolationRig) assertDegraded(projection, gaugeName, word, wantFix string) {
	r.t.Helper()
	code, h := r.healthz(false)
	if code != http.StatusOK || h["healthy"] != true || h["degraded"] != true || !strings.Contains(fmt.Sprint(h["stopped_projections"]), projection) {
		r.t.Errorf("/healthz with %s broken: %d %v, want 200, healthy, degraded, naming it", projection, code, h)
	}
	if code, h := r.healthz(true); code != http.StatusServiceUnavailable {
		r.t.Errorf("/healthz?strict=1 with %s broken: %d %v, want 503", projection, code, h)
	}
	if v := r.metric(gaugeName, projection); v != 1 {
		r.t.Errorf("%s{projection=%q} = %v, want 1", gaugeName, projection, v)
	}
	if v := r.metric("readside_projection_stopped", "messages_by_sender"); v != 0 {
		r.t.Errorf("readside_projection_stopped of the healthy projection = %v, want 0", v)
	}
	// Degraded is not unready: every replica would be out of service.
	r.waitReady(time.Minute)
	out, code2 := r.status(r.t)
	if code2 != 1 || !strings.Contains(out, "DEGRADED") || !strings.Contains(out, projection+" "+word) || !strings.Contains(strings.Join(strings.Fields(out), " "), wantFix) {
		r.t.Errorf("readside status with %s broken: exit %d, want 1, DEGRADED, %q and the fix %q:\n%s", projection, code2, projection+" "+word, wantFix, out)
	}
}

// sighup sends SIGHUP and waits for the reload to finish.
func (r *isolationRig) sighup(want string) {
	r.t.Helper()
	before := strings.Count(r.log(), "SIGHUP: reload done")
	if err := r.d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(r.t.Context(), 60*time.Second)
	defer cancel()
	if !testbed.Poll(ctx, 100*time.Millisecond, func() bool { return strings.Count(r.log(), "SIGHUP: reload done") > before }) {
		r.t.Fatalf("no reload after SIGHUP; log:\n%s", tail(r.logPath))
	}
	if !strings.Contains(r.log(), want) {
		r.t.Fatalf("the log does not say %q after SIGHUP:\n%s", want, tail(r.logPath))
	}
}

// sameRows waits until query on the sink returns what query on the source
// returns.
func (r *isolationRig) sameRows(what, srcQuery, readQuery string, timeout time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), timeout)
	defer cancel()
	var want, got string
	if !testbed.Poll(ctx, 500*time.Millisecond, func() bool {
		want, got = testbed.RowsText(r.t, r.bed.MySQL.DB(), srcQuery), testbed.RowsText(r.t, r.bed.MySQL.DB(), readQuery)
		return want == got
	}) {
		r.t.Fatalf("%s: the read table differs from the source after %s:\n%s\nwant:\n%s\nlog:\n%s", what, timeout, got, want, tail(r.logPath))
	}
}

// TestDropColumnStopsOneProjection: two projections on one table; the
// source drops a column only messages_extra projects. messages_extra
// stops alone: the tailer and messages_by_sender keep applying new rows,
// /healthz is degraded, /status and `readside status` name it with the
// reason and the fix, readside_projection_stopped is 1. The user removes
// the column from its columns, `plan --apply` makes the read column
// nullable, SIGHUP: it resumes from its offsets in the sink, applies the
// rows written while it was stopped, and the gauge is 0 again. A restart
// before the fix starts the rest and keeps messages_extra stopped.
func TestDropColumnStopsOneProjection(t *testing.T) {
	const extra = `  messages_extra:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, body: body, extra: extra}
`
	r := newIsolationRig(t, "isodrop", extra)
	ctx := t.Context()
	if err := r.bed.MySQL.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.messages ADD COLUMN extra VARCHAR(20) NOT NULL DEFAULT 'x'", r.src)); err != nil {
		t.Fatal(err)
	}
	r.insert(1, 20, 10)
	r.d = r.start()
	r.waitReady(120 * time.Second)
	r.converge(time.Minute)
	bodies := "SELECT id, body FROM `" + r.src + "`.messages ORDER BY id"
	extraRead := "SELECT id, body FROM `" + r.sink + "`.messages_extra ORDER BY id"
	r.sameRows("before the DROP", bodies, extraRead, time.Minute)

	if err := r.bed.MySQL.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.messages DROP COLUMN extra", r.src)); err != nil {
		t.Fatal(err)
	}
	r.insert(21, 40, 10)
	stopped := r.waitState("messages_extra", "stopped", 2*time.Minute)
	if stopped.StopReason == "" || stopped.Fix == "" {
		t.Errorf("/status of the stopped projection lacks the reason or the fix: %+v", stopped)
	}
	t.Logf("stopped: %s\nfix: %s", stopped.StopReason, stopped.Fix)
	// The tailer and the other projection go on.
	r.insert(41, 60, 10)
	r.converge(2 * time.Minute)
	if !r.d.running() {
		t.Fatalf("readside exited after one projection broke; log:\n%s", tail(r.logPath))
	}
	r.assertDegraded("messages_extra", "readside_projection_stopped", "STOPPED", "fix:")

	// A restart before the fix: it starts, with messages_extra stopped
	// from the start and the rest applying.
	if code := r.d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM with a stopped projection, want 0; log:\n%s", code, tail(r.logPath))
	}
	r.d.start()
	restarted := r.waitState("messages_extra", "stopped", 2*time.Minute)
	if !strings.Contains(restarted.StopReason, "projections.messages_extra.columns.extra") || !strings.Contains(restarted.Fix, "projections.messages_extra") {
		t.Errorf("after a restart, /status of messages_extra: reason %q, fix %q: want the column's key named in both", restarted.StopReason, restarted.Fix)
	}
	r.insert(71, 80, 10)
	r.converge(2 * time.Minute)
	r.assertDegraded("messages_extra", "readside_projection_stopped", "STOPPED", "projections.messages_extra")

	// The fix: the column leaves the projection, plan --apply makes the
	// read column nullable, SIGHUP restarts the projection.
	b, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.cfgPath, []byte(strings.Replace(string(b), "columns: {id: id, body: body, extra: extra}", "columns: {id: id, body: body}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", r.cfgPath)
	if out, err := plan.CombinedOutput(); err != nil {
		t.Fatalf("readside plan --apply: %v\n%s", err, out)
	}
	r.sighup("SIGHUP: restarted a stopped projection")
	r.insert(61, 70, 10)
	r.waitState("messages_extra", "consuming", 2*time.Minute)
	r.sameRows("after the fix and SIGHUP", bodies, extraRead, 2*time.Minute)
	r.converge(time.Minute)
	if v := r.metric("readside_projection_stopped", "messages_extra"); v != 0 {
		t.Errorf("readside_projection_stopped after the resume = %v, want 0", v)
	}
	if code, h := r.healthz(true); code != http.StatusOK || h["degraded"] != false {
		t.Errorf("/healthz?strict=1 after the resume: %d %v, want 200, not degraded", code, h)
	}
	if code := r.d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}

// TestRejectedRowsStopOrDeadLetterAlone: the sink rejects rows of two
// projections (a CHECK constraint added to their read tables by hand; not
// a narrowed column, which the projector would widen back to the source's
// type, sinks/follow.go): by_id_stop, with
// on_error: stop, stops alone; by_id_dlq, with on_error: dlq, dead-letters
// every row and is reported as dead-lettering (status, /healthz degraded,
// readside_projection_all_dead_lettered 1), not healthy. The tailer and
// messages_by_sender keep applying. Dropping the constraint and SIGHUP
// resumes by_id_stop, which then applies what it stopped on.
func TestRejectedRowsStopOrDeadLetterAlone(t *testing.T) {
	const more = `  by_id_stop:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, body: body}
  by_id_dlq:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, body: body}
    on_error: dlq
`
	r := newIsolationRig(t, "isorej", more)
	ctx := t.Context()
	r.insert(1, 10, 10)
	r.d = r.start()
	r.waitReady(120 * time.Second)
	r.converge(time.Minute)
	for _, table := range []string{"by_id_stop", "by_id_dlq"} {
		r.sameRows("before the constraint", "SELECT id, body FROM `"+r.src+"`.messages ORDER BY id", "SELECT id, body FROM `"+r.sink+"`."+table+" ORDER BY id", time.Minute)
		r.sinkExec(ctx, "ALTER TABLE `"+r.sink+"`."+table+" ADD CONSTRAINT short_body CHECK (CHAR_LENGTH(body) <= 12)")
	}
	// Every new body is 40 characters: each row is rejected by both.
	r.insert(11, 10+projector.AllDeadLetteredAfter+20, 40)
	stopped := r.waitState("by_id_stop", "stopped", 2*time.Minute)
	if !strings.Contains(stopped.StopReason, "short_body") || !strings.Contains(stopped.Fix, "on_error: dlq") {
		t.Errorf("/status of by_id_stop: reason %q, fix %q: want the sink's rejection and a fix naming on_error: dlq", stopped.StopReason, stopped.Fix)
	}
	dl := r.waitState("by_id_dlq", "dead-lettering", 2*time.Minute)
	if dl.DeadLetters == nil || dl.DeadLetters.Total < projector.AllDeadLetteredAfter || !dl.DeadLetters.All || dl.Fix == "" {
		t.Errorf("/status of by_id_dlq: %+v, dead letters %+v: want every row dead-lettered and a fix", dl, dl.DeadLetters)
	}
	r.converge(2 * time.Minute)
	if !r.d.running() {
		t.Fatalf("readside exited; log:\n%s", tail(r.logPath))
	}
	r.assertDegraded("by_id_stop", "readside_projection_stopped", "STOPPED", "on_error: dlq")
	r.assertDegraded("by_id_dlq", "readside_projection_all_dead_lettered", "DEAD-LETTERS EVERY ROW", "dead-letter topic")

	r.sinkExec(ctx, "ALTER TABLE `"+r.sink+"`.by_id_stop DROP CONSTRAINT short_body")
	r.sighup("SIGHUP: restarted a stopped projection")
	r.sameRows("by_id_stop after the fix and SIGHUP", "SELECT id, body FROM `"+r.src+"`.messages ORDER BY id", "SELECT id, body FROM `"+r.sink+"`.by_id_stop ORDER BY id", 2*time.Minute)
	if v := r.metric("readside_projection_stopped", "by_id_stop"); v != 0 {
		t.Errorf("readside_projection_stopped of by_id_stop after the resume = %v, want 0", v)
	}
	if code := r.d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}
