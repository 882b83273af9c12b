package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReshardRefusals: what reshard refuses before it connects to
// anything, each with exit 2 and a message naming the cause and the fix.
func TestReshardRefusals(t *testing.T) {
	cfg := `source:
  dsn: "u:p@tcp(127.0.0.1:1)/"
  server_id: 7
  tables: [shop.orders, shop.order_lines]
kafka:
  brokers: ["127.0.0.1:1"]
sinks:
  reads:
    dsn: "u:p@tcp(127.0.0.1:1)/reads"
  reads2:
    shards:
      - {keyrange: "-80", dsn: "u:p@tcp(127.0.0.1:1)/reads"}
      - {keyrange: "80-", dsn: "u:p@tcp(127.0.0.1:2)/reads"}
projections:
  orders:
    from: shop.orders
    sink: reads
    key: [customer_id, id]
    shard_by: customer_id
    columns: {customer_id: customer_id, id: id}
  lines:
    from: shop.order_lines
    sink: reads
    key: [id]
    columns: {id: id}
`
	path := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		why  string
		args []string
		want string
	}{
		{"--to must be given, as a confirmation", []string{"--projection", "orders", "--sink", "reads2"}, "--to is required"},
		{"a sink not in the config", []string{"--projection", "orders", "--sink", "nope", "--to", "-"}, "--sink nope is not in the config: add sinks.nope"},
		{"--to that is not the sink's ranges shows both", []string{"--projection", "orders", "--sink", "reads2", "--to", "-40,40-"}, "--to -40,40- is not sink reads2's key ranges in the config (-80,80-): give --to -80,80-"},
		{"an unknown --fill", []string{"--projection", "orders", "--sink", "reads2", "--to", "-80,80-", "--fill", "rsync"}, `--fill "rsync": want copy`},
		{"a projection without shard_by onto several shards: every row would stay on the first",
			[]string{"--projection", "lines", "--sink", "reads2", "--to", "-80,80-"},
			"projection lines has no shard_by, and sink reads2 has 2 shards: its rows would all stay on the first shard, and projections.lines.sink: reads2 would not load. Set projections.lines.shard_by (one of its key columns)"},
		{"an undeclared projection lists the declared", []string{"--projection", "x", "--sink", "reads2", "--to", "-80,80-"}, "declared: "},
	} {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"reshard", "-c", path, "--yes"}, tc.args...), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 saying %q", tc.why, code, errb.String(), tc.want)
		}
	}
}
