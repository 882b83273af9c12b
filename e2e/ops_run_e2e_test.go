package e2e

import (
	"os"
	"regexp"
	"time"
)

// opsRun is readside running on an opsPipeline's config, which the test
// stops and starts again itself.
type opsRun struct {
	*daemon
	p       *opsPipeline
	stopped bool
}

// run starts readside on p's config and waits until it is ready. The
// test's end stops it with SIGTERM unless the test stopped it last.
func (p *opsPipeline) run() *opsRun {
	p.t.Helper()
	r := &opsRun{daemon: p.start(), p: p}
	p.t.Cleanup(func() {
		if !r.stopped {
			r.stop(30 * time.Second)
		}
	})
	p.waitReady(90 * time.Second)
	return r
}

// stopClean stops readside with SIGTERM and fails the test unless it
// exits 0.
func (r *opsRun) stopClean() {
	r.p.t.Helper()
	r.stopped = true
	if code := r.stop(30 * time.Second); code != 0 {
		r.p.t.Fatalf("exit %d after SIGTERM; log:\n%s", code, tail(r.p.logPath))
	}
}

// restart starts readside again after stopClean and waits until it is
// ready.
func (r *opsRun) restart() {
	r.p.t.Helper()
	r.stopped = false
	r.start()
	r.p.waitReady(90 * time.Second)
}

// serverID is the source.server_id of p's config: the tailer's key in the
// snapshot request and failure tables.
func (p *opsPipeline) serverID() string {
	p.t.Helper()
	cfg, err := os.ReadFile(p.cfgPath)
	if err != nil {
		p.t.Fatal(err)
	}
	return regexp.MustCompile(`server_id: (\d+)`).FindStringSubmatch(string(cfg))[1]
}
