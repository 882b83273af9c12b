package cdc

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/readside/readside/internal/compression"
)

// TestPublisherAfterUnconfirmedCommit: a commit whose EndTxn gets no
// usable answer — what a broker going away in the middle of the commit
// gives, which e2e TestDaemonThroughBrokerRestart meets only when the
// broker stops at that moment — is followed, as in the tailer, by the
// stream's abort and a resume. The next transaction must begin and
// commit. (franz-go keeps the client inside the failed transaction until
// it is aborted; the publisher used to abort only transactions it counted
// as open, so every later BeginTransaction failed and the tailer retried
// for ever without publishing.) The broker is kfake in this process: its
// request hook is the one way to fail exactly that EndTxn.
func TestPublisherAfterUnconfirmedCommit(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events", "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	failed := false
	c.ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.EndTxnRequest)
		if failed || !req.Commit {
			return nil, nil, false
		}
		failed = true
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.UnknownServerError.Code // the outcome stays unknown to the client
		return resp, nil, true
	})
	logger := kslog.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	p, err := newPublisher(c.ListenAddrs(), "readside-tailer-test", "checkpoints", 1<<20, compression.Option("none"), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// One stream, as stream.run and Tailer.run drive the publisher: load
	// the checkpoint, produce, commit; on an error, abort.
	stream := func(value string) error {
		if _, _, err := p.loadCheckpoint(ctx); err != nil {
			return err
		}
		err := p.produce(ctx, &kgo.Record{Topic: "events", Key: []byte("k"), Value: []byte(value)})
		if err == nil {
			err = p.commit(ctx, Checkpoint{LastVersion: 1})
		}
		if err != nil {
			return p.abort(ctx, err)
		}
		return nil
	}
	if err := stream("first"); err == nil {
		t.Fatal("the commit whose EndTxn failed reported success")
	} else {
		t.Logf("first stream, as expected: %v", err)
	}
	if err := stream("second"); err != nil {
		t.Fatalf("the stream after an unconfirmed commit: %v", err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < 1 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 1 || got[0] != "second" {
		t.Fatalf("read committed: %q, want only the second transaction's record", got)
	}
}

// TestPublisherInitFencedRenews: an InitProducerID answered
// PRODUCER_FENCED — what a client re-initializing with the epoch it had
// gets once the coordinator bumped that epoch aborting its transaction
// during a broker restart (e2e TestFaultsUnderSteadyLoad met it, and the
// tailer exited taking it for a second instance) — is followed by a new
// client, whose init fences every older session and succeeds. A second
// fence in a row is returned (the tailer stops on it, as before).
func TestPublisherInitFencedRenews(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events", "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fences := 0
	toFence := 1
	c.ControlKey(int16(kmsg.InitProducerID), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if fences >= toFence {
			return nil, nil, false
		}
		fences++
		resp := kreq.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerr.ProducerFenced.Code
		return resp, nil, true
	})
	logger := kslog.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	p, err := newPublisher(c.ListenAddrs(), "readside-tailer-test", "checkpoints", 1<<20, compression.Option("none"), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, _, err := p.loadCheckpoint(ctx); err != nil {
		t.Fatalf("init fenced once: %v (want a new client's init to succeed)", err)
	}
	if fences != 1 {
		t.Fatalf("%d fenced inits, want 1", fences)
	}
	if err := p.produce(ctx, &kgo.Record{Topic: "events", Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatalf("produce after the renewed init: %v", err)
	}
	if err := p.commit(ctx, Checkpoint{LastVersion: 1}); err != nil {
		t.Fatalf("commit after the renewed init: %v", err)
	}

	q, err := newPublisher(c.ListenAddrs(), "readside-tailer-test2", "checkpoints", 1<<20, compression.Option("none"), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { q.Close() }()
	fences, toFence = 0, 2
	if _, _, err := q.loadCheckpoint(ctx); err == nil || !fenced(err) {
		t.Fatalf("init fenced twice in a row: %v, want the fence returned", err)
	}
}
