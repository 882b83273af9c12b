package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayRefusedOnAConsistentSink: readside replay does not run on a
// transaction-consistent sink, and the rebuild it names instead drops
// every table of the sink's database (the state tables too: with them
// kept, an aggregate refilled from the topics stayed empty).
func TestReplayRefusedOnAConsistentSink(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(cfg, []byte(`source:
  dsn: "u:p@tcp(127.0.0.1:1)/"
  server_id: 7
  tables: [shop.orders]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    dsn: "u:p@tcp(127.0.0.1:1)/reads"
    consistency: transaction
projections:
  per_customer:
    from: shop.orders
    sink: reads
    group_by: [customer_id]
    aggregates: {orders: "count(*)"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := dispatch([]string{"replay", "-c", cfg, "--projection", "per_customer", "--rebuild"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "readside replay does not run there") ||
		!strings.Contains(errb.String(), "drop every table of the sink's database on every shard") {
		t.Errorf("exit %d, stderr %q; want exit %d naming the whole sink database's rebuild", code, errb.String(), exitUsage)
	}
}
