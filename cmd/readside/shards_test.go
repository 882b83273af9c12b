package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShardsAnalyzeRefuses: what shards analyze cannot run names the
// cause and the fix, exit 2, before it reads the source (whose DSN here
// points nowhere).
func TestShardsAnalyzeRefuses(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(cfg, []byte(`source:
  dsn: "u:p@tcp(127.0.0.1:1)/"
  server_id: 7
  tables: [shop.orders]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    shards:
      - {keyrange: "-80", dsn: "u:p@tcp(127.0.0.1:1)/a"}
      - {keyrange: "80-", dsn: "u:p@tcp(127.0.0.1:1)/b"}
projections:
  orders_copy:
    from: shop.orders
    sink: reads
    replicated: true
    key: [id]
    columns: {id: id, status: status}
  orders_by_status:
    from: shop.orders
    sink: reads
    shard_by: status
    group_by: [status]
    aggregates: {n: "count(*)"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		why  string
		args []string
		want string
	}{
		{"the subcommand is required", []string{"shards"}, "want the subcommand analyze"},
		{"an unknown subcommand is not taken for analyze", []string{"shards", "analyse", "--projection", "p"}, "want the subcommand analyze"},
		{"the projection is required", []string{"shards", "analyze", "-c", cfg}, "--projection is required"},
		{"--all and --sample contradict", []string{"shards", "analyze", "-c", cfg, "--projection", "p", "--all", "--sample", "10"}, "give one"},
		{"a shard count must be a number", []string{"shards", "analyze", "-c", cfg, "--projection", "p", "--shards", "2,four"}, "want shard counts"},
		{"even splits stop at 256", []string{"shards", "analyze", "-c", cfg, "--projection", "p", "--shards", "512"}, "1 to 256 shards"},
		{"--to must cover the keyspace", []string{"shards", "analyze", "-c", cfg, "--projection", "p", "--to", "-80,c0-"}, "no shard covers keyspace ids"},
		{"an unknown projection names the config key", []string{"shards", "analyze", "-c", cfg, "--projection", "nope"}, `no projection "nope" in the config`},
		{"a projection without shard_by needs --by", []string{"shards", "analyze", "-c", cfg, "--projection", "orders_copy"}, "pass --by EXPR"},
		{"aggregates are refused with what to do", []string{"shards", "analyze", "-c", cfg, "--projection", "orders_by_status"}, "is an aggregate"},
	} {
		var out, errb bytes.Buffer
		if code := dispatch(c.args, &out, &errb); code != exitUsage {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.why, code, exitUsage, errb.String())
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: stderr %q, want it to say %q", c.why, errb.String(), c.want)
		}
	}
}
