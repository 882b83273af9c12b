package cdc

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestResumeFromCheckpoint: a tailer stopped and started again continues
// exactly where its checkpoint says, with no gap and no repeat, and its
// versions keep increasing.
func TestResumeFromCheckpoint(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "resume")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.r (id INT PRIMARY KEY, n INT)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".r")
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "r"))
	var last uint64
	for round := range 3 {
		stop := startTailer(t, cfg)
		waitForTailer(t, bed, cfg)
		for i := range 10 {
			if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.r VALUES (%d, %d)", db, round*100+i, round)); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{}
		if round > 0 {
			// The update made while the tailer was down comes first.
			want = append(want, fmt.Sprintf("u%d", (round-1)*100))
		}
		for i := range 10 {
			want = append(want, fmt.Sprintf("c%d", round*100+i))
		}
		// Across partitions only the versions tell the commit order.
		events := cons.next(len(want), 30*time.Second)
		slices.SortFunc(events, func(a, b testEvent) int { return cmp.Compare(a.Version, b.Version) })
		for i, e := range events {
			id := e.After["id"]
			if got := fmt.Sprintf("%s%v", e.Op, id); got != want[i] {
				t.Errorf("round %d event %d: %s, want %s", round, i, got, want[i])
			}
			if e.Version <= last {
				t.Errorf("round %d: version %d not above %d", round, e.Version, last)
			}
			last = e.Version
		}
		if err := stop(); err != nil {
			t.Fatalf("round %d: tailer: %v", round, err)
		}
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.r SET n = n + 1 WHERE id = %d", db, round*100)); err != nil {
			t.Fatal(err)
		}
	}
}
