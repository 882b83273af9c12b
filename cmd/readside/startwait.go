package main

// Start-up waits: `readside run` waits for the source, the brokers and the
// sinks before it starts the pipeline, so a server that is not up yet (a
// restart, a pod starting in another order) keeps the process up with
// /healthz saying why, instead of a crash loop. A configuration error
// (credentials, grants, a bad DSN) exits at once with the fix.

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/internal/startup"
	"github.com/readside/readside/sinks"
)

// waitForServers returns once every server this role needs answers, with
// a *startup.ConfigError for one that waiting cannot fix, or ctx's error.
func waitForServers(ctx context.Context, cfg config.Config, role string, externalBrokers bool, o *ops, log *slog.Logger) error {
	w := startup.Waiter{Log: log, Report: o.health.Waiting}
	// Every role reads the source: the tailer streams it, the projectors
	// derive their read tables from its schema.
	if err := w.For(ctx, "source", "source.dsn", func(ctx context.Context) error { return cdc.Probe(ctx, cfg.Source) }); err != nil {
		return err
	}
	if externalBrokers {
		if err := w.For(ctx, "kafka", "kafka.brokers", func(ctx context.Context) error { return pingBrokers(ctx, cfg.Kafka.Brokers) }); err != nil {
			return err
		}
	}
	if role == "tailer" {
		return nil
	}
	used := map[string]bool{}
	for _, p := range cfg.Projections {
		used[p.Sink] = true
	}
	names := make([]string, 0, len(used))
	for name := range used {
		if _, ok := cfg.Sinks[name]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		what, key := "sink "+name, "sinks."+name+".dsn"
		if err := w.For(ctx, what, key, func(ctx context.Context) error {
			s, err := sinks.OpenSharded(ctx, name, cfg.Sinks[name])
			if err != nil {
				return err
			}
			return s.Close()
		}); err != nil {
			return err
		}
	}
	return nil
}

// pingBrokers answers once one of brokers answers a metadata request.
func pingBrokers(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("kafka.brokers: %w", err)
	}
	defer cl.Close()
	return cl.Ping(ctx)
}
