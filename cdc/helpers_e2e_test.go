package cdc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// testEvent is a decoded change envelope (docs/events.md).
type testEvent struct {
	Op      string          `json:"op"`
	Version uint64          `json:"version"`
	DB      string          `json:"db"`
	Table   string          `json:"table"`
	Key     json.RawMessage `json:"key"`
	Before  map[string]any  `json:"before"`
	After   map[string]any  `json:"after"`
	Source  map[string]any  `json:"source"`
	Txn     map[string]any  `json:"txn"`
	Schema  *testSchema     `json:"schema"`
	raw     []byte
	offset  int64
	part    int32
	recKey  string
}

type testSchema struct {
	Version string            `json:"version"`
	Columns map[string]string `json:"columns"`
}

// tailerConfig is a config for a tailer on the test bed capturing tables.
func tailerConfig(t *testing.T, bed *testbed.Bed, tables ...string) config.Config {
	t.Helper()
	cfg := bed.Config("", tables...)
	cfg.Kafka.TopicPrefix = "t" + strings.ReplaceAll(t.Name(), "/", "_")
	cfg.Kafka.Partitions = 3
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("E2E_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// sectionsOf is the tailer's part of cfg, as readside run hands it over.
func sectionsOf(cfg config.Config) Config {
	return Config{Source: cfg.Source, Kafka: cfg.Kafka, Cuts: cfg.TransactionalSinks()}
}

// startTailer runs a tailer in the background until the test ends.
func startTailer(t *testing.T, cfg config.Config, opts ...Option) (stop func() error) {
	t.Helper()
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	var stopped bool
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("tailer: %v", err)
		}
	})
	return stop
}

// consumer reads a topic read-committed from the start.
type consumer struct {
	t  *testing.T
	cl *kgo.Client
}

func newConsumer(t *testing.T, bed *testbed.Bed, topics ...string) *consumer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &consumer{t: t, cl: cl}
}

// next returns the next n change events (tombstones are checked and
// skipped), failing the test after timeout.
func (c *consumer) next(n int, timeout time.Duration) []testEvent {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), timeout)
	defer cancel()
	var out []testEvent
	for len(out) < n {
		fetches := c.cl.PollRecords(ctx, n-len(out))
		if ctx.Err() != nil {
			c.t.Fatalf("got %d of %d events before the timeout", len(out), n)
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				c.t.Fatalf("fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		out = append(out, decodeFetches(c.t, fetches)...)
	}
	return out
}

// decodeFetches decodes the change events of fetched records, skipping
// tombstones.
func decodeFetches(t *testing.T, fetches kgo.Fetches) []testEvent {
	t.Helper()
	var out []testEvent
	fetches.EachRecord(func(r *kgo.Record) {
		if r.Value == nil { // tombstone
			return
		}
		var e testEvent
		dec := json.NewDecoder(bytes.NewReader(r.Value))
		dec.UseNumber() // keep 64-bit integers and decimals exact
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("record %s/%d@%d is not a valid envelope: %v\n%s", r.Topic, r.Partition, r.Offset, err, r.Value)
		}
		e.raw, e.offset, e.part, e.recKey = r.Value, r.Offset, r.Partition, string(r.Key)
		out = append(out, e)
	})
	return out
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// privateSourceTable starts a private MariaDB (opts), creates a database
// named from dbPrefix with the table createTable (its %s is the database)
// and returns the source, the database, a tailer config capturing the
// table and run, which starts a tailer and waits until it is streaming.
// run reads *cfg when called: tests change the config between runs.
func privateSourceTable(t *testing.T, bed *testbed.Bed, name, dbPrefix, createTable string, opts testbed.MariaDBOptions) (src *testbed.MySQL, db string, cfg *config.Config, run func() (stop func() error)) {
	t.Helper()
	ctx := t.Context()
	src, _ = startPrivate(t, name, opts)
	db, err := src.CreateDatabase(ctx, dbPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Exec(ctx, fmt.Sprintf(createTable, db)); err != nil {
		t.Fatal(err)
	}
	c := tailerConfig(t, bed, db+".t")
	c.Source.DSN = config.Secret(src.ReplDSN())
	cfg = &c
	run = func() (stop func() error) {
		stop = startTailer(t, *cfg)
		waitForTailerOn(t, bed, src, *cfg)
		return stop
	}
	return src, db, cfg, run
}
