package main

import (
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	cases := []struct {
		why      string
		signals  []os.Signal
		timeout  time.Duration
		wantExit int // -1: none within the wait
	}{
		{"a second SIGINT forces exit 1", []os.Signal{os.Interrupt, os.Interrupt}, time.Minute, exitProblem},
		{"the drain deadline forces exit 1", []os.Signal{syscall.SIGTERM}, 50 * time.Millisecond, exitProblem},
		{"a repeated SIGTERM does not cut the drain short", []os.Signal{syscall.SIGTERM, syscall.SIGTERM}, time.Minute, -1},
	}
	for _, c := range cases {
		l := newLifecycle(io.Discard)
		exits := make(chan int, 1)
		l.exit = func(code int) { exits <- code }
		l.configure(c.timeout, slog.New(slog.NewTextHandler(io.Discard, nil)))
		for _, s := range c.signals {
			l.sigs <- s
		}
		select {
		case <-l.ctx.Done():
		case <-time.After(time.Second):
			t.Fatalf("%s: the first signal did not cancel the context", c.why)
		}
		got := -1
		select {
		case got = <-exits:
		case <-time.After(300 * time.Millisecond):
		}
		if got != c.wantExit {
			t.Errorf("%s: exit %d, want %d", c.why, got, c.wantExit)
		}
		l.stop()
	}
}
