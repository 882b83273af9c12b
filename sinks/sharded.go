package sinks

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// Shard is one key range of a sink and its server.
type Shard struct {
	Range keyspace.Range
	*MySQL
}

// Sharded is a sink of one or more shards (a single-DSN sink is the one
// shard "-"). Each shard commits its part of a batch, with the batch's
// offsets, in its own transaction; shards are written concurrently.
type Sharded struct {
	Name   string
	Shards []Shard
	// routed: every shard transaction checks the routing generation
	// generation first (Routed).
	routed     bool
	generation uint64
}

// ShardRanges parses and checks a sink's key ranges; errors name the key.
func ShardRanges(name string, cfg config.Sink) ([]keyspace.Range, error) {
	if len(cfg.Shards) == 0 {
		r, _ := keyspace.ParseRange("-")
		return []keyspace.Range{r}, nil
	}
	var rs []keyspace.Range
	var errs []error
	for i, sh := range cfg.Shards {
		r, err := keyspace.ParseRange(sh.KeyRange)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinks.%s.shards[%d].keyrange: %v", name, i, err))
			continue
		}
		rs = append(rs, r)
	}
	if len(errs) == 0 {
		if err := keyspace.CheckRanges(rs); err != nil {
			errs = append(errs, fmt.Errorf("sinks.%s.shards: %v", name, err))
		}
	}
	return rs, errors.Join(errs...)
}

// OpenSharded connects to every shard of a sink.
func OpenSharded(ctx context.Context, name string, cfg config.Sink) (*Sharded, error) {
	ranges, err := ShardRanges(name, cfg)
	if err != nil {
		return nil, err
	}
	s := &Sharded{Name: name}
	dsns := []string{cfg.DSN.Reveal()}
	if len(cfg.Shards) > 0 {
		dsns = dsns[:0]
		for _, sh := range cfg.Shards {
			dsns = append(dsns, sh.DSN.Reveal())
		}
	}
	for i, dsn := range dsns {
		m, err := Open(ctx, dsn)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sinks.%s shard %s: %w", name, ranges[i].Text, err)
		}
		s.Shards = append(s.Shards, Shard{Range: ranges[i], MySQL: m})
	}
	return s, nil
}

// Close closes every shard.
func (s *Sharded) Close() error {
	var errs []error
	for _, sh := range s.Shards {
		errs = append(errs, sh.MySQL.Close())
	}
	return errors.Join(errs...)
}

// Exec runs DDL on every shard.
func (s *Sharded) Exec(ctx context.Context, stmts []string) error {
	for _, sh := range s.Shards {
		if err := sh.Exec(ctx, stmts); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return nil
}

// CheckReadTable checks p's read table on every shard (MySQL.CheckReadTable).
func (s *Sharded) CheckReadTable(ctx context.Context, p *projections.Projection) error {
	for _, sh := range s.Shards {
		if err := sh.CheckReadTable(ctx, p); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return nil
}

// Offsets are the lowest over the shards (LowestOffsets).
func (s *Sharded) Offsets(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	return LowestOffsets(ctx, s.Shards, p)
}

// LowestOffsets are, per topic and partition, the lowest next offset of
// p over shards; a partition some shard has never committed starts from
// the beginning. Records a shard already has are applied to it again,
// which the version guards make harmless.
func LowestOffsets(ctx context.Context, shards []Shard, p *projections.Projection) (event.Offsets, error) {
	var out event.Offsets
	for i, sh := range shards {
		o, err := sh.Offsets(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
		if i == 0 {
			out = o
			continue
		}
		out = out.Min(o)
	}
	return out, nil
}

// Route returns the shards a write goes to: every shard for reference
// (replicated) projections, else the one whose range holds the row's
// keyspace id.
func (s *Sharded) Route(p *projections.Projection, w projections.Write) []int {
	if p.Replicated || len(s.Shards) == 1 {
		if len(s.Shards) == 1 {
			return []int{0}
		}
		all := make([]int, len(s.Shards))
		for i := range all {
			all[i] = i
		}
		return all
	}
	for i, sh := range s.Shards {
		if sh.Range.Contains(w.KeyspaceID) {
			return []int{i}
		}
	}
	return nil // unreachable: keyspace.CheckRanges proved the ranges cover the space
}

// Apply splits a batch by shard and applies the parts concurrently. Parent
// state goes to every shard (a parent's children may live on any of them),
// and so do contributions and child state: each shard keeps every source
// row's last version, so a row that moved its group or parent to another
// shard is withdrawn from the old one exactly once, in whatever order its
// events come;
// every shard records the batch's offsets, even with no rows of its own,
// so the minimum over shards moves on.
func (s *Sharded) Apply(ctx context.Context, p *projections.Projection, b *projections.Batch) error {
	if len(s.Shards) == 1 { // nothing to split (Route would send every row there)
		return s.applyShard(ctx, 0, p, b)
	}
	parts := s.split(p, b)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() {
			if err := s.applyShard(ctx, i, p, part); err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", s.Shards[i].Range.Text, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// split is b's part for each shard (see Apply).
func (s *Sharded) split(p *projections.Projection, b *projections.Batch) []*projections.Batch {
	if len(s.Shards) == 1 {
		return []*projections.Batch{b}
	}
	parts := make([]*projections.Batch, len(s.Shards))
	for i := range parts {
		parts[i] = &projections.Batch{Parents: b.Parents, Contributions: b.Contributions, ChildWrites: b.ChildWrites,
			Offsets: b.Offsets, Stale: b.Stale, Marks: b.Marks, Shard: &s.Shards[i].Range, CaughtUp: b.CaughtUp,
			Writes: make([]projections.Write, 0, len(b.Writes)/len(s.Shards)+16)}
	}
	for _, w := range b.Writes {
		if w.Kind == projections.Truncate {
			for _, part := range parts {
				part.Writes = append(part.Writes, w)
			}
			continue
		}
		for _, i := range s.Route(p, w) {
			parts[i].Writes = append(parts[i].Writes, w)
		}
	}
	return parts
}

// applyShard applies shard i's part of a batch, checking the routing
// generation first when s is Routed.
func (s *Sharded) applyShard(ctx context.Context, i int, p *projections.Projection, b *projections.Batch) error {
	sh := s.Shards[i].MySQL
	if !s.routed {
		return sh.Apply(ctx, p, b)
	}
	gen := s.generation
	return sh.retried(ctx, p, b, func(ctx context.Context, p *projections.Projection, b *projections.Batch) error {
		return sh.apply(ctx, p, b, &gen)
	})
}
