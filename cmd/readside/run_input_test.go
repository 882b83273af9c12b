package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesTailerWithDebeziumInput: with input.kind: debezium a
// connector captures the source, so run starts only as a projector; any
// other role is refused before it connects anywhere (the servers here
// point nowhere), naming the fix.
func TestRunRefusesTailerWithDebeziumInput(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(cfg, []byte(`source:
  dsn: "u:p@tcp(127.0.0.1:1)/"
  server_id: 7
  tables: [shop.orders]
kafka:
  brokers: [127.0.0.1:1]
input:
  kind: debezium
  topic_prefix: dbserver1
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"all", "tailer"} {
		var out, errb bytes.Buffer
		code := dispatch([]string{"run", "-c", cfg, "--role", role}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "input.kind is debezium and --role is "+role) || !strings.Contains(errb.String(), "--role projector") {
			t.Errorf("--role %s: exit %d, stderr %q; want exit %d naming --role projector", role, code, errb.String(), exitUsage)
		}
	}
}
