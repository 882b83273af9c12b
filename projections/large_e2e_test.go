package projections_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestRecordsLargerThanTheFetchLimit: the projector fetches 256 KiB of a
// partition at a time; rows of 600 KB (published as single records over
// that limit) in every partition, between small ones, are all applied —
// Kafka returns an oversized first batch of a partition only when that
// partition comes first in the fetch, so this fails if a partition could
// stall behind its big record.
func TestRecordsLargerThanTheFetchLimit(t *testing.T) {
	bed := testbed.Get(t)
	cfg, src, sinkDB := setup(t, bed)
	ctx := t.Context()
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.docs (id INT PRIMARY KEY, body LONGTEXT CHARACTER SET ascii)", src)); err != nil {
		t.Fatal(err)
	}
	cfg.Source.Tables = []string{src + ".docs"}
	cfg.Kafka.MaxMessageBytes = 4 << 20
	cfg.Projections = map[string]config.Projection{"docs_copy": {
		From: src + ".docs", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "body": "body"},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p, sink := prepare(t, bed, cfg, sinkDB)
	runTailer(t, bed, cfg)
	const rows = 48
	for id := range rows {
		size := 10
		if id%3 == 0 {
			size = 600_000
		}
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.docs VALUES (%d, REPEAT('%c', %d))", src, id, 'a'+id%26, size)); err != nil {
			t.Fatal(err)
		}
	}
	defer startProjector(t, p, sink, cfg.Kafka.Brokers)()
	q := "SELECT id, LENGTH(body), LEFT(body, 1) FROM `%s`.%s ORDER BY id"
	want := testbed.RowsText(t, bed.MySQL.DB(), fmt.Sprintf(q, src, "docs"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := testbed.RowsText(t, bed.MySQL.DB(), fmt.Sprintf(q, sinkDB, p.Table))
		if got == want {
			t.Logf("all %d rows applied, %d of 600 KB", rows, strings.Count(want, "600000"))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s the read table has\n%s\nwant\n%s", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
