package e2e

// What a new user sees in the first hour: the daemon's log at INFO (and in
// JSON) and
// `readside status` with no daemon running.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/internal/logkeys"
)

// franzInfo are messages the Kafka client (franz-go) logs at INFO: per
// transaction, per group join and heartbeat loop.
var franzInfo = []string{"beginning transaction", "ending transaction", "msg=flushing", "end transaction response",
	"joining group", "beginning heartbeat loop", "assigning partitions", "new group session begun"}

// TestInfoLogIsBounded: `readside run` at log.level info under a live
// workload on the real broker logs what a human needs — starting (with the
// projections), caught up (tailer and projection), periodic committed
// summaries, stopped — and none of the Kafka client's own INFO lines, so
// the log stays a few dozen lines however many transactions run.
func TestInfoLogIsBounded(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "loginfo", bed.Kafka.Brokers(), "log:\n  level: info\n  progress_every: 4s\n")
	d := p.start()
	p.waitReady(90 * time.Second)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	// Unbounded ops: the workload runs until the 15 s are up.
	if err := p.write(ctx, rand.New(rand.NewPCG(seed, seed)), 1<<30); err != nil {
		t.Fatal(err)
	}
	rows := p.converge(2 * time.Minute)
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	testbed.Poll(wctx, 200*time.Millisecond, func() bool { return strings.Count(p.log(), "msg=\"caught up: ") >= 2 })
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM; log:\n%s", code, tail(p.logPath))
	}
	log := p.log()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	t.Logf("%d log lines for %d read rows; log:\n%s", len(lines), rows, log)
	for _, l := range lines {
		for _, m := range franzInfo {
			if strings.Contains(l, m) {
				t.Errorf("the Kafka client's INFO line is in the INFO log: %s", l)
			}
		}
		if strings.Contains(l, "level=INFO") && strings.Contains(l, "component=kafka") {
			t.Errorf("an INFO line of the Kafka client: %s", l)
		}
	}
	if len(lines) >= 50 {
		t.Errorf("%d log lines for a 15 s run, want < 50", len(lines))
	}
	for _, want := range []string{
		"msg=starting", "projections=[messages_by_sender]",
		`msg="caught up: reading the source's binlog as it is written" component=tailer`,
		`msg="caught up: the read table is current with the topics" projection=messages_by_sender`,
		"msg=committed", "source_transactions=", "messages_by_sender.rows=",
		`msg="draining: committing in-flight work" signal=terminated`, `msg="stopped cleanly"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the INFO log lacks %q", want)
		}
	}
	if n := strings.Count(log, "msg=committed"); n > 15/4+3 {
		t.Errorf("%d committed summaries, want one per log.progress_every (4s) with writes, at most %d", n, 15/4+3)
	}
}

// TestStatusWithoutDaemon: with the embedded broker, once the daemon is
// stopped neither it nor its broker answers; `readside status` still shows
// each projection's rows and applied offsets from the sinks, says once
// what it cannot show and why, prints no error per projection and fits in
// 100 columns.
func TestStatusWithoutDaemon(t *testing.T) {
	p := newOpsPipeline(t, "stnod", nil, "")
	d := p.start()
	p.waitReady(90 * time.Second)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	if err := p.write(t.Context(), rand.New(rand.NewPCG(seed, seed)), 300); err != nil {
		t.Fatal(err)
	}
	rows := p.converge(2 * time.Minute)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	out, code := p.status(t, "--http", freeAddr(t))
	t.Logf("readside status with no daemon (exit %d):\n%s", code, out)
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	flat := strings.Join(strings.Fields(out), " ") // phrases may wrap
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^messages_by_sender\s+reads\s+%d\s+\d+ in 4 partitions\s+20\d\d-`, rows)).MatchString(out) {
		t.Errorf("status lacks the row of messages_by_sender on reads with %d rows, 4 partitions and the last source commit", rows)
	}
	for _, want := range []string{
		"from the sinks only",
		"no daemon at http://",
		"no broker at ",
		"the embedded broker runs inside readside run",
		"health, lag, consumer groups and the tailer's checkpoint need them",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("status lacks %q", want)
		}
	}
	if n := strings.Count(out, "no daemon at"); n != 1 {
		t.Errorf("what status cannot show is said %d times, want once", n)
	}
	if strings.Contains(strings.ToLower(out), "error") {
		t.Errorf("status prints an error with a healthy sink")
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 100 {
			t.Errorf("line of %d columns, want <= 100: %s", len(l), l)
		}
	}
}

// TestJSONLogIsClean: `readside run` with log.format json at DEBUG, so the
// binlog client's and the Kafka client's lines are in, through a short
// workload on the broker: every line of the log is one JSON object with
// each key once (checked token by token: encoding/json keeps the last of a
// repeated key silently), time, level and msg, and no value that failed to
// encode. go-mysql logs its whole config (func fields included) when the
// tailer connects, and the clients' loggers carry the tailer's component.
func TestJSONLogIsClean(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "logjson", bed.Kafka.Brokers(), "log:\n  level: debug\n  format: json\n  progress_every: 2s\n")
	d := p.start()
	p.waitReady(90 * time.Second)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	if err := p.write(t.Context(), rand.New(rand.NewPCG(seed, seed)), 200); err != nil {
		t.Fatal(err)
	}
	p.converge(2 * time.Minute)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM; log:\n%s", code, tail(p.logPath))
	}
	lines := strings.Split(strings.TrimSpace(p.log()), "\n")
	bad := 0
	components := map[string]int{}
	projection := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "=== start ") { // the test's own marker (startDaemon)
			continue
		}
		if err := logkeys.CheckJSON([]byte(l)); err != nil {
			if bad++; bad <= 10 {
				t.Errorf("%v: %s", err, l)
			}
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err) // CheckJSON passed it
		}
		if c, ok := m["component"].(string); ok {
			components[c]++
		}
		if m["projection"] == "messages_by_sender" {
			projection++
		}
	}
	t.Logf("%d lines, %d bad; lines per component %v; %d name the projection", len(lines), bad, components, projection)
	// The lines that had the flaws: the binlog client's start (config),
	// the clients' lines under the tailer's logger (component twice).
	for _, c := range []string{"tailer", "binlog", "kafka", "projector"} {
		if components[c] == 0 {
			t.Errorf("no line with component %q: the run did not log what this test checks", c)
		}
	}
	if !strings.Contains(p.log(), `"msg":"create BinlogSyncer","component":"binlog","config":"not logged: `) {
		t.Errorf("the binlog client's start line is not there with its config replaced by why it is not logged")
	}
	if projection == 0 {
		t.Errorf("no line names the projection")
	}
}
