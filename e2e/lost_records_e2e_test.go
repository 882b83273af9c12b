package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/readside/readside/e2e/testbed"
)

// TestRecordsGoneStopReaders: records a projection has not applied yet
// are removed from its topic (a retention that ran while the projector
// was down, here DeleteRecords up to each partition's last record). The
// restarted projector's row projection and transaction-consistent sink
// stop, each naming the partition, the offset it needs and what the
// partition holds, rather than go on from the partition's start and miss
// those changes with a lag of zero (franz-go's default reset). The row
// projection's documented fix (replay from the earliest offsets, SIGHUP,
// verify --repair) then makes it equal to the source. A stored position
// past a partition's end is read again from the partition's start. A
// projection added then warns that its topics lost their first records,
// naming the snapshot that completes it.
func TestRecordsGoneStopReaders(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sink := sourceAndSinkDBs(t, bed, "lostrec")
	txnSink, err := bed.MySQL.CreateDatabase(ctx, "lostrec_t")
	if err != nil {
		t.Fatal(err)
	}
	exec := itemsTable(t, bed, src, 40)
	dir := t.TempDir()
	head := bedConfigHead(bed, []string{src + ".items"}, "lostrec", filepath.Join(dir, "data"), sink)
	head = strings.Replace(head, "sinks:\n", fmt.Sprintf("sinks:\n  txn:\n    consistency: transaction\n    dsn: %q\n", bed.MySQL.AdminDSN()+txnSink), 1)
	cfg := head + fmt.Sprintf("  copy_r: {from: %[1]s.items, sink: reads, key: [id], columns: {id: id, v: v}}\n"+
		"  copy_t: {from: %[1]s.items, sink: txn, key: [id], columns: {id: id, v: v}}\n", src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "projector.log")
	tailer := startDaemon(t, filepath.Join(dir, "tailer.log"), "run", "--role", "tailer", "-c", cfgPath, "--http", freeAddr(t))
	projector := startDaemon(t, logPath, "run", "--role", "projector", "-c", cfgPath, "--http", freeAddr(t))
	utc := utcDB(t, bed)
	expect := func(table string) []struct{ name, want, got string } {
		return []struct{ name, want, got string }{{table,
			"SELECT id, v FROM `" + src + "`.items ORDER BY id",
			"SELECT id, v FROM `" + table + "` ORDER BY id"}}
	}
	for _, db := range []string{sink, txnSink} {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			var n int
			err := utc.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'copy\\_%'", db).Scan(&n)
			return err == nil && n == 1, fmt.Sprintf("no read table in %s yet (%v); log:\n%s", db, err, tail(logPath))
		})
	}
	waitExpected(t, utc, append(expect(sink+"`.`copy_r"), expect(txnSink+"`.`copy_t")...), logPath)

	if code := projector.stop(30 * time.Second); code != 0 {
		t.Fatalf("projector: exit %d after SIGTERM", code)
	}
	topic := topicPrefixOf(t, head) + "." + src + ".items"
	adm := adminClient(t, bed.Kafka.Brokers())
	endsBefore, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	// Changes the projector has not seen, one source transaction each.
	for round := range 3 {
		for i := 1; i <= 40; i++ {
			exec("UPDATE `"+src+"`.items SET v = v + ? WHERE id = ?", 100*(round+1), i)
		}
	}
	exec("DELETE FROM `" + src + "`.items WHERE id <= 5")
	var n int64
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		n = 0
		ends.Each(func(o kadm.ListedOffset) {
			before, _ := endsBefore.Lookup(o.Topic, o.Partition)
			n += o.Offset - before.Offset
		})
		return n >= 3*40+5, fmt.Sprintf("the tailer published %d of the %d changes", n, 3*40+5)
	})
	// Retention: every partition keeps only its last record.
	trimTopic(t, adm, topic)

	projector.start()
	for _, want := range []string{"projection copy_r stopped: " + topic + " partition ", "projection sink:txn stopped: " + topic + " partition "} {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), want) && strings.Contains(string(b), "records it never applied are gone from Kafka"),
				fmt.Sprintf("no %q in the log:\n%s", want, tail(logPath))
		})
	}
	// The documented fix of a row projection.
	// The request stays pending while the projection is stopped (exit 1
	// once the timeout passes): SIGHUP resumes it, and it takes the
	// request first.
	expectReadside(t, cfgPath, "the replay", "replay --projection copy_r --from earliest --timeout 1s", 1, "It stays pending")
	if err := projector.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), "replaying") > 0, "the projector took no replay:\n" + tail(logPath)
	})
	expectReadside(t, cfgPath, "the repair", "verify --projection copy_r --repair", 0)
	waitExpected(t, utc, expect(sink+"`.`copy_r"), logPath)

	// A position past a partition's end (a topic created again starts
	// over) is read again from an offset the partition holds, as before
	// the readers failed on out-of-range fetches.
	if code := projector.stop(30 * time.Second); code != 0 {
		t.Fatalf("projector: exit %d after SIGTERM", code)
	}
	exec("UPDATE `" + sink + "`._readside_offsets SET next_offset = next_offset + 100000 WHERE projection = 'copy_r'")
	exec("UPDATE `" + src + "`.items SET v = v + 1")
	projector.start()
	waitExpected(t, utc, expect(sink+"`.`copy_r"), logPath)
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "the partition ends before the position read") {
		t.Errorf("no warning of a position past a partition's end in the log:\n%s", tail(logPath))
	}

	// A projection added now fills from topics that lost their first
	// records: it says so, with the snapshot that completes it.
	if code := projector.stop(30 * time.Second); code != 0 {
		t.Fatalf("projector: exit %d after SIGTERM", code)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg+fmt.Sprintf("  copy_n: {from: %s.items, sink: reads, key: [id], columns: {id: id, v: v}}\n", src)), 0o600); err != nil {
		t.Fatal(err)
	}
	projector.start()
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "topics that no longer hold their whole history") &&
				strings.Contains(string(b), `fix="readside snapshot --table `+src+`.items"`),
			"no warning that copy_n fills from a trimmed history:\n" + tail(logPath)
	})
	expectReadside(t, cfgPath, "the snapshot", "snapshot --table "+src+".items --wait", 0)
	waitExpected(t, utc, expect(sink+"`.`copy_n"), logPath)
	for _, d := range []*daemon{projector, tailer} {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	}
}

// itemsTable creates src.items (id, v) with n rows (v = id) and returns a
// statement runner on the source that fails the test on an error.
func itemsTable(t *testing.T, bed *testbed.Bed, src string, n int) func(q string, args ...any) {
	t.Helper()
	db := bed.MySQL.DB()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE `" + src + "`.items (id INT PRIMARY KEY, v INT NOT NULL)")
	for i := 1; i <= n; i++ {
		exec("INSERT INTO `"+src+"`.items VALUES (?, ?)", i, i)
	}
	return exec
}

// trimTopic deletes every record of topic but each partition's last, as
// a retention that ran would.
func trimTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	to := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		to.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset - 1})
	})
	deleted, err := adm.DeleteRecords(t.Context(), to)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("deleting the records of %s: %v", topic, err)
	}
}
