package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestIdleProjectorFollowsAReshard: with the source quiet, the daemon's
// projector learns of a reshard's cutover between polls (not at a next
// batch that never comes): it follows the new generation within seconds,
// and a replay requested on the new sink right after the reshard is
// taken.
func TestIdleProjectorFollowsAReshard(t *testing.T) {
	rb := newReshardBed(t, "rsidle")
	logPath := filepath.Join(rb.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", rb.cfgPath)
	ctx := t.Context()
	rb.insertMessages(300, 53)
	rb.readRows([]int{0, 1}, []string{rb.dbs[0], rb.dbs[1]}, "TRUE", 300, logPath)

	// From here on the source takes no write.
	run := rb.startReshard("", "--cleanup")
	select {
	case <-run.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the reshard did not finish:\n%s", run.out.String())
	}
	if code := run.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("reshard exit %d:\n%s", code, run.out.String())
	}
	follows := "projection messages_by_sender follows routing generation 1 on sink reads3"
	testbed.Eventually(t, 20*time.Second, func() (bool, string) {
		l, _ := os.ReadFile(logPath)
		return strings.Contains(string(l), follows), "the idle daemon has not followed the reshard; log:\n" + tail(logPath)
	})
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	replay := exec.CommandContext(rctx, readsideBinary(t), "replay", "-c", rb.cfgPath, "--projection", "messages_by_sender", "--from", "earliest", "--timeout", "30s")
	if out, err := replay.CombinedOutput(); err != nil {
		t.Fatalf("a replay right after the reshard, the source quiet: %v\n%s", err, out)
	}
	rb.verifyEqual(rb.projection())
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d; log:\n%s", code, tail(logPath))
	}
}
