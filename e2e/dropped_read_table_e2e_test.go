package e2e

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestDroppedReadTable: a read table dropped after readside filled it.
// Created again and applied on from the projection's stored offsets, it
// held only the rows changed after the drop, and the daemon said nothing.
// Now the projection stops alone, naming the table and the fix; `check`
// lists it and `plan --apply` refuses to create it; the table stays
// absent until `readside replay --rebuild` fills it from the topics, after which SIGHUP resumes the projection and
// the read table equals the source.
func TestDroppedReadTable(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "dropped", bed.Kafka.Brokers(), "")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	p.insertRange(ctx, 1, 40, "a")
	p.converge(time.Minute)

	p.sinkExec(ctx, "DROP TABLE {read}")
	p.insertRange(ctx, 41, 45, "b")
	refusal := "the read table messages_by_sender of projection messages_by_sender does not exist on sink reads (shard -), but the shard holds the offsets projection messages_by_sender applied to it"
	// The running projector meets the drop at its next batch and stops;
	// SIGHUP restarts it, which must not create the table again.
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		return strings.Contains(p.log(), "projection stopped"), "the projector did not stop at the dropped table; log:\n" + tail(p.logPath)
	})
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		return strings.Contains(p.log(), refusal) && strings.Contains(p.log(), "readside replay --projection messages_by_sender --rebuild"),
			"no refusal naming the dropped table and the rebuild; log:\n" + tail(p.logPath)
	})
	if n, err := p.count(ctx, "`"+p.sink+"`.messages_by_sender"); err == nil {
		t.Fatalf("the dropped read table was created again (%d rows): it would miss every row applied before the drop", n)
	}
	if out, code := p.check(t); code == 0 || !strings.Contains(out, refusal) {
		t.Errorf("readside check exited %d without naming the dropped table:\n%s", code, out)
	}

	plan := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", p.cfgPath)
	out, _ := plan.CombinedOutput()
	if code := plan.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), refusal) {
		t.Errorf("readside plan --apply exited %d without naming the dropped table:\n%s", code, out)
	}
	if n, err := p.count(ctx, "`"+p.sink+"`.messages_by_sender"); err == nil {
		t.Fatalf("readside plan --apply created the dropped read table again (%d rows)", n)
	}

	if out, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--rebuild", "--drop-old"); code != 0 {
		t.Fatalf("readside replay --rebuild of a dropped read table exited %d:\n%s", code, out)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.insertRange(ctx, 46, 50, "c")
	if got := p.converge(time.Minute); got != 50 {
		t.Errorf("the source holds %d rows, want 50", got)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
