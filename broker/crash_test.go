package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// childEnv makes the test binary an embedded broker and nothing else, so a
// test can kill -9 it: "<data dir> <listen address>".
const childEnv = "READSIDE_BROKER_TEST_CHILD"

func TestMain(m *testing.M) {
	if arg := os.Getenv(childEnv); arg != "" {
		dir, listen, _ := strings.Cut(arg, " ")
		b, err := StartEmbedded(dir, listen, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("ready", b.Addr())
		select {} // until killed
	}
	os.Exit(m.Run())
}

// startChild runs the broker in a child process and waits until it listens.
func startChild(t *testing.T, dir, listen string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir+" "+listen)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("the broker child did not start: %q %v", line, err)
	}
	return cmd
}

// TestCrashCutTransactionHidesNothingAfter: a transaction cut by a kill -9
// of the broker is aborted on restart, and the same producer's next
// transactions are visible to read-committed consumers. kfake aborts a cut
// transaction in memory without writing an abort marker; a consumer (every
// Kafka client) skips a producer's batches from an aborted transaction's
// first offset until that producer's abort marker, so without one it also
// skipped everything the producer committed after the restart that came in
// the same fetch: the tailer's republished events, lost for the projector.
func TestCrashCutTransactionHidesNothingAfter(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	dir, listen := t.TempDir(), freeLoopback(t)
	child := startChild(t, dir, listen)

	// Three partitions: the cut transaction is in two, the third ends with
	// a commit marker, as when a crash lands between partitions' markers.
	produce := func(cl *kgo.Client, part int32, v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(cl *kgo.Client, recs map[int32]string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p, v := range recs {
			produce(cl, p, v)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(listen), kgo.TransactionalID("tailer"), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	commit(cl, map[int32]string{0: "a0", 1: "a1", 2: "a2"})
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(cl, 0, "cut0") // acknowledged, so on disk (SyncWrites)
	produce(cl, 2, "cut2")
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	cl.Close()

	var logged bytes.Buffer
	b, err := StartEmbedded(dir, listen, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if b != nil {
			b.Close()
		}
	}()
	if l := logged.String(); strings.Count(l, "aborted a transaction cut by a crash") != 2 ||
		!strings.Contains(l, "topic=t partition=0") || !strings.Contains(l, "topic=t partition=2") {
		t.Errorf("the restart should abort the transaction cut in t/0 and t/2, and only there; it logged:\n%s", l)
	}
	cl, err = kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	commit(cl, map[int32]string{0: "c0", 1: "c1", 2: "c2"})
	commit(cl, map[int32]string{0: "d0"})

	// One fetch from the start holds the cut transaction and what came
	// after it, the case that lost records.
	rd, err := kgo.NewClient(kgo.SeedBrokers(listen), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	want := map[int32][]string{0: {"a0", "c0", "d0"}, 1: {"a1", "c1"}, 2: {"a2", "c2"}}
	got := map[int32][]string{}
	done := func() bool {
		for p, w := range want {
			if len(got[p]) < len(w) {
				return false
			}
		}
		return true
	}
	for !done() {
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		fs := rd.PollFetches(pctx)
		pcancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], string(r.Value)) })
	}
	for p, w := range want {
		if !slices.Equal(got[p], w) {
			t.Errorf("partition %d read committed: %q, want %q (the records after the cut transaction were hidden)", p, got[p], w)
		}
	}

	// A clean restart finds nothing to finish: every partition now ends
	// with a marker.
	rd.Close()
	cl.Close()
	b.Close()
	logged.Reset()
	if b, err = StartEmbedded(dir, listen, slog.New(slog.NewTextHandler(&logged, nil))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logged.String(), "aborted a transaction") {
		t.Errorf("a clean restart aborted a transaction:\n%s", logged.String())
	}
}
