package kafkalog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestLevels(t *testing.T) {
	cases := []struct {
		why    string
		level  slog.Level // the handler's threshold
		kgo    kgo.LogLevel
		logged string // the level the line appears at, "" when dropped
	}{
		{"client INFO is per transaction: hidden at INFO", slog.LevelInfo, kgo.LogLevelInfo, ""},
		{"client INFO shows when debugging", slog.LevelDebug, kgo.LogLevelInfo, "DEBUG"},
		{"client DEBUG stays DEBUG", slog.LevelDebug, kgo.LogLevelDebug, "DEBUG"},
		{"client warnings keep their level", slog.LevelInfo, kgo.LogLevelWarn, "WARN"},
		{"client errors are what it retries: at WARN", slog.LevelWarn, kgo.LogLevelError, "WARN"},
		{"client errors hidden at ERROR", slog.LevelError, kgo.LogLevelError, ""},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: c.level})))
		if l.Level() >= c.kgo {
			l.Log(c.kgo, "a client line", "k", "v")
		}
		out := buf.String()
		switch {
		case c.logged == "" && out != "":
			t.Errorf("%s: logged %q, want nothing", c.why, out)
		case c.logged != "" && !strings.Contains(out, "level="+c.logged+" "):
			t.Errorf("%s: logged %q, want level %s", c.why, out, c.logged)
		case c.logged != "" && !strings.Contains(out, "component=kafka"):
			t.Errorf("%s: logged %q without the logger's attributes", c.why, out)
		}
	}
}
