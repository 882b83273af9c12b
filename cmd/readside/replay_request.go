package main

// `replay --from`, `--pending` and `--cancel`: the request rows a running
// projector takes (projections/replay.go), and what the operator is told
// while none does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/rebuild"
	"github.com/readside/readside/sinks"
)

// resetOffsets records a replay request for p's partitions and waits for
// a running projector to take it. A request nobody takes within timeout
// is an error naming what to do: it stays pending for the next projector
// of p to start, unless cancelled.
func resetOffsets(ctx context.Context, cfg config.Config, p *projections.Projection, sink *sinks.Sharded, from string, timeout time.Duration, stdout io.Writer) error {
	offs, err := rebuild.ReplayOffsets(ctx, cfg.Kafka.Brokers, p, from)
	if err != nil {
		return err
	}
	replaced, err := sink.RequestReplay(ctx, p, offs)
	if err != nil {
		return err
	}
	if len(replaced) > 0 {
		fmt.Fprintf(stdout, "replaces the pending request of %s no projector had taken yet (%s)\n", p.Name, offsetList(replaced))
	}
	fmt.Fprintf(stdout, "replay of %s requested from %s\n", p.Name, offsetList(offs))
	fmt.Fprintf(stdout, "waiting up to %s for a projector of %s to take it (%s)\n", timeout, p.Name, groupState(ctx, cfg.Kafka.Brokers, p))
	deadline := time.Now().Add(timeout)
	for {
		left, err := sink.PendingReplays(ctx, p)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			fmt.Fprintf(stdout, "taken by the projector of %s: it is re-applying from there\n", p.Name)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no projector of %s took the request within %s (still pending: %s; %s). It stays pending and the first projector of %s to start takes it: start `readside run` with this config (if one runs, `readside status` names a stopped projection), or remove it with `readside replay --projection %s --cancel`",
				p.Name, timeout, offsetList(left), groupState(ctx, cfg.Kafka.Brokers, p), p.Name, p.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cancelReplays removes p's pending requests and says what they were.
func cancelReplays(ctx context.Context, p *projections.Projection, sink *sinks.Sharded, stdout io.Writer) error {
	removed, err := sink.CancelReplays(ctx, p)
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintf(stdout, "no pending replay request of %s: nothing removed\n", p.Name)
		return nil
	}
	fmt.Fprintf(stdout, "removed the pending replay request of %s: %s\n", p.Name, offsetList(removed))
	return nil
}

// listPending prints p's pending requests.
func listPending(ctx context.Context, p *projections.Projection, sink *sinks.Sharded, stdout io.Writer) error {
	pending, err := sink.PendingReplays(ctx, p)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		fmt.Fprintf(stdout, "no pending replay request of %s\n", p.Name)
		return nil
	}
	fmt.Fprintf(stdout, "pending replay request of %s (no projector has taken it yet): %s\n", p.Name, offsetList(pending))
	return nil
}

// groupState says how many projectors of p are in its consumer group now:
// with none, the request waits for the next one to start.
func groupState(ctx context.Context, brokers []string, p *projections.Projection) string {
	group := p.Group
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Sprintf("consumer group %s: %v", group, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var described kadm.DescribedGroups
	for {
		described, err = adm.DescribeGroups(dctx, group)
		if err == nil {
			err = described.Error()
		}
		// A fresh broker has no group coordinator until its offsets
		// topic exists: a retriable answer is asked again for a while.
		if err == nil || !kerr.IsRetriable(err) || dctx.Err() != nil {
			break
		}
		select {
		case <-dctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	// The group is named by the projection alone, so a projection of
	// the same name in another deployment on the same brokers shares it:
	// only members subscribed to p's topic are p's projectors here.
	mine, others := 0, 0
	switch {
	case errors.Is(err, kerr.GroupIDNotFound): // never joined, or expired: no members
	case err != nil:
		return fmt.Sprintf("consumer group %s could not be described: %v", group, err)
	default:
		for _, m := range described[group].Members {
			if c, ok := m.Join.AsConsumer(); ok && slices.Contains(c.Topics, p.Topic) {
				mine++
			} else {
				others++
			}
		}
	}
	var also string
	if others > 0 {
		also = fmt.Sprintf("; %d other member(s) of the group consume other topics (a projection of the same name in another deployment on these brokers)", others)
	}
	if mine == 0 {
		return fmt.Sprintf("no projector of %s is running now: its consumer group %s has no member consuming %s%s", p.Name, group, p.Topic, also)
	}
	return fmt.Sprintf("%d projector(s) of %s consuming %s in consumer group %s%s", mine, p.Name, p.Topic, group, also)
}

// offsetList renders offsets as sorted topic/partition:offset items.
func offsetList(offs event.Offsets) string {
	var parts []string
	for topic, ps := range offs {
		for part, next := range ps {
			parts = append(parts, fmt.Sprintf("%s/%d:%d", topic, part, next))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
