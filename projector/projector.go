// Package projector is the Kafka consumer runtime of a projection: it
// polls the projection's topics in a consumer group, has projections build
// each poll's batch, applies it through the sink with the offsets, and
// deals with what the sink refuses (schema following, isolating and
// dead-lettering a bad record), lag and replays. projections is the layer
// below (declarations, events to writes); it knows no Kafka client, so the
// sinks, verify and shards link none.
package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// Projector keeps one projection's read table up to date from its topics
// (its source table's and each joined parent's). Projectors of one
// projection in several processes share the partitions through a consumer
// group; the offsets live in the sink, committed with the rows, and are
// where consumption resumes on every assignment.
type Projector struct {
	p    *projections.Projection
	sink projections.Sink
	o    Options
	log  *slog.Logger
	dlq  *kgo.Client
	pos  positions
	// follow serializes following the source's schema (schemafollow.go).
	follow follower
}

// Options configure a projector.
type Options struct {
	Brokers []string
	// InstanceID, when set, makes the worker a static group member (see
	// config kafka.group_instance_id).
	InstanceID string
	// MaxMessageBytes is kafka.max_message_bytes: the dead-letter topic
	// holds a rejected record of that size (0: the config default, 1 MiB).
	MaxMessageBytes int
	Metrics         *Metrics // nil: not exported
	// Rejected tells a sink's rejection of a row (bad data: too long, out
	// of range, a constraint) from a failure to reach it; only rejected
	// rows are dead-lettered. nil: nothing is (a failing batch stops).
	Rejected func(error) bool
	Log      *slog.Logger
	// GCInterval is how often the projector collects tombstones below the
	// topics' horizon (0: defaultGCInterval).
	GCInterval time.Duration
}

// New validates and does no I/O.
func New(p *projections.Projection, sink projections.Sink, o Options) (*Projector, error) {
	if len(o.Brokers) == 0 {
		return nil, errors.New("projector: no Kafka brokers")
	}
	if p.Group == "" || p.DLQTopic == "" {
		return nil, fmt.Errorf("projector: projection %s has no consumer group or dead-letter topic: build it with Compile", p.Name)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 1 << 20
	}
	if o.GCInterval == 0 {
		o.GCInterval = defaultGCInterval
	}
	return &Projector{p: p, sink: sink, o: o, log: o.Log.With("component", "projector", "projection", p.Name)}, nil
}

// Run consumes until ctx is cancelled (nil) or a batch cannot be applied.
// A replay request for a partition it holds makes it leave the group and
// join again, so the partitions are assigned afresh and resume at the
// requested offsets (projections/replay.go).
func (pr *Projector) Run(ctx context.Context) (err error) {
	// What decoding opened (the source pool of Debezium's JSON without
	// the schema block) is closed with the projector that used it; a
	// restart opens it again.
	defer func() { err = errors.Join(err, pr.p.CloseInput()) }()
	if pr.p.OnError == config.OnErrorDLQ {
		if err := pr.openDLQ(ctx); err != nil {
			return err
		}
		defer pr.dlq.Close()
	}
	for {
		rejoin, err := pr.consume(ctx)
		if err != nil || !rejoin || ctx.Err() != nil {
			return err
		}
		pr.log.Info("replay requested for a partition held here: rejoining the group to resume at the requested offsets")
	}
}

// consume runs one group membership as two stages under one errgroup: the
// poll stage (pollstage.go) polls and maps records into jobs, the apply
// stage (applystage.go) commits them to the sink one after another, in
// poll order, while the next one is polled and mapped. rejoin reports a
// replay request.
func (pr *Projector) consume(ctx context.Context) (rejoin bool, err error) {
	pr.o.Metrics.started(pr.p)
	owned := newOwned()
	cl, err := pr.newConsumer(owned)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	// Leaving the group on Close revokes partitions, which waits for
	// AllowRebalance under BlockRebalanceOnPoll: release it first.
	defer cl.AllowRebalance()
	applyCtx, cutApply := afterGrace(ctx)
	defer cutApply()
	apply := newApplyStage(pr)
	poll := newPollStage(pr, cl, owned, apply)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return apply.run(applyCtx) })
	g.Go(func() error { return poll.run(gctx) })
	if r, ok := pr.sink.(projections.FanOutRunner); ok && pr.p.FanOut == projections.FanOutBackground {
		// Beside the batches, for as long as the membership: a copy that
		// cannot succeed stops the projector as a failing batch would.
		g.Go(func() error {
			return r.RunFanOuts(gctx, pr.p, func(n int64, oldest time.Duration) { pr.o.Metrics.fanOutPending(pr.p, n, oldest) })
		})
	}
	err = g.Wait()
	switch {
	case errors.Is(err, errRejoin):
		return true, nil
	case err == nil || ctx.Err() != nil:
		return false, nil
	}
	pr.o.Metrics.error(pr.p)
	return false, err
}

// errRejoin ends a membership whose partitions a replay request names.
var errRejoin = errors.New("replay requested for a partition held here")

// afterGrace is ctx's values without its cancellation, cancelled
// stopGrace after ctx is, or by cut. A stop lets the batch in flight
// finish instead of cutting it off: a cut-off batch's statements are
// already at the server, which may still commit them after the client
// gave up, so whoever acts on "the projector has stopped" (a rebuild
// forgetting its shadow's offsets, a restart) would otherwise race that
// commit.
func afterGrace(ctx context.Context) (graced context.Context, cut context.CancelFunc) {
	graced, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unwatch := context.AfterFunc(ctx, func() { time.AfterFunc(stopGrace, cancel) })
	return graced, func() {
		unwatch()
		cancel()
	}
}

// stopGrace bounds how long a stopped projector waits for the batch in
// flight to commit (see consume); a healthy sink takes well under a second.
const stopGrace = 10 * time.Second

// retryBackoff waits 20 ms before the first retry of a failed request and
// doubles up to 1 s. franz-go's default starts at ~250 ms, and a Kafka
// broker answers the first JoinGroup of a new group with
// COORDINATOR_NOT_AVAILABLE: every first start of a projection spent
// ~300 ms there before reading a record (bench/results/history/tuning-log.md).
// The jitter keeps many workers from retrying in step.
func retryBackoff(tries int) time.Duration {
	d := 20 * time.Millisecond << min(max(tries-1, 0), 6)
	d = min(d, time.Second)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
