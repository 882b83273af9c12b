package verify

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// Scheduled is what scheduled verification takes of the config.
type Scheduled struct {
	Every   time.Duration          // verify.every
	Source  config.Source          // source: its dsn and tls
	Ends    Ends                   // the topics' ends (projector.Ends of config.Kafka.ClientBrokers)
	DataDir string                 // data_dir: each projection's state file
	Sinks   map[string]config.Sink // sinks: where each projection is served
}

// Schedule verifies every projection each s.Every (never repairing)
// until ctx ends, exporting readside_verify_drift_rows and
// readside_verify_last_run_timestamp_seconds per projection. A failed run
// is logged and retried at the next tick: verification must never stop
// the daemon.
func Schedule(ctx context.Context, s Scheduled, ps []*projections.Projection, reg prometheus.Registerer, log *slog.Logger) error {
	drift := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_verify_drift_rows",
		Help: "Rows that differed (missing + extra + different + misplaced) in the projection's last verification run."}, []string{"projection"})
	last := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "readside_verify_last_run_timestamp_seconds",
		Help: "Unix time the projection's last verification run finished."}, []string{"projection"})
	if reg != nil {
		reg.MustRegister(drift, last)
	}
	src, err := OpenSource(s.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	tick := time.NewTicker(s.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for _, p := range ps {
			rep, err := runOnce(ctx, s, p, src, log)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				log.Error("scheduled verification failed; retried at the next run", "projection", p.Name, "err", err)
				continue
			}
			drift.WithLabelValues(p.Name).Set(float64(rep.Drift()))
			last.WithLabelValues(p.Name).Set(float64(time.Now().Unix()))
			lvl := slog.LevelInfo
			if !rep.Equal() {
				lvl = slog.LevelWarn
			}
			log.Log(ctx, lvl, "verified", "projection", p.Name, "rows", rep.SourceRows, "missing", rep.Missing, "extra", rep.Extra,
				"different", rep.Different, "misplaced", rep.Misplaced, "behind", rep.Behind, "unsettled", rep.Unsettled, "seconds", rep.Seconds)
		}
	}
}

func runOnce(ctx context.Context, s Scheduled, p *projections.Projection, src *sql.DB, log *slog.Logger) (*Report, error) {
	// The sink that serves p now: a reshard may have moved it off the
	// one the config names.
	at, closeSinks, err := sinks.OpenResolved(ctx, s.Sinks, p)
	defer closeSinks()
	if err != nil {
		return nil, err
	}
	v := New(p, src, at.Sink, Options{StateFile: StateFile(s.DataDir, p.Name), Ends: s.Ends, Log: log})
	return v.Run(ctx)
}
