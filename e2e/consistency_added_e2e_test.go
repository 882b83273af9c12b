package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestConsistentSinkAddedProjection: a projection added to a
// `transaction` sink after its first commit would get only the changes
// after the sink's frontier (the applier goes on from there): its read
// table held none of the source's rows from before, beside tables holding
// all of them. The restarted applier refuses it, naming the projection
// and the fix; after the documented rebuild (the sink's database emptied)
// from topics that retention trimmed meanwhile, the applier warns and
// names the snapshot, after which every read table equals the source.
// A read table renamed away while the frontier covers it is refused too,
// not created again empty.
func TestConsistentSinkAddedProjection(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	ci := newConsistentItems(t, bed, "consadd", 30)
	src, sink, exec, head, cfgPath, write := ci.src, ci.sink, ci.exec, ci.head, ci.cfgPath, ci.write
	// copy_a and copyx sort one way byte for byte and the other way under
	// the sink's default collation: the frontier's list of projections
	// must not read as if one of them were added.
	first := fmt.Sprintf("  copy_a: {from: %s.items, sink: reads, key: [id], columns: {id: id, v: v}}\n", src) +
		fmt.Sprintf("  copyx: {from: %s.items, sink: reads, key: [id], columns: {id: id, v: v}}\n", src)
	added := fmt.Sprintf("  copy_b: {from: %s.items, sink: reads, key: [v, id], columns: {id: id, v: v}}\n", src)
	write(first)
	logPath := filepath.Join(filepath.Dir(cfgPath), "run.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath, "--http", freeAddr(t))
	utc := utcDB(t, bed)
	expect := func(table string) struct{ name, want, got string } {
		return struct{ name, want, got string }{table, "SELECT id, v FROM `" + src + "`.items ORDER BY id",
			"SELECT id, v FROM `" + sink + "`.`" + table + "` ORDER BY id"}
	}
	tableThere := func(table string) {
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			var n int
			err := utc.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", sink, table).Scan(&n)
			return err == nil && n == 1, fmt.Sprintf("no read table %s yet (%v); log:\n%s", table, err, tail(logPath))
		})
	}
	tableThere("copy_a")
	exec("UPDATE `" + src + "`.items SET v = v + 100 WHERE id <= 10")
	waitExpected(t, utc, []struct{ name, want, got string }{expect("copy_a")}, logPath)
	// A consistent sink's projections have no lag of their own: the
	// applier says when the sink is current, once.
	testbed.Eventually(t, 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return regexp.MustCompile(`msg="caught up: the sink's read tables are current with the topics".* sink=reads gtid=\S+ projections="\[copy_a copyx\]"`).Match(b),
			"no caught-up line for the sink; log:\n" + tail(logPath)
	})
	// The sink's database is on the source server: each commit is a
	// source transaction, whose cut brings the sink no record. Committed
	// at once, every one made the next (about 80 commits a second, for
	// ever); those move the frontier once a second at most.
	commits := func() int {
		var n int
		if err := utc.QueryRowContext(ctx, "SELECT commits FROM `"+sink+"`.`_readside_frontier`").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := commits()
	time.Sleep(5 * time.Second)
	if n := commits() - before; n > 10 {
		t.Errorf("%d commits in 5 s of a source that changed nothing the sink reads: the sink's own commits feed back into cuts", n)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}

	// A read table renamed away (or dropped) while the frontier covers
	// its projection: created again, it would hold only what came after
	// the frontier. The applier refuses it and leaves it absent; renamed
	// back, the sink goes on.
	exec("RENAME TABLE `" + sink + "`.copyx TO `" + sink + "`.copyx_moved")
	d.start()
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "the read table copyx of projection copyx does not exist on sink reads (shard -), but the shard holds a frontier that covers projection copyx"),
			"the applier did not refuse the renamed read table; log:\n" + tail(logPath)
	})
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	var recreated int
	if err := utc.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'copyx'", sink).Scan(&recreated); err != nil || recreated != 0 {
		t.Fatalf("copyx created again, empty, beside a frontier that covers it (%v)", err)
	}
	exec("RENAME TABLE `" + sink + "`.copyx_moved TO `" + sink + "`.copyx")

	write(first + added)
	d.start()
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "projection(s) copy_b added to sink reads (consistency: transaction)"),
			"the applier did not refuse the added projection; log:\n" + tail(logPath)
	})
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}

	// Retention took the topic's first records: the refill warns and
	// names the snapshot that completes it.
	trimTopic(t, adminClient(t, bed.Kafka.Brokers()), topicPrefixOf(t, head)+"."+src+".items")

	// The rebuild: every table of the sink's database dropped.
	rows, err := utc.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", sink)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, "`"+sink+"`.`"+name+"`")
	}
	rows.Close()
	exec("DROP TABLE " + strings.Join(tables, ", "))
	d.start()
	tableThere("copy_b")
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "topics that no longer hold their whole history") &&
				strings.Contains(string(b), `fix="readside snapshot --table `+src+`.items"`),
			"no warning that the sink fills from a trimmed history:\n" + tail(logPath)
	})
	expectReadside(t, cfgPath, "the snapshot", "snapshot --table "+src+".items --wait", 0)
	exec("DELETE FROM `" + src + "`.items WHERE id = 30")
	waitExpected(t, utc, []struct{ name, want, got string }{expect("copy_a"), expect("copyx"), expect("copy_b")}, logPath)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// consistentItems is a source table items (id, v) of some rows and a
// config whose sink reads has consistency: transaction: write puts the
// projections given after its head.
type consistentItems struct {
	src, sink     string
	exec          func(q string, args ...any)
	head, cfgPath string
	write         func(projections string)
}

func newConsistentItems(t *testing.T, bed *testbed.Bed, name string, rows int) consistentItems {
	t.Helper()
	var ci consistentItems
	ci.src, ci.sink = sourceAndSinkDBs(t, bed, name)
	ci.exec = itemsTable(t, bed, ci.src, rows)
	dir := t.TempDir()
	ci.head = bedConfigHead(bed, []string{ci.src + ".items"}, name, filepath.Join(dir, "data"), ci.sink)
	ci.head = strings.Replace(ci.head, "  reads:\n", "  reads:\n    consistency: transaction\n", 1)
	ci.cfgPath = filepath.Join(dir, "readside.yaml")
	ci.write = func(projections string) {
		t.Helper()
		if err := os.WriteFile(ci.cfgPath, []byte(ci.head+projections), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ci
}
