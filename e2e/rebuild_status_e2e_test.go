package e2e

// The daemon's /status, its page and `readside status` show a rebuild that
// `readside replay --rebuild` runs in a process of its own, read from what
// the rebuild stores in the sink.

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/httpapi"
	"github.com/readside/readside/internal/testsync"
)

// TestStatusShowsRebuild: a rebuild held after its swap (the test-only
// pause RS_TEST_REBUILD_PAUSE) appears in /status as kind rebuild, phase
// catching-up, with the shadow identity's applied offsets against the
// topic's end, on the page and in `readside status`; killed there it stays
// (its row is the sink's, not the process's); a rerun finishes it and it
// is gone from /status.
func TestStatusShowsRebuild(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "rbstat", bed.Kafka.Brokers(), "")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	if err := p.write(ctx, rand.New(rand.NewPCG(seedFromEnv(t), 41)), 300); err != nil {
		t.Fatal(err)
	}
	p.converge(time.Minute)

	out := &testsync.Buffer{}
	cmd := exec.Command(readsideBinary(t), "replay", "-c", p.cfgPath, "--projection", "messages_by_sender", "--rebuild")
	cmd.Env = append(os.Environ(), "RS_TEST_REBUILD_PAUSE=catching-up")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })

	shown := func(r httpapi.RebuildStatus) bool {
		return r.Projection == "messages_by_sender" && r.Kind == "rebuild" && r.Phase == "catching-up" && r.Applied > 0 && r.End >= r.Applied && r.Percent > 0
	}
	rep := p.waitStatus(90*time.Second, "the paused rebuild in catching-up with its offsets", func(r httpapi.Report) bool {
		return len(r.Rebuilds) == 1 && shown(r.Rebuilds[0])
	}, out)
	t.Logf("/status rebuilds: %+v", rep.Rebuilds)
	_, page, err := p.get(ctx, "/")
	if err != nil || !strings.Contains(string(page), `id="rebuilds"`) || !strings.Contains(string(page), `<span class="badge info">catching-up</span>`) {
		t.Errorf("the status page lacks the rebuild (err %v):\n%s", err, page)
	}
	if st, _ := p.status(t); !strings.Contains(st, "rebuild messages_by_sender: catching-up, ") {
		t.Errorf("readside status lacks the rebuild line:\n%s", st)
	}

	// Killed at the pause: the sink still records it unfinished.
	_ = cmd.Process.Kill()
	<-done
	time.Sleep(1500 * time.Millisecond) // past the report's cache
	p.waitStatus(10*time.Second, "the killed rebuild, still unfinished", func(r httpapi.Report) bool {
		return len(r.Rebuilds) == 1 && shown(r.Rebuilds[0])
	}, out)

	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if got, code := p.replayCmd(rctx, "--projection", "messages_by_sender", "--rebuild"); code != 0 {
		t.Fatalf("the rerun of the rebuild failed (exit %d):\n%s", code, got)
	}
	p.waitStatus(10*time.Second, "no rebuild once it finished", func(r httpapi.Report) bool {
		return len(r.Rebuilds) == 0 && r.RebuildsError == ""
	}, out)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// waitStatus polls /status until ok holds of it; out is the output of the
// command the test runs beside the daemon, shown on failure.
func (p *opsPipeline) waitStatus(timeout time.Duration, what string, ok func(httpapi.Report) bool, out *testsync.Buffer) httpapi.Report {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), timeout)
	defer cancel()
	var rep httpapi.Report
	var last, lastErr string
	if !testbed.Poll(ctx, 200*time.Millisecond, func() bool {
		_, body, err := p.get(ctx, "/status")
		if err != nil {
			lastErr = err.Error()
			return false
		}
		last = string(body)
		rep = httpapi.Report{}
		return json.Unmarshal(body, &rep) == nil && ok(rep)
	}) {
		p.t.Fatalf("/status did not show %s within %s: %s (last error: %s)\ncommand output:\n%s\ndaemon log:\n%s", what, timeout, last, lastErr, out.String(), tail(p.logPath))
	}
	return rep
}
