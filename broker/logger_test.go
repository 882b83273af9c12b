package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestKfakeLoggerLevels(t *testing.T) {
	cases := []struct {
		why    string
		level  kfake.LogLevel
		format string
		want   string // the level logged at INFO, "" when dropped
	}{
		{"errors stay errors", kfake.LogLevelError, "persist batch open %s: %v", "ERROR"},
		{"warnings stay warnings", kfake.LogLevelWarn, "pids.log: discarding %d corrupt trailing bytes", "WARN"},
		{"a slow EndTxn is every fsynced commit: not news at INFO", kfake.LogLevelWarn, "txn: EndTxn slow pid=%d epoch=%d elapsed=%dms batches=%d groups=%d", ""},
		{"per-request info is dropped", kfake.LogLevelInfo, "handled %s", ""},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		kfakeLogger{slog.New(slog.NewTextHandler(&buf, nil))}.Logf(c.level, c.format, 1, 2, 3, 4, 5)
		out := buf.String()
		if (c.want == "") != (out == "") || (c.want != "" && !strings.Contains(out, "level="+c.want)) {
			t.Errorf("%s: logged %q, want level %q", c.why, out, c.want)
		}
	}
}
