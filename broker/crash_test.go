package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
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

	// Two partitions: one gets the cut transaction, the other does not, as
	// when a crash lands between two partitions' commit markers.
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
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	commit(cl, map[int32]string{0: "a0", 1: "a1"})
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(cl, 0, "cut") // acknowledged, so on disk (SyncWrites)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	cl.Close()

	b, err := StartEmbedded(dir, listen, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err = kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	commit(cl, map[int32]string{0: "c0", 1: "c1"})
	commit(cl, map[int32]string{0: "d0"})

	// One fetch from the start holds the cut transaction and what came
	// after it, the case that lost records.
	rd, err := kgo.NewClient(kgo.SeedBrokers(listen), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	want := map[int32][]string{0: {"a0", "c0", "d0"}, 1: {"a1", "c1"}}
	got := map[int32][]string{}
	done := func() bool { return len(got[0]) >= len(want[0]) && len(got[1]) >= len(want[1]) }
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
}
