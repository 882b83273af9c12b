// Package kafkalog is the logger readside hands to its Kafka clients
// (franz-go, through kslog).
//
// franz-go logs at INFO what a Kafka client developer wants to see: every
// transaction begun, flushed and ended, every group join and heartbeat
// loop. A tailer commits a Kafka transaction per few source transactions,
// so at INFO the client wrote ~4 lines per commit (the demo's log reached
// ~10,000 lines in 35 s). Its INFO lines are therefore logged at DEBUG,
// and readside logs its own progress at INFO (cmd/readside, progress.go).
// Its ERROR lines are logged at WARN, as every library's are
// (internal/librarylog says why).
package kafkalog

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/readside/readside/internal/librarylog"
)

// New returns the kgo.Logger for a client logging through log, its lines
// under component kafka whichever component owns the client (a
// projection's keeps its projection key), so one filter finds every
// Kafka client line.
func New(log *slog.Logger) kgo.Logger {
	return kslog.New(slog.New(librarylog.Remap(log.With("component", "kafka").Handler(), map[slog.Level]slog.Level{
		slog.LevelInfo:  slog.LevelDebug,
		slog.LevelError: slog.LevelWarn,
	})))
}
