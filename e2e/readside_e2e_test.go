package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sourceAndSinkDBs creates a source database named after name and a sink
// database named after name_r on the test bed's MariaDB.
func sourceAndSinkDBs(t *testing.T, bed *testbed.Bed, name string) (src, sink string) {
	t.Helper()
	src, err := bed.MySQL.CreateDatabase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	sink, err = bed.MySQL.CreateDatabase(t.Context(), name+"_r")
	if err != nil {
		t.Fatal(err)
	}
	return src, sink
}

// bedConfigHead is the head of a config on the test bed, up to the
// projections: key: tables captured from its MariaDB under a new
// server_id, topics under prefix and a new number, data_dir, and the one
// sink "reads" in database sinkDB.
func bedConfigHead(bed *testbed.Bed, tables []string, prefix, dataDir, sinkDB string) string {
	return fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%s]
kafka:
  brokers: [%s]
  topic_prefix: %s%d
data_dir: %s
sinks:
  reads:
    dsn: %q
projections:
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), strings.Join(tables, ", "), strings.Join(bed.Kafka.Brokers(), ", "), prefix, rand.IntN(1e6), dataDir, bed.MySQL.AdminDSN()+sinkDB)
}

// readsideBinary builds cmd/readside once per test binary.
func readsideBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		// Inside the test bed's directory: removed with it, and a readside
		// left running would fail the test bed's cleanup check.
		binPath = filepath.Join(testbed.Get(t).Dir(), "readside")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/readside/readside/cmd/readside").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building readside: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// daemon is a readside process under test.
type daemon struct {
	t       *testing.T
	args    []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	starts  int
}

func startDaemon(t *testing.T, logPath string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, args: args, logPath: logPath}
	d.start()
	t.Cleanup(func() {
		if d.running() {
			d.kill9()
		}
		keepFailedLog(t, logPath)
	})
	return d
}

// keepFailedLog copies a failed test's daemon log into $E2E_FAILED_LOGS
// (`make e2e` sets it to .e2e-failed-logs/): the test's temporary
// directory goes with the test, and a failure the test's own message
// cannot explain (a flake under CI load) needs the daemon's story.
func keepFailedLog(t *testing.T, logPath string) {
	dir := os.Getenv("E2E_FAILED_LOGS")
	if dir == "" || !t.Failed() {
		return
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + filepath.Base(logPath)
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		t.Logf("daemon log kept in %s", filepath.Join(dir, name))
	}
}

func (d *daemon) start() {
	d.t.Helper()
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	fmt.Fprintf(logFile, "=== start %s\n", time.Now().Format(time.RFC3339Nano))
	d.starts++
	d.cmd = exec.Command(readsideBinary(d.t), d.args...)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.done = make(chan struct{})
	go func() { _ = d.cmd.Wait(); logFile.Close(); close(d.done) }()
}

func (d *daemon) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (d *daemon) kill9() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop waits until the latest start has got going, sends SIGTERM and
// returns the exit code, failing after timeout.
func (d *daemon) stop(timeout time.Duration) int {
	d.t.Helper()
	code, err := d.term(d.t.Context(), timeout)
	if err != nil {
		d.t.Fatal(err)
	}
	return code
}

// term waits until the latest start has got going (its signal handlers
// are in place once it logs "starting"), sends SIGTERM and returns the
// exit code, or an error if the process outlives timeout (then killed).
// The wait for "starting" ends early with ctx. It reports rather than
// fails, so it can run off the test goroutine.
func (d *daemon) term(ctx context.Context, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	testbed.Poll(ctx, 50*time.Millisecond, func() bool {
		b, _ := os.ReadFile(d.logPath)
		return strings.Count(string(b), "msg=starting")+strings.Count(string(b), `"msg":"starting"`) >= d.starts
	})
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(timeout):
		_ = d.cmd.Process.Kill()
		<-d.done
		return 0, fmt.Errorf("readside did not exit within %s of SIGTERM; log:\n%s", timeout, tail(d.logPath))
	}
	return d.cmd.ProcessState.ExitCode(), nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// killWhile SIGKILLs and restarts d at random 1–3 s intervals until work
// returns, then until at least min kills happened; it returns the count.
func (d *daemon) killWhile(rng *rand.Rand, work <-chan error, minKills int) int {
	d.t.Helper()
	kills := 0
	for done := false; !done; {
		select {
		case err := <-work:
			if err != nil {
				d.t.Fatal(err)
			}
			done = true
		case <-time.After(time.Duration(1000+rng.IntN(2000)) * time.Millisecond):
			d.kill9()
			kills++
			d.start()
		}
	}
	for ; kills < minKills; kills++ { // the work was faster than the schedule
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		d.kill9()
		d.start()
	}
	return kills
}
