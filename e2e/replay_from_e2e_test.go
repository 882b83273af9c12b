package e2e

// readside replay --from a time and from partition:offset items, run as
// the user runs it (the built binary, against a running daemon on the
// real test bed broker): exactly the events from there on are re-applied.
// What a replay restores on a read table damaged by hand, and what it
// does not (docs/operations.md, "What a replay restores"), is checked
// here too; the requests no projector takes, and --from values the
// broker cannot serve, in TestReplayRequestCheckedAndCancelled.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// adminClient is a kadm client on the test bed's broker.
func adminClient(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// messagesTopic waits for the tailer to have created the topic of p's
// messages table and returns its name.
func (p *opsPipeline) messagesTopic(adm *kadm.Client) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 90*time.Second)
	defer cancel()
	var topic string
	if !testbed.Poll(ctx, 250*time.Millisecond, func() bool {
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			return false
		}
		for _, name := range tds.Names() {
			if strings.HasSuffix(name, "."+p.src+".messages") {
				topic = name
			}
		}
		return topic != ""
	}) {
		p.t.Fatalf("no topic for %s.messages within 90s; log:\n%s", p.src, tail(p.logPath))
	}
	return topic
}

// insertRange inserts messages ids lo..hi (body "<tag><id>").
func (p *opsPipeline) insertRange(ctx context.Context, lo, hi int, tag string) {
	p.t.Helper()
	var vals []string
	for id := lo; id <= hi; id++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, '2026-01-01 00:00:%02d.%06d', '%s%d')", id, id%20, id%60, id, tag, id))
	}
	if err := p.bed.MySQL.Exec(ctx, "INSERT INTO `"+p.src+"`.messages VALUES "+strings.Join(vals, ", ")); err != nil {
		p.t.Fatal(err)
	}
}

// sinkExec runs a statement on the read table's database.
func (p *opsPipeline) sinkExec(ctx context.Context, q string) {
	p.t.Helper()
	if err := p.bed.MySQL.Exec(ctx, strings.ReplaceAll(q, "{read}", "`"+p.sink+"`.messages_by_sender")); err != nil {
		p.t.Fatalf("%s: %v", q, err)
	}
}

// waitRows waits until the read table's rows equal want (p.rows format).
func (p *opsPipeline) waitRows(want string, timeout time.Duration, what string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), timeout)
	defer cancel()
	var got string
	if !testbed.Poll(ctx, 500*time.Millisecond, func() bool {
		got = p.rows("`" + p.sink + "`.messages_by_sender")
		return got == want
	}) {
		p.t.Fatalf("%s: the read table differs from what it should hold after %s (%d rows, want %d):\n%s\nlog tail:\n%s",
			what, timeout, strings.Count(got, "\n"), strings.Count(want, "\n"), rowDiff(got, want, 10), tail(p.logPath))
	}
}

// replayRestores is the shared course of the --from tests. Batch A (ids
// 1..200) is written and applied; then the starting point is taken
// (from, called between the batches); then batch B (inserts 201..400 and
// edits of ids 1..10) is written and applied. On the sink every row is
// deleted by hand except 250 and 251, whose body is edited by hand
// (251's version also set to 0, older than any event). After the replay
// from the starting point, the read table holds exactly the rows B
// touched (1..10 and 201..400) as the source has them, except 250, which
// keeps its hand edit (its version is not older than the replayed
// events'); the rows only A wrote (11..200) stay deleted: their events
// are before the starting point.
func replayRestores(t *testing.T, name string, from func(p *opsPipeline, adm *kadm.Client, topic string) string) *opsPipeline {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, name, bed.Kafka.Brokers(), "")
	d := p.start()
	t.Cleanup(func() {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	})
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	adm := adminClient(t, bed.Kafka.Brokers())
	topic := p.messagesTopic(adm)

	p.insertRange(ctx, 1, 200, "a")
	p.converge(time.Minute)
	start := from(p, adm, topic)
	p.insertRange(ctx, 201, 400, "b")
	if err := p.bed.MySQL.Exec(ctx, "UPDATE `"+p.src+"`.messages SET body = CONCAT('b-edit', id) WHERE id <= 10"); err != nil {
		t.Fatal(err)
	}
	p.converge(time.Minute)

	p.sinkExec(ctx, "DELETE FROM {read} WHERE id NOT IN (250, 251)")
	p.sinkExec(ctx, "UPDATE {read} SET body = 'by hand' WHERE id IN (250, 251)")
	p.sinkExec(ctx, "UPDATE {read} SET _rs_version = 0 WHERE id = 251")

	out, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--from", start)
	t.Logf("readside replay --from %s (exit %d):\n%s", start, code, out)
	if code != 0 || !strings.Contains(out, "taken by the projector of messages_by_sender") {
		t.Fatalf("replay --from %s was not taken by the running daemon (exit %d):\n%s\nlog:\n%s", start, code, out, tail(p.logPath))
	}
	want := p.rows("(SELECT sender_id, created_at, id, IF(id = 250, 'by hand', body) AS body FROM `" + p.src + "`.messages WHERE id <= 10 OR id > 200) AS w")
	p.waitRows(want, time.Minute, "after the replay from "+start)
	// Offsets back at the end (consumer lag 0): everything the replay
	// re-applies has been applied, and the rows before the starting point
	// are still absent.
	p.waitReady(time.Minute)
	if got := p.rows("`" + p.sink + "`.messages_by_sender"); got != want {
		t.Fatalf("after the replay caught up the read table changed:\n%s", rowDiff(got, want, 10))
	}
	t.Logf("replayed from %s: %d rows back, rows 11..200 (events before it) still deleted, the hand edit of 250 kept, 251 (version 0) restored", start, strings.Count(want, "\n"))
	return p
}

// TestReplayFromTime: replay --from an RFC3339 time re-applies exactly the
// events published from that time on. Then `replay --rebuild` restores
// what a replay does not: the hand-edited row and the rows whose events
// are all older than the time.
func TestReplayFromTime(t *testing.T) {
	p := replayRestores(t, "rpt", func(p *opsPipeline, _ *kadm.Client, _ string) string {
		// Batch A was published before it converged; a moment later is
		// after every one of its record timestamps (the same clock).
		time.Sleep(50 * time.Millisecond)
		at := time.Now().UTC().Format(time.RFC3339Nano)
		time.Sleep(50 * time.Millisecond)
		return at
	})
	ctx, cancel := context.WithTimeout(p.t.Context(), 3*time.Minute)
	defer cancel()
	out, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--rebuild", "--drop-old")
	if code != 0 {
		t.Fatalf("replay --rebuild (exit %d):\n%s\nlog:\n%s", code, out, tail(p.logPath))
	}
	n := p.converge(time.Minute)
	t.Logf("replay --rebuild restored the read table to the source's %d rows, hand edit included", n)
}

// TestReplayFromOffsets: replay --from partition:offset items (every
// partition at its end offset after batch A) re-applies exactly the
// events from those offsets on.
func TestReplayFromOffsets(t *testing.T) {
	replayRestores(t, "rpo", func(p *opsPipeline, adm *kadm.Client, topic string) string {
		ends, err := adm.ListEndOffsets(p.t.Context(), topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			p.t.Fatal(err)
		}
		var items []string
		ends.Each(func(o kadm.ListedOffset) { items = append(items, fmt.Sprintf("%d:%d", o.Partition, o.Offset)) })
		if len(items) != 4 {
			p.t.Fatalf("end offsets of %s: %v, want 4 partitions", topic, items)
		}
		return strings.Join(items, ",")
	})
}

// TestReplayRequestCheckedAndCancelled: --from values the broker cannot
// serve (an unknown partition, an offset past the end, a time with no
// record after it) exit 1 naming the partition and the valid range, and
// store nothing; a request no projector takes (only the tailer runs) is
// reported after --timeout with exit 1 naming what to do, stays pending,
// is replaced by a newer one, listed by --pending and removed by --cancel.
func TestReplayRequestCheckedAndCancelled(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "rpc", bed.Kafka.Brokers(), "")
	d := startDaemon(t, p.logPath, "run", "--role", "tailer", "-c", p.cfgPath)
	t.Cleanup(func() {
		if code := d.stop(30 * time.Second); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	})
	ctx := t.Context()
	adm := adminClient(t, bed.Kafka.Brokers())
	topic := p.messagesTopic(adm)
	p.insertRange(ctx, 1, 40, "a")
	var end0 int64
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !testbed.Poll(wctx, 250*time.Millisecond, func() bool {
		ends, err := adm.ListEndOffsets(wctx, topic)
		if err != nil {
			return false
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		o, _ := ends.Lookup(topic, 0)
		end0 = o.Offset
		return total >= 40 && end0 > 0
	}) {
		t.Fatalf("the tailer did not publish the 40 rows within a minute; log:\n%s", tail(p.logPath))
	}
	requests := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT topic, part, next_offset FROM `"+p.sink+"`._readside_replay_requests ORDER BY part")
	}

	for _, c := range []struct {
		why, from string
		want      []string
	}{
		{"a partition the topic does not have", "0:0,99:5", []string{"partition 99 of " + topic + " does not exist", "has partitions 0-3", "nothing was requested"}},
		{"an offset past the high watermark", fmt.Sprintf("0:%d", end0+1), []string{fmt.Sprintf("offset %d of %s/0 is past the end of the partition: its offsets run from 0 to %d", end0+1, topic, end0)}},
		{"a time after every record", "2099-01-01T00:00:00Z", []string{"no record of " + topic + " was published at or after that time", "nothing was requested"}},
	} {
		out, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--from", c.from, "--timeout", "2s")
		t.Logf("%s: replay --from %s (exit %d):\n%s", c.why, c.from, code, out)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", c.why, code)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q", c.why, w)
			}
		}
		if left := requests(); left != "" {
			t.Fatalf("%s: a request was stored:\n%s", c.why, left)
		}
	}

	out, code := p.replayCmd(ctx, "--projection", "messages_by_sender", "--from", "earliest", "--timeout", "3s")
	t.Logf("no projector running: replay --from earliest --timeout 3s (exit %d):\n%s", code, out)
	for _, w := range []string{
		"waiting up to 3s for a projector of messages_by_sender",
		"no projector of messages_by_sender is running now: its consumer group " + strings.TrimSuffix(topic, "."+p.src+".messages") + "-projection-messages_by_sender has no member consuming " + topic,
		"no projector of messages_by_sender took the request within 3s",
		"readside replay --projection messages_by_sender --cancel",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output of a request nobody takes lacks %q", w)
		}
	}
	if code != 1 {
		t.Errorf("a request nobody takes: exit %d, want 1", code)
	}
	if got := strings.Count(requests(), "\n"); got != 4 {
		t.Errorf("%d partitions pending after the timeout, want 4 (it stays for the next projector):\n%s", got, requests())
	}

	out, code = p.replayCmd(ctx, "--projection", "messages_by_sender", "--from", "2:0", "--timeout", "1s")
	t.Logf("a newer request (exit %d):\n%s", code, out)
	if !strings.Contains(out, "replaces the pending request of messages_by_sender") {
		t.Errorf("the newer request does not say it replaced the pending one:\n%s", out)
	}
	if got, want := requests(), topic+"|2|0|\n"; got != want {
		t.Errorf("pending after the newer request:\n%s\nwant only\n%s", got, want)
	}

	out, code = p.replayCmd(ctx, "--projection", "messages_by_sender", "--pending")
	if code != 0 || !strings.Contains(out, "pending replay request of messages_by_sender (no projector has taken it yet): "+topic+"/2:0") {
		t.Errorf("--pending (exit %d):\n%s", code, out)
	}
	out, code = p.replayCmd(ctx, "--projection", "messages_by_sender", "--cancel")
	t.Logf("replay --cancel (exit %d):\n%s", code, out)
	if code != 0 || !strings.Contains(out, "removed the pending replay request of messages_by_sender: "+topic+"/2:0") {
		t.Errorf("--cancel (exit %d):\n%s", code, out)
	}
	if left := requests(); left != "" {
		t.Errorf("requests left after --cancel:\n%s", left)
	}
	out, code = p.replayCmd(ctx, "--projection", "messages_by_sender", "--pending")
	if code != 0 || !strings.Contains(out, "no pending replay request of messages_by_sender") {
		t.Errorf("--pending after --cancel (exit %d):\n%s", code, out)
	}
}
