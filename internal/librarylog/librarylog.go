// Package librarylog shapes the log lines of the libraries readside
// drives — the binlog client (go-mysql), the Kafka client (franz-go,
// internal/kafkalog) and the MySQL driver (go-sql-driver/mysql) — to
// readside's levels and format.
//
// The libraries log at ERROR what they, or readside, then retry: the
// binlog client's "connection was bad" when the source restarts (the
// tailer logs "stream interrupted; resuming from the last checkpoint" and
// reconnects), the Kafka client's failing dials while a broker restarts.
// An operator alerting on ERROR was paged for outages readside rode out,
// so their ERROR lines are logged at WARN; an error that stops readside's
// work reaches readside's code, which logs it at ERROR with its cause and
// fix.
package librarylog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Remap is a slog.Handler that writes each record at the level levels
// maps its level to (unchanged when levels has none).
func Remap(h slog.Handler, levels map[slog.Level]slog.Level) slog.Handler {
	return remap{h, levels}
}

type remap struct {
	h      slog.Handler
	levels map[slog.Level]slog.Level
}

func (r remap) level(l slog.Level) slog.Level {
	if to, ok := r.levels[l]; ok {
		return to
	}
	return l
}

func (r remap) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, r.level(l)) }

func (r remap) Handle(ctx context.Context, rec slog.Record) error {
	rec.Level = r.level(rec.Level)
	return r.h.Handle(ctx, rec)
}

func (r remap) WithAttrs(as []slog.Attr) slog.Handler { return remap{r.h.WithAttrs(as), r.levels} }

func (r remap) WithGroup(name string) slog.Handler { return remap{r.h.WithGroup(name), r.levels} }

// Binlog is the logger for the binlog client: log's, with its ERROR
// lines at WARN.
func Binlog(log *slog.Logger) *slog.Logger {
	return slog.New(Remap(log.With("component", "binlog").Handler(), map[slog.Level]slog.Level{slog.LevelError: slog.LevelWarn}))
}

// RouteMySQLDriver sends the MySQL driver's own lines through log at
// WARN with component=mysql. The driver writes them with Go's standard
// logger to stderr ("[mysql] 2026/12/02 10:57:56 packets.go:58 unexpected
// EOF" when a server goes away), which is no JSON line in a JSON log.
// The driver has one logger for the process: the last call wins.
func RouteMySQLDriver(log *slog.Logger) {
	// SetLogger refuses only nil.
	_ = mysql.SetLogger(driverLog{log.With("component", "mysql")})
}

type driverLog struct{ log *slog.Logger }

func (d driverLog) Print(v ...any) {
	d.log.Warn(strings.TrimSpace(fmt.Sprint(v...)))
}
