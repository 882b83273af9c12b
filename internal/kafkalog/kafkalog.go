// Package kafkalog is the logger readside hands to its Kafka clients
// (franz-go, through kslog).
//
// franz-go logs at INFO what a Kafka client developer wants to see: every
// transaction begun, flushed and ended, every group join and heartbeat
// loop. A tailer commits a Kafka transaction per few source transactions,
// so at INFO the client wrote ~4 lines per commit (the demo's log reached
// ~10,000 lines in 35 s). Its INFO lines are therefore logged at DEBUG,
// and readside logs its own progress at INFO (cmd/readside, progress.go).
//
// Its ERROR lines are logged at WARN: franz-go logs at ERROR what it then
// retries on its own (a group's manage loop failing on every dial while
// a broker restarts), so an operator alerting on ERROR was paged for an
// outage readside rode out. A client error that stops readside's work
// is returned to readside's code (a fenced producer, a fatal group or
// fetch error), which logs it at ERROR with its cause and fix.
package kafkalog

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// New returns the kgo.Logger for a client logging through log.
func New(log *slog.Logger) kgo.Logger {
	return kslog.New(slog.New(demoteInfo{log.Handler()}))
}

// demoteInfo is a slog.Handler that writes INFO records at DEBUG and
// ERROR records at WARN.
type demoteInfo struct{ h slog.Handler }

func demote(l slog.Level) slog.Level {
	switch l {
	case slog.LevelInfo:
		return slog.LevelDebug
	case slog.LevelError:
		return slog.LevelWarn
	}
	return l
}

func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, demote(l))
}

func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.h.Handle(ctx, r)
}

func (d demoteInfo) WithAttrs(as []slog.Attr) slog.Handler { return demoteInfo{d.h.WithAttrs(as)} }

func (d demoteInfo) WithGroup(name string) slog.Handler { return demoteInfo{d.h.WithGroup(name)} }
