package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
)

// commonFlags are the flags every verb takes.
type commonFlags struct {
	configPath string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "c", "readside.yaml", "config file")
	fs.StringVar(&c.configPath, "config", "readside.yaml", "config file")
}

func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func runDaemon(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common commonFlags
	common.register(fs)
	role := fs.String("role", "all", "all, tailer or projector")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "readside run: %v\n", err)
		return exitUsage
	}
	log := newLogger(cfg.Log, stderr)
	switch *role {
	case "all", "tailer":
	case "projector":
		fmt.Fprintln(stderr, "readside run --role projector: not implemented yet")
		return exitNotReady
	default:
		fmt.Fprintf(stderr, "readside run: --role %q: want all, tailer or projector\n", *role)
		return exitUsage
	}
	if len(cfg.Kafka.Brokers) == 0 {
		fmt.Fprintln(stderr, "readside run: kafka.brokers is empty and the embedded broker is not implemented yet: set kafka.brokers")
		return exitNotReady
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reg := prometheus.NewRegistry()
	tailer, err := cdc.New(cfg, cfg.Kafka.Brokers, log, reg)
	if err != nil {
		fmt.Fprintf(stderr, "readside run: %v\n", err)
		return exitUsage
	}
	if *role == "all" {
		log.Warn("projection workers are not implemented yet: running the tailer only")
	}
	log.Info("starting", "role", *role, "source", cfg.Source.DSN, "brokers", cfg.Kafka.Brokers, "tables", cfg.Source.Tables)
	if err := tailer.Run(ctx); err != nil {
		log.Error("tailer stopped", "err", err, "fatal", errors.As(err, new(*cdc.FatalError)))
		return exitProblem
	}
	log.Info("stopped cleanly")
	return exitOK
}
