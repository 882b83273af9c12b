package e2e

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestDaemonKill9WithProjection: `readside run` (tailer and projector in
// one process) is killed with SIGKILL again and again while a seeded
// workload inserts, edits, re-keys (sender changes move rows in the read
// table), deletes and re-inserts messages. After the last restart the
// read table messages_by_sender equals the SQL expectation on the source.
func TestDaemonKill9WithProjection(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "chatk", bed.Kafka.Brokers(), "")
	d := p.start()
	waitForCheckpoint(t, bed, p.prefix)

	seed := seedFromEnv(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	wctx, stopWriter := context.WithCancel(t.Context())
	werr := make(chan error, 1)
	ops := envInt("E2E_PROJECTION_OPS", 20_000)
	go func() { werr <- p.write(wctx, rng, ops) }()
	kills := d.killWhile(rand.New(rand.NewPCG(seed, 8)), werr, 5) // its own rng: the writer uses rng
	stopWriter()
	t.Logf("%d writes, %d SIGKILLs of readside run", ops, kills)

	t.Logf("read table equals the source: %d rows", p.converge(2*time.Minute))
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(p.logPath))
	}
}
