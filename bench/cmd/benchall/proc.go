package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/e2e/testbed"
)

// proc is a readside process under test: its CPU time is read from
// /proc/<pid>/stat and its peak RSS sampled while it runs.
type proc struct {
	cmd      *exec.Cmd
	httpAddr string
	peak     chan int64
	stop     context.CancelFunc
}

func startReadside(bin, cfgPath, role, logPath, httpAddr string) (*proc, error) {
	if logDir != "" {
		logPath = filepath.Join(logDir, filepath.Base(logPath))
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--role", role, "-c", cfgPath, "--http", httpAddr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if readsideEnv != "" || heapDir != "" {
		cmd.Env = append(os.Environ(), strings.Fields(readsideEnv)...)
	}
	if heapDir != "" {
		cmd.Env = append(cmd.Env, "READSIDE_HTTP__PPROF=true")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &proc{cmd: cmd, httpAddr: httpAddr, peak: make(chan int64, 1), stop: cancel}
	go func() { p.peak <- testbed.SamplePeakRSS(ctx, cmd.Process.Pid) }()
	if heapDir != "" {
		go keepLargestHeap(ctx, cmd.Process.Pid, httpAddr, filepath.Join(heapDir, fmt.Sprintf("%s-%d.heap", role, cmd.Process.Pid)))
		go func() { // and a CPU profile from -profile-after on
			time.Sleep(profileAfter)
			if prof, err := httpGet(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", httpAddr, profileSeconds)); err == nil {
				_ = os.WriteFile(filepath.Join(heapDir, fmt.Sprintf("%s-%d.cpu", role, cmd.Process.Pid)), prof, 0o644)
			}
		}()
	}
	return p, nil
}

// keepLargestHeap samples the process's resident memory every 200 ms
// (/proc, which costs the process nothing) and writes its heap profile to
// path whenever that is a new largest, so the profile shows what held
// memory at the peak RSS the bench reports rather than at the end. RSS
// comes from /proc, not from the text heap profile (?debug=1): formatting
// every sampled stack took ~20% of the process's CPU in a latency step's
// profile (bench/results/history/tuning-log.md, entry 34).
func keepLargestHeap(ctx context.Context, pid int, addr, path string) {
	var largest float64
	for ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		rss := currentRSS(pid)
		if rss <= largest {
			continue
		}
		if prof, err := httpGet(ctx, "http://"+addr+"/debug/pprof/heap"); err == nil {
			largest = rss
			_ = os.WriteFile(path, prof, 0o644)
		}
	}
}

func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// cpuSeconds is the process's user+system CPU time so far.
func (p *proc) cpuSeconds() float64 {
	return procCPU(p.cmd.Process.Pid)
}

func procCPU(pid int) float64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// metric reads the sum of a metric's series from the process's
// /metrics (a name with its first labels, `m{phase="apply"`, picks those
// series: scrape); 0 when it cannot be read.
func (p *proc) metric(name string) float64 {
	v, err := scrape(context.Background(), p.httpAddr, name)
	if err != nil {
		return 0
	}
	return v[0]
}

// end stops the process (SIGTERM, then SIGKILL after 20 s) and returns its
// peak RSS in MiB.
func (p *proc) end() float64 {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.stop()
	return float64(<-p.peak) / (1 << 20)
}

func freeAddr() string {
	l, err := (&net0{}).listen()
	if err != nil {
		return "127.0.0.1:0"
	}
	return l
}

// loadavg is the 1-minute load average, recorded with each measurement.
func loadavg() float64 { return benchio.Load1() }

// waitQuiet waits up to max for the 1-minute load to fall below limit and
// returns the load it settled on.
func waitQuiet(limit float64, maxWait time.Duration) float64 {
	deadline := time.Now().Add(maxWait)
	for loadavg() >= limit && time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
	}
	return loadavg()
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

type net0 struct{}

func (net0) listen() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
