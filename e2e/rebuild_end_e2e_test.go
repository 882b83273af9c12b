package e2e

// readside replay --rebuild ends whatever the partitions hold at their end:
// readside's producer is transactional, so every partition's last offset
// is a commit marker no consumer is handed, and a table with few rows
// leaves most partitions empty.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/readside/readside/e2e/testbed"
)

// TestRebuildEndsOnMarkersAndIdlePartitions: two rows in a 4-partition
// topic (at least two partitions never written), each written partition
// ending with a commit marker (checked: the live projector's stored offset
// is one short of the end), the source idle. The rebuild ends within a
// generous deadline with the read table equal to the source.
func TestRebuildEndsOnMarkersAndIdlePartitions(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "rbend", bed.Kafka.Brokers(), "")
	d := p.start()
	p.waitReady(90 * time.Second)
	ctx := t.Context()
	db := bed.MySQL.DB()
	if _, err := db.ExecContext(ctx, "INSERT INTO `"+p.src+"`.messages VALUES (1, 7, '2026-01-01 00:00:01', 'a'), (2, 8, '2026-01-01 00:00:02', 'b')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE `"+p.src+"`.messages SET body = 'b2' WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if n := p.converge(time.Minute); n != 2 {
		t.Fatalf("%d rows before the rebuild, want 2", n)
	}
	adm := adminClient(t, bed.Kafka.Brokers())
	topic := p.messagesTopic(adm)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	// The preconditions the test is about, on the real broker.
	stored := map[int32]int64{}
	for _, r := range strings.Split(strings.TrimSpace(testbed.RowsText(t, db, "SELECT part, next_offset FROM `"+p.sink+"`._readside_offsets WHERE projection = 'messages_by_sender' AND topic = '"+topic+"'")), "\n") {
		var part int32
		var next int64
		if _, err := fmt.Sscanf(r, "%d|%d|", &part, &next); err == nil {
			stored[part] = next
		}
	}
	empty, marked := 0, 0
	ends.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Offset == 0:
			empty++
		case stored[o.Partition] == o.Offset-1:
			marked++ // the last offset is the commit marker
		default:
			t.Errorf("partition %d: end %d, live projector stored %d: want end = stored + 1 (a commit marker last)", o.Partition, o.Offset, stored[o.Partition])
		}
	})
	if empty < 2 || marked == 0 {
		t.Fatalf("%d empty partitions (want >= 2) and %d ending with a marker (want > 0): ends %v, stored %v", empty, marked, ends, stored)
	}

	rbctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, code := p.replayCmd(rbctx, "--projection", "messages_by_sender", "--rebuild", "--progress-every", "1s")
	took := time.Since(start)
	t.Logf("readside replay --rebuild (exit %d, %s):\n%s", code, took.Round(time.Millisecond), out)
	if rbctx.Err() != nil {
		t.Fatalf("the rebuild did not end within 3 minutes (killed); daemon log:\n%s", tail(p.logPath))
	}
	if code != 0 || !strings.Contains(out, "rebuilt messages_by_sender") {
		t.Fatalf("rebuild failed (exit %d); daemon log:\n%s", code, tail(p.logPath))
	}
	if !strings.Contains(out, "filling messages_by_sender__rebuild: 100.0%") {
		t.Errorf("no final progress line of the fill at 100%%:\n%s", out)
	}
	if n := p.converge(time.Minute); n != 2 {
		t.Errorf("%d rows after the rebuild, want 2", n)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
