package broker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestEmbeddedKeepsCommittedRecords: a topic created explicitly and a
// committed transaction survive a restart of the broker on the same data
// directory, and the broker listens where it was told.
func TestEmbeddedKeepsCommittedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dir, listen := t.TempDir(), freeLoopback(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := StartEmbedded(dir, listen, log)
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr() != listen {
		t.Fatalf("listening on %s, want %s", b.Addr(), listen)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("t1"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		cl.Produce(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: []byte("v")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Close()

	b, err = StartEmbedded(dir, listen, log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rd, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	n := 0
	for n < 10 && ctx.Err() == nil {
		n += rd.PollFetches(ctx).NumRecords()
	}
	if n != 10 {
		t.Fatalf("read %d committed records after a restart, want 10", n)
	}
}

// TestEmbeddedPortTaken: a port in use is an error naming the key.
func TestEmbeddedPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = StartEmbedded(t.TempDir(), ln.Addr().String(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "kafka.embedded_listen") {
		t.Fatalf("err = %v, want one naming kafka.embedded_listen", err)
	}
}
