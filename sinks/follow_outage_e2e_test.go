package sinks_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/sinks"
)

// TestFollowSchemaRidesOutSinkOutage: a new table shape is compared with
// the read tables whenever it arrives (projector/schemafollow.go), the
// sink possibly away then; FollowSchema waits for it, as a batch does,
// instead of failing the projection on the first refused connection.
func TestFollowSchemaRidesOutSinkOutage(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "fout", "id INT PRIMARY KEY, v VARCHAR(20)")
	p, _ := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	// The source widens v: the read table's column is to follow.
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.t MODIFY v VARCHAR(40)"); err != nil {
		t.Fatal(err)
	}
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	fw := newForwarder(t, bed.MySQL.Host+":"+strconv.Itoa(bed.MySQL.Port))
	dsn := strings.Replace(bed.MySQL.AdminDSN(), "tcp("+bed.MySQL.Host+":"+strconv.Itoa(bed.MySQL.Port)+")", "tcp("+fw.addr+")", 1)
	if dsn == bed.MySQL.AdminDSN() {
		t.Fatalf("the admin DSN %q names no tcp(host:port) to route through the forwarder", dsn)
	}
	sink, err := sinks.OpenSharded(ctx, "s", config.Sink{DSN: config.Secret(dsn + sinkDB)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()

	fw.down()
	done := make(chan error, 1)
	var ran int
	go func() {
		r, _, err := sink.FollowSchema(ctx, p, types)
		ran = len(r)
		done <- err
	}()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("FollowSchema returned while the sink was away: %v", err)
	default:
	}
	fw.up()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FollowSchema after the sink came back: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("FollowSchema did not return within a minute of the sink coming back")
	}
	if ran != 1 {
		t.Errorf("%d ALTERs ran, want 1 (v widened)", ran)
	}
	if got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '"+sinkDB+"' AND TABLE_NAME = 't_copy' AND COLUMN_NAME = 'v'"); got != "varchar(40)|\n" {
		t.Errorf("read column v is %q, want varchar(40)", got)
	}
}

// forwarder relays TCP connections to target on a fixed address; down
// closes the listener and every relayed connection, up listens again.
type forwarder struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newForwarder(t *testing.T, target string) *forwarder {
	f := &forwarder{t: t, target: target, addr: "127.0.0.1:0"}
	f.up()
	t.Cleanup(f.down)
	return f
}

func (f *forwarder) up() {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.ln, f.addr = ln, ln.Addr().String()
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, s)
			f.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

func (f *forwarder) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}
