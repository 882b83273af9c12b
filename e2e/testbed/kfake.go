package testbed

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// startKfake builds e2e/cmd/kfake-broker and runs it as a child process with
// its data under dir, so it can be killed and restarted like a real broker.
func startKfake(ctx context.Context, dir string, detached bool) (*Kafka, error) {
	bin := filepath.Join(dir, "kfake-broker")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/readside/readside/e2e/cmd/kfake-broker")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building kfake-broker: %w\n%s", err, out)
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	n := &brokerNode{id: 1, dir: dir, port: ports[0], detached: detached}
	n.start = func() (*process, error) {
		return startProcess(processSpec{
			name: "kfake", path: bin,
			args:    []string{"--port", strconv.Itoa(n.port), "--data-dir", filepath.Join(dir, "kfake-data")},
			logPath: filepath.Join(dir, "kfake.log"), detached: detached,
		})
	}
	p, err := n.start()
	if err != nil {
		return nil, err
	}
	n.proc = p
	k := &Kafka{Kind: "kfake", nodes: []*brokerNode{n}}
	return k, k.WaitHealthy(ctx, 60*time.Second)
}
