package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one server the test bed started: a MariaDB, a Kafka node or a
// kfake broker. It runs in its own process group so a kill reaches every
// child the server forks, and (in test mode) with PDEATHSIG so that a test
// binary that dies without cleaning up does not leave servers behind.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when Wait returned
	waitErr error
}

// processSpec says how to start a process.
type processSpec struct {
	name     string
	path     string
	args     []string
	env      []string // appended to os.Environ()
	logPath  string   // stdout and stderr go here
	dir      string   // working directory; empty for the caller's
	detached bool     // true for `testbed up`: survive the parent, no PDEATHSIG
}

func startProcess(spec processSpec) (*process, error) {
	logFile, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", spec.name, err)
	}
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Env = append(os.Environ(), spec.env...)
	cmd.Dir = spec.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if spec.detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", spec.name, spec.path, err)
	}
	p := &process{name: spec.name, logPath: spec.logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the whole process group and waits for the exit.
func (p *process) kill() error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s (pid %d) still running 30s after SIGKILL", p.name, p.pid())
	}
}

// stop sends SIGTERM and waits up to grace, then SIGKILLs.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return p.kill()
	}
}

// logTail returns the last lines of the process log, for error messages.
func (p *process) logTail() string { return fileTail(p.logPath, 20) }

func fileTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// pidAlive reports whether a process with this pid still exists (and is not
// a zombie waiting for its parent).
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// All listeners are held open until every port is chosen so the kernel does
// not hand the same port out twice.
var portMu sync.Mutex

func freePorts(n int) ([]int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitTCP waits until addr accepts connections, the process exits, or the
// deadline passes.
func waitTCP(p *process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited before listening on %s (%v); log:\n%s", p.name, addr, p.waitErr, p.logTail())
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not listening on %s after %s", p.name, addr, timeout)
}

// SamplePeakRSS polls a process's resident set size every 100ms until ctx
// is done and returns the largest seen, in bytes. Tests and benchmarks use
// it to show memory stays bounded.
func SamplePeakRSS(ctx context.Context, pid int) int64 {
	var peak int64
	for {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					peak = max(peak, kb<<10)
				}
			}
		}
		select {
		case <-ctx.Done():
			return peak
		case <-time.After(100 * time.Millisecond):
		}
	}
}
