package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// TestDebeziumInputTopicPrefix: with input.kind: debezium the connector
// creates the topics, so a wrong input.topic_prefix would read topics
// that never come. `check` fails naming the prefix under which the broker
// has the table's topic; a table whose topic no prefix has is a warning
// (the connector may not have written it yet). `run --role projector`
// warns of the missing topic with the fix and writes no caught-up line
// for the projection reading it.
func TestDebeziumInputTopicPrefix(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, sinkDB := sourceAndSinkDBs(t, bed, "dbzpfx")
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+db+"`.items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL)",
		"CREATE TABLE `"+db+"`.other (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	run := rand.IntN(1e9)
	good := fmt.Sprintf("dzgood%09d", run)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, good+"."+db+".items"); err != nil {
		t.Fatal(err)
	}
	config := func(prefix, table, dataDir string) string {
		return fmt.Sprintf(`source:
  dsn: "%s"
  server_id: %d
  tables: [%[3]s.%[9]s]
kafka:
  brokers: [%[4]s]
  topic_prefix: rs%[5]d
input: {kind: debezium, topic_prefix: %[6]s}
data_dir: %[7]s
sinks:
  reads: {dsn: "%[8]s"}
projections:
  copy:
    from: %[3]s.%[9]s
    sink: reads
    key: [id]
    columns: {id: id, name: name}
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), run, prefix, dataDir, bed.MySQL.AdminDSN()+sinkDB, table)
	}
	wrong := fmt.Sprintf("dzwrong%09d", run)
	code, out, _ := runVerb(t, "check", config(wrong, "items", t.TempDir()))
	if code != 1 || !strings.Contains(out, "ERROR   input") || !strings.Contains(out, "input.topic_prefix: "+good) {
		t.Fatalf("check with a wrong input.topic_prefix: exit %d, want 1 naming input.topic_prefix: %s:\n%s", code, good, out)
	}
	if code, out, _ := runVerb(t, "check", config(good, "items", t.TempDir())); code != 0 || strings.Contains(out, "input  ") {
		t.Fatalf("check with the connector's prefix: exit %d, want 0 and no input finding:\n%s", code, out)
	}
	code, out, _ = runVerb(t, "check", config(good, "other", t.TempDir()))
	if code != 0 || !strings.Contains(out, "WARNING input") || !strings.Contains(out, good+"."+db+".other") {
		t.Fatalf("check with a prefix no topic has: exit %d, want 0 with a warning naming the topic:\n%s", code, out)
	}

	dir := t.TempDir()
	cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
	if err := os.WriteFile(cfgPath, []byte(config(wrong, "items", filepath.Join(dir, "data"))), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, logPath, "run", "--role", "projector", "-c", cfgPath)
	testbed.Eventually(t, 30*time.Second, func() (bool, string) {
		log, _ := os.ReadFile(logPath)
		return strings.Contains(string(log), "which the broker does not have") && strings.Contains(string(log), "set input.topic_prefix: "+good),
			"no warning of the missing topic naming the fix: " + tail(logPath)
	})
	time.Sleep(3 * time.Second) // past the progress log's first polls
	if log, _ := os.ReadFile(logPath); strings.Contains(string(log), "caught up: the read table is current") {
		t.Fatalf("a projection reading a topic the broker does not have said it caught up:\n%s", tail(logPath))
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
