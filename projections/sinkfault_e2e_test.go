package projections_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/sinks"
)

// chaosProxy forwards TCP to target and cuts random connections: some cuts
// land between a COMMIT and its acknowledgement, so the projector sees a
// commit whose outcome it cannot know.
type chaosProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]net.Conn
	cuts  atomic.Int64
}

func newChaosProxy(t *testing.T, target string) *chaosProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &chaosProxy{ln: ln, conns: map[net.Conn]net.Conn{}}
	t.Cleanup(func() { ln.Close(); p.cutAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c] = u
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *chaosProxy) cutOne(rng *rand.Rand) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, u := range p.conns {
		if rng.IntN(2) == 0 {
			c.Close()
			u.Close()
			delete(p.conns, c)
			p.cuts.Add(1)
			return
		}
	}
}

func (p *chaosProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, u := range p.conns {
		c.Close()
		u.Close()
	}
	p.conns = map[net.Conn]net.Conn{}
}

// TestSinkFaults: the projector writes through a proxy that cuts its
// connections at random (lost connections mid-batch and commits whose
// acknowledgement never arrives) while the sink also goes read-only for a
// while (a failover in progress). The projector retries, never advances an
// offset past an unconfirmed commit, and the read table converges to the
// source.
func TestSinkFaults(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	p, _ := prepare(t, bed, cfg, sinkDB) // read table created by the admin
	ctx := t.Context()
	// A sink user without the privilege to write while read_only is on.
	user := "rs_sink_" + strconv.Itoa(rand.IntN(1e6))
	if err := bed.MySQL.Exec(ctx, "CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'", "GRANT ALL ON `"+sinkDB+"`.* TO '"+user+"'@'%'"); err != nil {
		t.Fatal(err)
	}
	proxy := newChaosProxy(t, bed.MySQL.Host+":"+strconv.Itoa(bed.MySQL.Port))
	sink, err := sinks.Open(ctx, user+":pw@tcp("+proxy.ln.Addr().String()+")/"+sinkDB)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	runTailer(t, bed, cfg)
	defer startProjector(t, p, sink, cfg.Kafka.Brokers)()

	cctx, stopChaos := context.WithCancel(ctx)
	var chaos sync.WaitGroup
	chaos.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for cctx.Err() == nil {
			time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
			proxy.cutOne(rng)
		}
	})
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	writeMessages(t, bed, src, seed, 1500)
	if err := bed.MySQL.Exec(ctx, "SET GLOBAL read_only = ON"); err != nil {
		t.Fatal(err)
	}
	// A failure below must not leave the shared server read-only for the
	// package's next tests.
	t.Cleanup(func() { _ = bed.MySQL.Exec(context.Background(), "SET GLOBAL read_only = OFF") })
	// The sink user really cannot write now.
	if _, err := sink.DB().ExecContext(ctx, "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES ('probe', 'probe', 0, 0)"); err == nil || !strings.Contains(err.Error(), "1290") {
		t.Fatalf("a write by the sink user during read_only gave %v, want error 1290", err)
	}
	writeMessages(t, bed, src, seed+1, 1000) // the admin may still write the source
	time.Sleep(3 * time.Second)
	if err := bed.MySQL.Exec(ctx, "SET GLOBAL read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	writeMessages(t, bed, src, seed+2, 1500)
	time.Sleep(2 * time.Second)
	stopChaos()
	chaos.Wait()
	t.Logf("%d sink connections cut during the run; sink read-only for 3s", proxy.cuts.Load())
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkDB+"`.messages_by_sender")
}
