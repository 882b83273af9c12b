package startup

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

func TestWaiterFor(t *testing.T) {
	refused := syscall.ECONNREFUSED
	denied := &driver.MySQLError{Number: 1045, Message: "Access denied for user 'rs'"}
	cases := []struct {
		name     string
		errs     []error // one per attempt; nil succeeds
		attempts int
		config   bool
		why      string
	}{
		{"up at once", []error{nil}, 1, false, "no wait, no report"},
		{"comes up", []error{refused, refused, nil}, 3, false, "transient errors are retried until the server answers"},
		{"wrong password", []error{denied, nil}, 1, true, "a configuration error exits after one attempt"},
		{"down then denied", []error{refused, denied}, 2, true, "a server that comes up refusing the user is still a config error"},
	}
	for _, c := range cases {
		var logs bytes.Buffer
		var reports []string
		w := Waiter{Log: slog.New(slog.NewTextHandler(&logs, nil)), Initial: time.Millisecond, Max: 2 * time.Millisecond,
			Report: func(what, reason string) { reports = append(reports, what+"|"+reason) }}
		n := 0
		err := w.For(t.Context(), "source", "source.dsn", func(context.Context) error { n++; return c.errs[n-1] })
		if n != c.attempts {
			t.Errorf("%s (%s): %d attempts, want %d", c.name, c.why, n, c.attempts)
		}
		var ce *ConfigError
		if got := errors.As(err, &ce); got != c.config || (!c.config && err != nil) {
			t.Errorf("%s (%s): err %v, want config error %v", c.name, c.why, err, c.config)
		}
		if c.config && err != nil && !strings.Contains(err.Error(), "Fix: check the user and password in source.dsn") {
			t.Errorf("%s: %v does not name the fix", c.name, err)
		}
		warns := strings.Count(logs.String(), "level=WARN")
		if transient := c.attempts - 1; !c.config && warns != transient {
			t.Errorf("%s (%s): %d WARN lines, want one per failed attempt (%d)", c.name, c.why, warns, transient)
		}
		if !c.config && c.attempts > 1 && (len(reports) != c.attempts || reports[len(reports)-1] != "source|" || !strings.Contains(reports[0], "waiting for source: connection refused")) {
			t.Errorf("%s (%s): reports %q, want a waiting reason per failed attempt, then cleared", c.name, c.why, reports)
		}
	}
}

// TestWaiterCancelled: a SIGTERM while waiting ends the wait with ctx's
// error, not a configuration error.
func TestWaiterCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	w := Waiter{Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), Initial: time.Hour}
	err := w.For(ctx, "source", "source.dsn", func(context.Context) error { cancel(); return syscall.ECONNREFUSED })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
