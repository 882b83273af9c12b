package keyspace

// Routing generations: which sink serves a projection. A reshard's
// cutover records, on every server that serves or served the projection,
// a row of `_readside_routing` naming the new sink under a higher
// generation; a projector started at an older one stops with
// RoutingChanged. Here are the rows and how they are followed from the
// config's sink to the one serving now; sinks/routing.go reads them and
// fences the applies with them.

import (
	"fmt"
	"slices"
	"strings"
)

// Routing is one server's routing row of a projection; the zero value is
// no row (generation 0: the sink the config names).
type Routing struct {
	Generation uint64
	Sink       string   // the config sink serving the projection at Generation
	Ranges     []string // that sink's key ranges, in shard order
	// Replicated: the projection is copied to every shard of Sink rather
	// than split by its shard_by (the declaration the reshard ran with).
	Replicated bool
}

// RoutingChanged is a live apply refused because the projection's routing
// generation on a shard is no longer the one its projector started with:
// a reshard moved it (or is moving it). Nothing of the batch was committed
// on that shard. Not retried by the sink: the projector must stop and be
// started again on the sink Resolve names.
type RoutingChanged struct {
	Projection string
	Want, Have uint64
}

func (e *RoutingChanged) Error() string {
	return fmt.Sprintf("the routing generation of %s is %d, not %d: a reshard moved it to another sink (the daemon follows it)", e.Projection, e.Have, e.Want)
}

// RoutingUnsettled is a projection whose servers disagree on its routing
// generation: a reshard's cutover is under way, or stopped halfway.
type RoutingUnsettled struct {
	Projection string
	Sink       string
	Reason     string
}

func (e *RoutingUnsettled) Error() string {
	return fmt.Sprintf("the routing of %s on sink %s is unsettled (%s): a reshard's cutover is in progress, or was interrupted (rerun readside reshard for %s to finish it)", e.Projection, e.Sink, e.Reason, e.Projection)
}

// RoutingError is a projection's routing that cannot be followed as the
// config stands (a sink it names is missing or has other ranges); the
// message says the fix.
type RoutingError struct {
	Projection string
	Message    string
}

func (e *RoutingError) Error() string { return e.Message }

func routingError(projection, format string, args ...any) error {
	return &RoutingError{Projection: projection, Message: fmt.Sprintf(format, args...)}
}

// RangesText is how `_readside_routing` holds a sink's ranges: comma
// separated, in shard order.
func RangesText(ranges []string) string { return strings.Join(ranges, ",") }

// SplitRanges reads RangesText.
func SplitRanges(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(text, ",")
}

// Step reads the routing rows of projection on the shards of sink
// (reached by generation came; 0 for the config's sink): the sink they
// name and its generation. next == sink when the rows name sink (or there
// are none); the shards must then all hold that generation.
func Step(projection, sink string, came uint64, rows []Routing) (next string, gen uint64, err error) {
	top := Routing{}
	for _, r := range rows {
		if r.Generation > top.Generation {
			top = r
		}
	}
	for _, r := range rows {
		if r.Generation == top.Generation && r.Sink != top.Sink {
			return "", 0, routingError(projection, "the routing rows of %s on sink %s name two sinks (%s and %s) at generation %d: check `_readside_routing` on its servers", projection, sink, top.Sink, r.Sink, top.Generation)
		}
	}
	if top.Generation < came {
		return "", 0, &RoutingUnsettled{Projection: projection, Sink: sink,
			Reason: fmt.Sprintf("generation %d names it, but its shards are at %d at most", came, top.Generation)}
	}
	if top.Generation > 0 && top.Sink != sink {
		return top.Sink, top.Generation, nil
	}
	for i, r := range rows {
		if r.Generation != top.Generation {
			return "", 0, &RoutingUnsettled{Projection: projection, Sink: sink,
				Reason: fmt.Sprintf("shard %d is at generation %d, another at %d", i+1, r.Generation, top.Generation)}
		}
	}
	return sink, top.Generation, nil
}

// SameRanges checks that the config gives sink the ranges its routing rows
// recorded: readers route by the recorded ranges.
func SameRanges(projection, sink string, have []string, rows []Routing) error {
	for _, r := range rows {
		if !slices.Equal(r.Ranges, have) {
			return routingError(projection, "sink %s serves %s with ranges %s (routing generation %d), but the config gives it %s: restore sinks.%s.shards as they were, or move %s with readside reshard",
				sink, projection, RangesText(r.Ranges), r.Generation, RangesText(have), sink, projection)
		}
	}
	return nil
}

// SamePlacement checks that the projection is declared replicated, or split by its
// shard_by, as the reshard that recorded the routing declared it: a
// process still running the other declaration (a reshard that turned a
// replicated projection into a sharded one, run with the edited config
// while the daemon kept the old one) would put every row on the wrong
// shards.
func SamePlacement(projection string, replicated bool, sink string, gen uint64, rows []Routing) error {
	placement := func(replicated bool) string {
		if replicated {
			return "replicated (copied to every shard)"
		}
		return "sharded by its shard_by"
	}
	for _, r := range rows {
		if r.Generation == gen && r.Replicated != replicated {
			return routingError(projection, "projection %s is %s on sink %s at routing generation %d (the declaration readside reshard ran with), but this process declares it %s: run readside with the config the reshard ran with (restart the daemon after editing projections.%s)",
				projection, placement(r.Replicated), sink, gen, placement(replicated), projection)
		}
	}
	return nil
}
