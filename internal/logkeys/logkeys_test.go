package logkeys

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

type withFunc struct {
	Host string
	Dial func() error
}

type marshalErr struct{}

func (marshalErr) Error() string                { return "boom" }
func (marshalErr) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot") }

func TestHandler(t *testing.T) {
	cases := []struct {
		why  string
		log  func(l *slog.Logger)
		want string // the line after the time key (JSON)
	}{
		{"the innermost component wins: the binlog client's lines say binlog",
			func(l *slog.Logger) { l.With("component", "tailer").With("component", "binlog").Info("m") },
			`"level":"INFO","msg":"m","component":"binlog"}`},
		{"a record's own key wins over the logger's",
			func(l *slog.Logger) { l.With("component", "tailer", "x", 1).Info("m", "component", "kafka") },
			`"level":"INFO","msg":"m","component":"kafka","x":1}`},
		{"a key repeated in one call keeps the last value",
			func(l *slog.Logger) { l.Info("m", "k", 1, "k", 2) },
			`"level":"INFO","msg":"m","k":2}`},
		{"a value json cannot encode is replaced by why (go-mysql logs its config, funcs included)",
			func(l *slog.Logger) { l.Info("m", "config", withFunc{Host: "h", Dial: func() error { return nil }}) },
			`"level":"INFO","msg":"m","config":"not logged: json: unsupported type: func() error"}`},
		{"an encodable struct stays as it is",
			func(l *slog.Logger) { l.Info("m", "v", struct{ Host string }{"h"}) },
			`"level":"INFO","msg":"m","v":{"Host":"h"}}`},
		{"NaN is its name, not an encoding error",
			func(l *slog.Logger) { l.Info("m", "rate", math.NaN()) },
			`"level":"INFO","msg":"m","rate":"NaN"}`},
		{"a duration is its text, as in text mode, not a count of nanoseconds",
			func(l *slog.Logger) { l.Info("m", "retry_in", 1500*time.Millisecond) },
			`"level":"INFO","msg":"m","retry_in":"1.5s"}`},
		{"an error is its message",
			func(l *slog.Logger) { l.Info("m", "err", errors.New("e")) },
			`"level":"INFO","msg":"m","err":"e"}`},
		{"an error whose MarshalJSON fails is replaced too",
			func(l *slog.Logger) { l.Info("m", "err", marshalErr{}) },
			`"level":"INFO","msg":"m","err":"not logged: json: error calling MarshalJSON for type logkeys.marshalErr: cannot"}`},
		{"an attribute named msg does not repeat the message key",
			func(l *slog.Logger) { l.Info("m", "msg", "other") },
			`"level":"INFO","msg":"m","msg_attr":"other"}`},
		{"keys repeat-free inside a group, and the group holds the record's attributes",
			func(l *slog.Logger) { l.With("a", 1).WithGroup("g").With("k", 1).Info("m", "k", 2) },
			`"level":"INFO","msg":"m","a":1,"g":{"k":2}}`},
		{"an empty group is dropped, as slog does",
			func(l *slog.Logger) { l.WithGroup("g").Info("m") },
			`"level":"INFO","msg":"m"}`},
		{"an inline group (empty key) merges into its level",
			func(l *slog.Logger) { l.With("k", 1).Info("m", slog.Group("", "k", 2)) },
			`"level":"INFO","msg":"m","k":2}`},
		{"siblings made from one logger do not share attributes",
			func(l *slog.Logger) {
				base := l.With("component", "tailer")
				_ = base.With("x", 1)
				base.With("y", 2).Info("m")
			},
			`"level":"INFO","msg":"m","component":"tailer","y":2}`},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		c.log(slog.New(New(slog.NewJSONHandler(&buf, nil), true)))
		line := strings.TrimSpace(buf.String())
		if err := CheckJSON([]byte(line)); err != nil {
			t.Errorf("%s: %s: %v", c.why, line, err)
		}
		if !strings.HasSuffix(line, c.want) {
			t.Errorf("%s:\n got %s\nwant …%s", c.why, line, c.want)
		}
	}
}

// TestText: the text handler gets the same unique keys; values are its %+v.
func TestText(t *testing.T) {
	var buf bytes.Buffer
	slog.New(New(slog.NewTextHandler(&buf, nil), false)).With("component", "tailer").With("component", "kafka").Info("m")
	if got := buf.String(); strings.Count(got, "component=") != 1 || !strings.Contains(got, "component=kafka") {
		t.Errorf("got %q, want one component=kafka", got)
	}
}

func TestCheckJSON(t *testing.T) {
	cases := []struct {
		why, line, err string
	}{
		{"a clean line passes", `{"time":"t","level":"INFO","msg":"m","a":{"b":[1,{"c":2}]}}`, ""},
		{"a repeated top-level key is what log pipelines resolve differently", `{"time":"t","level":"INFO","msg":"m","component":"a","component":"b"}`, `key "component" repeated`},
		{"a repeated key inside a group counts too", `{"time":"t","level":"INFO","msg":"m","g":{"k":1,"k":2}}`, `key "g.k" repeated`},
		{"the same key in two array members is not a repeat", `{"time":"t","level":"INFO","msg":"m","a":[{"k":1},{"k":2}]}`, ""},
		{"a failed encoding is caught", `{"time":"t","level":"INFO","msg":"m","config":"!ERROR:json: unsupported type"}`, "failed to encode"},
		{"the basics must be there", `{"time":"t","level":"INFO"}`, `no "msg" key`},
		{"text is not JSON", `time=t level=INFO msg=m`, "not JSON"},
		{"two objects on a line", `{"time":"t","level":"INFO","msg":"m"}{}`, "more than one"},
	}
	for _, c := range cases {
		err := CheckJSON([]byte(c.line))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.why, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want %q", c.why, err, c.err)
		}
	}
}
