package main

// Transaction-consistent sinks: their projections are applied by one
// applier per sink (projector.Applier), not one projector each
// (docs/design/consistent-sinks.md).

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// applierName is the supervisor's and /status's name of a sink's applier.
func applierName(sink string) string { return "sink:" + sink }

// byConsistency splits planned projections into those on row sinks and,
// per transaction-consistent sink, the ones on it.
func byConsistency(cfg config.Config, planned []plannedProjection) (rows []plannedProjection, consistent map[string][]plannedProjection) {
	consistent = map[string][]plannedProjection{}
	for _, pp := range planned {
		if cfg.Sinks[pp.p.Sink].Consistency.Transactional() {
			consistent[pp.p.Sink] = append(consistent[pp.p.Sink], pp)
			continue
		}
		rows = append(rows, pp)
	}
	return rows, consistent
}

// startApplier creates the read tables of a transaction-consistent sink's
// projections and starts its applier under the supervisor. A read table
// that cannot be made to fit stops the whole sink: its projections commit
// together or not at all.
func (s *projectorStarter) startApplier(ctx context.Context, sink string, pps []plannedProjection) (exitCode int, err error) {
	sh, err := s.open(ctx, sink)
	if err != nil {
		return exitProblem, err
	}
	var ps []*projections.Projection
	for _, pp := range pps {
		if err := refuseDropped(ctx, sh, pp.p, applierName(sink), true); err != nil {
			return exitProblem, err
		}
	}
	for _, pp := range pps {
		if err := sh.Exec(ctx, pp.ddl); err != nil {
			return exitProblem, unfitReadTable(applierName(sink), fmt.Errorf("creating the read table of %s on sink %s: %w", pp.p.Name, sink, err))
		}
		if err := sh.CheckReadTable(ctx, pp.p); err != nil {
			return exitProblem, unfitReadTable(applierName(sink), err)
		}
		ps = append(ps, pp.p)
	}
	slices.SortFunc(ps, func(a, b *projections.Projection) int { return cmp.Compare(a.Name, b.Name) })
	if s.consistentMetrics == nil {
		s.consistentMetrics = projector.NewConsistentMetrics(s.reg)
	}
	prefix := s.cfg.Kafka.TopicPrefix
	instance := s.cfg.Kafka.GroupInstanceID
	if instance == "" {
		instance, _ = os.Hostname()
	}
	a, err := projector.NewApplier(sink, ps, sh, projector.ApplierOptions{Brokers: s.cfg.Kafka.Brokers, InstanceID: instance,
		CheckpointTopic: event.CheckpointTopic(prefix), TailerID: s.cfg.TransactionalID(), Group: event.SinkGroup(prefix, sink),
		Retryable: sinks.Retryable, AtOnce: sinks.RetryAtOnce, Metrics: s.consistentMetrics, Lag: s.metrics, Log: s.log})
	if err != nil {
		return exitUsage, err
	}
	s.sup.run(s.gctx, applierName(sink), a.Run)
	return exitOK, nil
}
