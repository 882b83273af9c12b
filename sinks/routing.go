package sinks

// The routing generation: which sink serves a projection. A reshard's
// cutover records, on every server that serves or served the projection,
// a row of `_readside_routing` naming the new sink under a higher
// generation. Every live apply transaction first reads that generation
// under a share lock held to commit, so the cutover's SELECT … FOR UPDATE
// waits for the applies in flight and then holds off new ones (the fence),
// and a projector started at an older generation stops with
// RoutingChanged instead of writing where the projection no longer lives.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
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

// routingStatement reads a projection's generation under a share lock
// held to commit (the fence's other half).
func routingStatement(d dialect) string {
	return "SELECT generation FROM `_readside_routing` WHERE projection = ?" + d.shareLock()
}

// checkRouting queues, first in a's transaction, the read of p's routing
// generation; the transaction fails with RoutingChanged when it is not
// want.
func (a *applier) checkRouting(want uint64) error {
	return a.run.check(a.ctx, a.st.comment+a.st.routing, []any{a.p.Name}, func(rows *sql.Rows) error {
		var have uint64
		if rows.Next() {
			if err := rows.Scan(&have); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if have != want {
			return &RoutingChanged{Projection: a.p.Name, Want: want, Have: have}
		}
		return nil
	})
}

// Routed is s as a projections.Sink whose every shard transaction first
// checks that p's routing generation is still generation (live projectors
// only: a rebuild's, a backfill's or a reshard's fill projector writes
// where it is told). It shares s's connections: close s, not it.
func (s *Sharded) Routed(generation uint64) projections.Sink {
	r := *s
	r.routed, r.generation = true, generation
	return &r
}

// Routing reads projection's routing row on every shard, in shard order.
// A shard without the table (never set up for routing) has no row.
func (s *Sharded) Routing(ctx context.Context, projection string) ([]Routing, error) {
	out := make([]Routing, len(s.Shards))
	for i, sh := range s.Shards {
		var ranges string
		err := sh.db.QueryRowContext(ctx, "SELECT generation, sink, ranges, replicated FROM `_readside_routing` WHERE projection = ?", projection).
			Scan(&out[i].Generation, &out[i].Sink, &ranges, &out[i].Replicated)
		var me *driver.MySQLError
		switch {
		case errors.Is(err, sql.ErrNoRows), errors.As(err, &me) && me.Number == 1146:
			out[i] = Routing{}
		case err != nil:
			return nil, fmt.Errorf("reading the routing of %s on shard %s of sink %s: %w", projection, sh.Range.Text, s.Name, err)
		default:
			out[i].Ranges = SplitRanges(ranges)
		}
	}
	return out, nil
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

// Ranges are the key ranges of s's shards, in shard order.
func (s *Sharded) Ranges() []string {
	out := make([]string, len(s.Shards))
	for i, sh := range s.Shards {
		out[i] = sh.Range.Text
	}
	return out
}

// ResolvedSink is the sink that serves a projection now, and the routing
// generation it serves it at.
type ResolvedSink struct {
	Name       string
	Sink       *Sharded
	Generation uint64
}

// maxRoutingHops bounds how many recorded moves Resolve follows: each hop
// is a reshard whose config change was not made yet.
const maxRoutingHops = 8

// Resolve opens the sink that serves p now: it starts at the config's sink
// p.Sink and follows the routing rows (the highest generation on a sink's
// shards names the next sink) until a sink whose rows name itself, or that
// has none. open opens a config sink by name; the sinks it opened along
// the way are the caller's to close. A sink the rows name must be in
// configured (the config's sinks, by name) with the ranges the rows
// record. Servers that disagree (a cutover under
// way) give *RoutingUnsettled.
func Resolve(ctx context.Context, configured map[string]config.Sink, p *projections.Projection, open func(ctx context.Context, name string) (*Sharded, error)) (ResolvedSink, error) {
	name, via := p.Sink, ""
	var came uint64 // the generation that named name
	for range maxRoutingHops {
		s, err := open(ctx, name)
		if err != nil {
			return ResolvedSink{}, err
		}
		rows, err := s.Routing(ctx, p.Name)
		if err != nil {
			return ResolvedSink{}, err
		}
		next, gen, err := routingStep(p.Name, name, came, rows)
		if err != nil {
			return ResolvedSink{}, err
		}
		if next == name {
			if gen > 0 {
				if err := sameRanges(p.Name, name, s.Ranges(), rows); err != nil {
					return ResolvedSink{}, err
				}
				if err := samePlacement(p, name, gen, rows); err != nil {
					return ResolvedSink{}, err
				}
			}
			return ResolvedSink{Name: name, Sink: s, Generation: gen}, nil
		}
		if _, ok := configured[next]; !ok {
			return ResolvedSink{}, routingError(p.Name, "projection %s is served by sink %s (routing generation %d, recorded on sink %s), which the config does not name: add sinks.%s back to the config as it was when the reshard ran", p.Name, next, gen, name, next)
		}
		name, via, came = next, name, gen
	}
	return ResolvedSink{}, routingError(p.Name, "the routing of %s names a sink more than %d times over (last %s, via %s): check `_readside_routing` on its servers", p.Name, maxRoutingHops, name, via)
}

// routingStep reads the routing rows of projection on the shards of sink
// (reached by generation came; 0 for the config's sink): the sink they
// name and its generation. next == sink when the rows name sink (or there
// are none); the shards must then all hold that generation.
func routingStep(projection, sink string, came uint64, rows []Routing) (next string, gen uint64, err error) {
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

// sameRanges checks that the config gives sink the ranges its routing rows
// recorded: readers route by the recorded ranges.
func sameRanges(projection, sink string, have []string, rows []Routing) error {
	for _, r := range rows {
		if !slices.Equal(r.Ranges, have) {
			return routingError(projection, "sink %s serves %s with ranges %s (routing generation %d), but the config gives it %s: restore sinks.%s.shards as they were, or move %s with readside reshard",
				sink, projection, RangesText(r.Ranges), r.Generation, RangesText(have), sink, projection)
		}
	}
	return nil
}

// samePlacement checks that p is declared replicated, or split by its
// shard_by, as the reshard that recorded the routing declared it: a
// process still running the other declaration (a reshard that turned a
// replicated projection into a sharded one, run with the edited config
// while the daemon kept the old one) would put every row on the wrong
// shards.
func samePlacement(p *projections.Projection, sink string, gen uint64, rows []Routing) error {
	placement := func(replicated bool) string {
		if replicated {
			return "replicated (copied to every shard)"
		}
		return "sharded by its shard_by"
	}
	for _, r := range rows {
		if r.Generation == gen && r.Replicated != p.Replicated {
			return routingError(p.Name, "projection %s is %s on sink %s at routing generation %d (the declaration readside reshard ran with), but this process declares it %s: run readside with the config the reshard ran with (restart the daemon after editing projections.%s)",
				p.Name, placement(r.Replicated), sink, gen, placement(p.Replicated), p.Name)
		}
	}
	return nil
}

// OpenResolved is Resolve opening the sinks on the way from configured
// (the config's sinks, by name), for a command that works on one
// projection; closeAll closes every sink it opened, the resolved one
// included (also after an error).
func OpenResolved(ctx context.Context, configured map[string]config.Sink, p *projections.Projection) (at ResolvedSink, closeAll func(), err error) {
	opened := map[string]*Sharded{}
	closeAll = func() {
		for _, s := range opened {
			s.Close()
		}
	}
	at, err = Resolve(ctx, configured, p, func(ctx context.Context, name string) (*Sharded, error) {
		if s := opened[name]; s != nil {
			return s, nil
		}
		s, err := OpenSharded(ctx, name, configured[name])
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", name, err)
		}
		opened[name] = s
		return s, nil
	})
	return at, closeAll, err
}
