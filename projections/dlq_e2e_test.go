package projections_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// TestDeadLetters: a row the sink rejects (here a CHECK constraint the
// operator put on the read table) goes to the dead-letter topic with the
// reason under on_error: dlq, and every other row is applied; under
// on_error: stop the projector stops and names the cause.
func TestDeadLetters(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	d := cfg.Projections["messages_by_sender"]
	d.OnError = "dlq"
	cfg.Projections["messages_by_sender"] = d
	p, sink := prepare(t, bed, cfg, sinkDB)
	ctx := t.Context()
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+sinkDB+"`.messages_by_sender ADD CONSTRAINT no_poison CHECK (body NOT LIKE '%poison%')"); err != nil {
		t.Fatal(err)
	}
	runTailer(t, bed, cfg)
	table := "`" + src + "`.messages"
	var stmts []string
	for i := range 300 {
		body := "fine"
		if i%100 == 7 {
			body = "poison"
		}
		stmts = append(stmts, "INSERT INTO "+table+" (id, sender_id, created_at, body) VALUES ("+itoa(i)+", "+itoa(i%9)+", '2026-01-01 00:00:00', '"+body+"')")
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	pr, err := projector.New(p, sink, projector.Options{Brokers: cfg.Kafka.Brokers,
		Rejected: sinks.Rejected, Log: logger()})
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pr.Run(pctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("projector: %v", err)
		}
	}()
	// Every row but the poisoned ones arrives.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+sinkDB+"`.messages_by_sender").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 297 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read table has %d rows, want 297", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Kafka.Brokers...), kgo.ConsumeTopics(p.DLQTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	deadline = time.Now().Add(30 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
		got = append(got, cl.PollFetches(fctx).Records()...)
		fcancel()
	}
	if len(got) != 3 {
		t.Fatalf("dead-letter topic has %d records, want the 3 poisoned rows", len(got))
	}
	for _, r := range got {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if !strings.Contains(string(r.Value), `"poison"`) || !strings.Contains(h["readside.error"], "no_poison") || h["readside.topic"] != p.Topic {
			t.Errorf("dead letter %s with headers %v: want the poisoned event, the constraint named and its origin", r.Value, h)
		}
	}
	t.Logf("3 rejected rows dead-lettered with reason %q; 297 applied", firstHeader(got[0], "readside.error"))
	// Created to hold an event of kafka.max_message_bytes (its default,
	// 1 MiB, here) with the headers, set on the topic rather than left to
	// the brokers' default (the test bed's is 16 MiB, a real cluster's 1 MiB).
	if n, own := topicMaxMessageBytes(t, cfg.Kafka.Brokers, p.DLQTopic); !own || n < 1<<20+1024 {
		t.Errorf("dead-letter topic created with max.message.bytes %d (set on the topic: %v), want it set to room for kafka.max_message_bytes (%d) and the headers", n, own, 1<<20)
	}

	// The same under on_error: stop: the projector stops and says why.
	if err := bed.MySQL.Exec(ctx, "TRUNCATE `"+sinkDB+"`.messages_by_sender", "DELETE FROM `"+sinkDB+"`._readside_offsets"); err != nil {
		t.Fatal(err)
	}
	p.OnError = "stop"
	stopper, err := projector.New(p, sink, projector.Options{Brokers: cfg.Kafka.Brokers,
		Rejected: sinks.Rejected, Log: logger()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	done <- nil
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	err = stopper.Run(sctx)
	if err == nil || !strings.Contains(err.Error(), "no_poison") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("on_error: stop gave %v, want a stop naming the constraint", err)
	}
	t.Logf("on_error: stop: %v", err)
}

func firstHeader(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestDeadLetterOfALargeRow: with kafka.max_message_bytes at 4 MiB, a
// rejected row of 1.5 MiB (over the brokers' default message size) is
// dead-lettered, whole, and the rows around it are applied: the
// dead-letter topic is created to hold what readside publishes.
func TestDeadLetterOfALargeRow(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	ctx := t.Context()
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.messages MODIFY body MEDIUMTEXT CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	cfg.Kafka.MaxMessageBytes = 4 << 20
	d := cfg.Projections["messages_by_sender"]
	d.OnError = "dlq"
	cfg.Projections["messages_by_sender"] = d
	p, sink := prepare(t, bed, cfg, sinkDB)
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+sinkDB+"`.messages_by_sender ADD CONSTRAINT no_poison CHECK (body NOT LIKE 'poison%')"); err != nil {
		t.Fatal(err)
	}
	// The dead-letter topic exists already, at 1 MiB (an older
	// readside's, on brokers with Kafka's default size; the test bed's
	// allow 16 MiB): the projector raises it.
	dlq := p.DLQTopic
	adm, err := kgo.NewClient(kgo.SeedBrokers(cfg.Kafka.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	mib := strconv.Itoa(1 << 20)
	if resp, err := kadm.NewClient(adm).CreateTopic(ctx, 1, -1, map[string]*string{"max.message.bytes": &mib}, dlq); err != nil || resp.Err != nil {
		t.Fatalf("creating the dead-letter topic at 1 MiB: %v %v", err, resp.Err)
	}
	runTailer(t, bed, cfg)
	pr, err := projector.New(p, sink, projector.Options{Brokers: cfg.Kafka.Brokers,
		MaxMessageBytes: cfg.Kafka.MaxMessageBytes, Rejected: sinks.Rejected, Log: logger()})
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pr.Run(pctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("projector: %v", err)
		}
	}()
	// Random letters: producers compress, and a repetitive value would
	// fit in 1 MiB compressed.
	const big = 3 << 19 // 1.5 MiB
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	body := []byte("poison")
	for range big {
		body = append(body, letters[rand.IntN(len(letters))])
	}
	table := "`" + src + "`.messages"
	for id, b := range []string{"before", string(body), "after"} {
		if _, err := bed.MySQL.DB().ExecContext(ctx, "INSERT INTO "+table+" (id, sender_id, created_at, body) VALUES (?, 1, '2026-01-01 00:00:00', ?)", id+1, b); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var n int
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+sinkDB+"`.messages_by_sender").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		select {
		case err := <-done:
			done <- nil
			t.Fatalf("the projector stopped with %d rows applied: %v", n, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("read table has %d rows after 90s, want the 2 around the rejected one", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Kafka.Brokers...), kgo.ConsumeTopics(p.DLQTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	deadline = time.Now().Add(30 * time.Second)
	for len(got) < 1 && time.Now().Before(deadline) {
		fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
		got = append(got, cl.PollFetches(fctx).Records()...)
		fcancel()
	}
	if len(got) != 1 || len(got[0].Value) < big || !strings.Contains(firstHeader(got[0], "readside.error"), "no_poison") {
		t.Fatalf("dead-letter topic has %d records (want the rejected row's event of over %d bytes, the constraint named)", len(got), big)
	}
	n, _ := topicMaxMessageBytes(t, cfg.Kafka.Brokers, dlq)
	if n < cfg.Kafka.MaxMessageBytes+1024 {
		t.Errorf("dead-letter topic's max.message.bytes is %d, want room for kafka.max_message_bytes (%d) and the headers", n, cfg.Kafka.MaxMessageBytes)
	}
	t.Logf("a %d-byte rejected event dead-lettered (the topic raised to max.message.bytes %d); the rows around it applied", len(got[0].Value), n)
}

// topicMaxMessageBytes is a topic's max.message.bytes, and whether it is
// the topic's own (not the brokers' default).
func topicMaxMessageBytes(t *testing.T, brokers []string, topic string) (int, bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			n, err := strconv.Atoi(*c.Value)
			if err != nil {
				t.Fatal(err)
			}
			return n, c.Source == kmsg.ConfigSourceDynamicTopicConfig
		}
	}
	t.Fatalf("topic %s has no max.message.bytes", topic)
	return 0, false
}
