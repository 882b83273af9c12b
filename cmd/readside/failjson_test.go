package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailureIsJSONUnderLogFormatJSON: with log.format json a verb's
// failure is one JSON line like the rest of its stderr — a config that
// parses but does not validate, and a failure after the config loaded.
func TestFailureIsJSONUnderLogFormatJSON(t *testing.T) {
	head := `source:
  dsn: "u:p@tcp(127.0.0.1:1)/"
  server_id: 7
  tables: [shop.orders]
kafka:
  brokers: [127.0.0.1:1]
log: {format: json}
`
	for _, c := range []struct{ why, extra, role, says string }{
		{"a key the config does not have", "  tabels: [x]\n", "all", "unknown keys: tabels"},
		{"a bad flag after the config loaded", "", "sideways", `--role "sideways"`},
	} {
		cfg := filepath.Join(t.TempDir(), "readside.yaml")
		yaml := head
		if c.extra != "" {
			yaml = strings.Replace(head, "  tables: [shop.orders]\n", "  tables: [shop.orders]\n"+c.extra, 1)
		}
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := dispatch([]string{"run", "-c", cfg, "--role", c.role}, &out, &errb)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		var line struct {
			Level, Msg string
			ExitCode   int `json:"exit_code"`
		}
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &line) != nil || line.Level != "ERROR" || !strings.Contains(line.Msg, c.says) || line.ExitCode != code || code != exitUsage {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one JSON ERROR line saying %q", c.why, code, errb.String(), exitUsage, c.says)
		}
	}
}
