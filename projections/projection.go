// Package projections turns declared read models (config `projections:`)
// into what the projector does with each change event: which read table,
// which read key, which columns, and — when an update moves a row to
// another read key — the delete of the old read row and the write of the
// new one with the same version.
package projections

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
)

// Projection is one compiled declaration.
type Projection struct {
	Name      string
	SourceDB  string
	SourceTbl string
	Topic     string
	Sink      string
	Table     string   // read table name
	Key       []string // read columns of the read table's primary key, shard_by first
	ShardBy   string
	Columns   []Column // read columns in table order: key first, then the rest by name
}

// Column maps a read column to the source column it copies.
type Column struct {
	Name   string // in the read table
	Source string // in the source row
}

// Compile validates the declarations that need no live schema and
// compiles them. Every problem is reported, each naming its key.
func Compile(cfg config.Config) ([]*Projection, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := make([]string, 0, len(cfg.Projections))
	for name := range cfg.Projections {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*Projection
	captured := map[string]bool{}
	for _, t := range cfg.Source.Tables {
		captured[t] = true
	}
	for _, name := range names {
		d := cfg.Projections[name]
		key := "projections." + name
		db, tbl, ok := config.SplitTable(d.From)
		if !ok {
			bad("%s.from %q: want db.table", key, d.From)
			continue
		}
		if !captured[d.From] {
			bad("%s.from %s is not in source.tables: add it there", key, d.From)
		}
		if _, ok := cfg.Sinks[d.Sink]; !ok {
			bad("%s.sink %q is not a configured sink (sinks.<name>)", key, d.Sink)
		}
		if len(d.Join) > 0 {
			bad("%s.join: joins are not implemented yet; remove the join or wait for it", key)
		}
		if d.Where != "" {
			bad("%s.where: row filters are not implemented yet; remove it", key)
		}
		if d.Replicated {
			bad("%s.replicated: reference projections are not implemented yet", key)
		}
		if len(d.Key) == 0 {
			bad("%s.key is empty: list the read table's primary key columns", key)
		}
		if len(d.Columns) == 0 {
			bad("%s.columns is empty: map read columns to source columns, e.g. {id: id}", key)
		}
		for _, k := range d.Key {
			if _, ok := d.Columns[k]; !ok {
				bad("%s.key column %q is not in %s.columns: add it there", key, k, key)
			}
		}
		if d.ShardBy != "" && !slices.Contains(d.Key, d.ShardBy) {
			bad("%s.shard_by %q must be one of its key columns %v", key, d.ShardBy, d.Key)
		}
		switch d.OnError {
		case "", "stop", "dlq":
		default:
			bad("%s.on_error %q: want dlq or stop", key, d.OnError)
		}
		p := &Projection{Name: name, SourceDB: db, SourceTbl: tbl, Topic: cdc.TopicFor(cfg.Kafka.TopicPrefix, db, tbl),
			Sink: d.Sink, Table: d.Table, ShardBy: d.ShardBy}
		if p.Table == "" {
			p.Table = name
		}
		// The shard key leads the primary key (co-locates what is read together).
		if d.ShardBy != "" {
			p.Key = append(p.Key, d.ShardBy)
		}
		for _, k := range d.Key {
			if k != d.ShardBy {
				p.Key = append(p.Key, k)
			}
		}
		for _, k := range p.Key {
			p.Columns = append(p.Columns, Column{Name: k, Source: d.Columns[k]})
		}
		var rest []string
		for c := range d.Columns {
			if !slices.Contains(p.Key, c) {
				rest = append(rest, c)
			}
		}
		sort.Strings(rest)
		for _, c := range rest {
			p.Columns = append(p.Columns, Column{Name: c, Source: d.Columns[c]})
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// CheckSourceKey verifies, against the source table's primary key, that
// the read key includes every source key column: then each read row comes
// from exactly one source row, whose changes all sit in one partition.
func (p *Projection) CheckSourceKey(sourcePK []string) error {
	var missing []string
	for _, pk := range sourcePK {
		found := false
		for _, k := range p.Key {
			if p.column(k).Source == pk {
				found = true
			}
		}
		if !found {
			missing = append(missing, pk)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("projections.%s.key must include the source's primary key column(s) %v (mapped under any name): otherwise two source rows could share one read row", p.Name, missing)
	}
	return nil
}

func (p *Projection) column(name string) Column {
	for _, c := range p.Columns {
		if c.Name == name {
			return c
		}
	}
	return Column{}
}
