package sinks

// The routing generation: which sink serves a projection. A reshard's
// cutover records, on every server that serves or served the projection,
// a row of `_readside_routing` naming the new sink under a higher
// generation. Every live apply transaction first reads that generation
// under a share lock held to commit, so the cutover's SELECT … FOR UPDATE
// waits for the applies in flight and then holds off new ones (the fence),
// and a projector started at an older generation stops with
// keyspace.RoutingChanged instead of writing where the projection no
// longer lives. The rows and how they are followed are keyspace's
// (keyspace/routing.go); reading and fencing them is here.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

func routingError(projection, format string, args ...any) error {
	return &keyspace.RoutingError{Projection: projection, Message: fmt.Sprintf(format, args...)}
}

// routingStatement reads a projection's generation under a share lock
// held to commit (the fence's other half).
func routingStatement(d dialect) string {
	return "SELECT generation FROM `_readside_routing` WHERE projection = ?" + d.shareLock()
}

// checkRouting queues, first in a's transaction, the read of p's routing
// generation; the transaction fails with keyspace.RoutingChanged when it
// is not want.
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
			return &keyspace.RoutingChanged{Projection: a.p.Name, Want: want, Have: have}
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
func (s *Sharded) Routing(ctx context.Context, projection string) ([]keyspace.Routing, error) {
	out := make([]keyspace.Routing, len(s.Shards))
	for i, sh := range s.Shards {
		var ranges string
		err := sh.db.QueryRowContext(ctx, "SELECT generation, sink, ranges, replicated FROM `_readside_routing` WHERE projection = ?", projection).
			Scan(&out[i].Generation, &out[i].Sink, &ranges, &out[i].Replicated)
		var me *driver.MySQLError
		switch {
		case errors.Is(err, sql.ErrNoRows), errors.As(err, &me) && me.Number == 1146:
			out[i] = keyspace.Routing{}
		case err != nil:
			return nil, fmt.Errorf("reading the routing of %s on shard %s of sink %s: %w", projection, sh.Range.Text, s.Name, err)
		default:
			out[i].Ranges = keyspace.SplitRanges(ranges)
		}
	}
	return out, nil
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
	Name string
	// Config is the sink's config (its servers, for reports).
	Config     config.Sink
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
		next, gen, err := keyspace.Step(p.Name, name, came, rows)
		if err != nil {
			return ResolvedSink{}, err
		}
		if next == name {
			if gen > 0 {
				if err := keyspace.SameRanges(p.Name, name, s.Ranges(), rows); err != nil {
					return ResolvedSink{}, err
				}
				if err := keyspace.SamePlacement(p.Name, p.Replicated, name, gen, rows); err != nil {
					return ResolvedSink{}, err
				}
				if len(s.Shards) > 1 && p.ShardBy == "" && !p.Replicated {
					// Without a keyspace id every row would route to
					// the first shard.
					return ResolvedSink{}, routingError(p.Name, "projection %s is served by sink %s (routing generation %d), which has %d shards, but this process declares it without shard_by: run readside with the config the reshard ran with (restart the daemon after setting projections.%s.shard_by)",
						p.Name, name, gen, len(s.Shards), p.Name)
				}
			}
			return ResolvedSink{Name: name, Config: configured[name], Sink: s, Generation: gen}, nil
		}
		if _, ok := configured[next]; !ok {
			return ResolvedSink{}, routingError(p.Name, "projection %s is served by sink %s (routing generation %d, recorded on sink %s), which the config does not name: add sinks.%s back to the config as it was when the reshard ran", p.Name, next, gen, name, next)
		}
		name, via, came = next, name, gen
	}
	return ResolvedSink{}, routingError(p.Name, "the routing of %s names a sink more than %d times over (last %s, via %s): check `_readside_routing` on its servers", p.Name, maxRoutingHops, name, via)
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
