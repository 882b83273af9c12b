package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/readside/readside/config"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/shards"
	"github.com/readside/readside/sinks"
)

// byColumn is the read column --by's expression is compiled as: a name no
// declaration uses, so it cannot shadow one.
const byColumn = "readside_analyze_by__"

// runShards is `readside shards analyze`: how a projection's rows spread
// over its sink's shards and over even splits (package shards).
func runShards(args []string, stdout, stderr io.Writer) int {
	c := newCommand("shards", stdout, stderr)
	fs := c.fs
	name := fs.String("projection", "", "`NAME` of the projection to analyze")
	counts := fs.String("shards", "2,4,8,16", "even splits to measure, as shard `COUNTS`")
	by := fs.String("by", "", "route by this `EXPR` over the source row instead of shard_by (a candidate key)")
	sample := fs.Int("sample", shards.DefaultSample, "sample about `N` source rows (the same rows every run)")
	all := fs.Bool("all", false, "read every source row: exact counts")
	to := fs.String("to", "", "count the rows a reshard to these `RANGES` moves, e.g. -40,40-80,80-c0,c0-")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if len(args) > 0 && args[0] == "analyze" {
		args = args[1:]
	} else if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "readside shards: want the subcommand analyze, e.g. readside shards analyze --projection NAME\nrun 'readside shards --help' for its flags\n")
		return exitUsage
	}
	if code, done := c.parse(args); done {
		return code
	}
	c.prefix = "readside shards analyze"
	fail := func(format string, a ...any) int { return c.failf(exitUsage, format, a...) }
	if *name == "" {
		return fail("--projection is required: name the projection to analyze (projections.<name>)")
	}
	sampleSet := false
	fs.Visit(func(f *flag.Flag) { sampleSet = sampleSet || f.Name == "sample" })
	if *all && sampleSet {
		return fail("--all reads every row and --sample a part of them: give one")
	}
	if *sample < 1 {
		return fail("--sample %d: want a number of rows above 0, or --all", *sample)
	}
	var splits []shards.Layout
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fail("--shards %q: want shard counts separated by commas, e.g. 2,4,8,16", *counts)
		}
		rs, err := shards.EvenRanges(n)
		if err != nil {
			return fail("--shards: %v", err)
		}
		splits = append(splits, shards.Layout{Name: fmt.Sprintf("%d shards", n), Ranges: rs})
	}
	var target []keyspace.Range
	if *to != "" {
		var err error
		if target, err = shards.ParseRanges(*to); err != nil {
			return fail("--to: %v: give ranges that cover the keyspace once, like a sink's shards (-80,80-)", err)
		}
	}
	cfg, code, ok := c.loadOrFail()
	if !ok {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	rep, err := analyze(ctx, cfg, *name, *by, splits, target, shards.Options{Sample: *sample, All: *all}, stderr)
	if err != nil {
		return fail("%v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail("%v", err)
		}
		return exitOK
	}
	rep.WriteText(stdout)
	return exitOK
}

// analyze measures projection name of cfg: routed by its shard_by, or by
// the expression by; over the current ranges of its sink, then splits;
// with the rows moving to target when it is set.
func analyze(ctx context.Context, cfg config.Config, name, by string, splits []shards.Layout, target []keyspace.Range, opts shards.Options, stderr io.Writer) (shards.Report, error) {
	rep := shards.Report{Projection: name}
	decl, ok := cfg.Projections[name]
	if !ok {
		return rep, fmt.Errorf("no projection %q in the config (projections.<name>)", name)
	}
	if by != "" {
		// The expression is compiled and typed as a read column would be,
		// on a copy of the declaration, so it is computed as the
		// projector would compute it.
		decl.Columns = maps.Clone(decl.Columns)
		if decl.Columns == nil {
			decl.Columns = map[string]string{}
		}
		decl.Columns[byColumn] = by
		cfg.Projections = maps.Clone(cfg.Projections)
		cfg.Projections[name] = decl
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		return rep, err
	}
	var p *projections.Projection
	for _, c := range ps {
		if c.Name == name {
			p = c
		}
	}
	switch {
	case p.Aggregation != nil:
		return rep, fmt.Errorf("projections.%s is an aggregate: its read rows are groups, not source rows, and analyze counts source rows; analyze a projection of the same source with the group column as shard_by (or --by it)", name)
	case by == "" && p.ShardBy == "":
		return rep, fmt.Errorf("projections.%s has no shard_by, so its rows are not routed: pass --by EXPR to measure a candidate shard_by", name)
	}
	sink, ranges, err := currentRanges(ctx, cfg, p)
	if err != nil {
		if ranges == nil {
			return rep, err
		}
		fmt.Fprintf(stderr, "readside shards analyze: %v: the current ranges are those the config gives sink %s, which a reshard may have replaced\n", err, sink)
	}
	rep.Sink = sink
	src, err := shards.OpenSource(cfg.Source)
	if err != nil {
		return rep, err
	}
	defer src.Close()
	if _, err := p.SourceColumns(ctx, src); err != nil {
		return rep, fmt.Errorf("typing projections.%s against the source: %w", name, err)
	}
	col := p.Columns[0] // shard_by leads the key
	rep.By = p.ShardBy
	if by != "" {
		rep.By = by
		for _, c := range p.Columns {
			if c.Name == byColumn {
				col = c
			}
		}
		// The extra column is not the projection's: its bytes are not
		// the read row's.
		var cols []projections.Column
		for _, c := range p.Columns {
			if c.Name != byColumn {
				cols = append(cols, c)
			}
		}
		p.Columns = cols
	}
	current := shards.Layout{Name: fmt.Sprintf("current ranges of sink %s", sink), Ranges: ranges}
	if p.Replicated {
		current.Name += " (the projection is replicated: every shard holds every row; shown as if routed)"
	}
	c := shards.NewCounter(append([]shards.Layout{current}, splits...), target)
	if rep.Sample, err = shards.Scan(ctx, src, p, col, opts, c); err != nil {
		return rep, err
	}
	rep.Stats = c.Stats(10)
	if rep.Sample.Every > 1 {
		for i, l := range rep.Layouts {
			rep.Layouts[i].SkewBound = shards.SkewBound(len(l.Shards), rep.Rows)
		}
	}
	return rep, nil
}

// currentRanges are the ranges of the sink that serves p now: the one its
// routing names (sinks.Resolve), which a reshard not yet written into the
// config makes another than p.Sink. When the sinks cannot be read, they
// are the config's sink's ranges, with the error that kept the routing
// unread (nil ranges: the config's are wrong too).
func currentRanges(ctx context.Context, cfg config.Config, p *projections.Projection) (string, []keyspace.Range, error) {
	ranges, err := sinks.ShardRanges(p.Sink, cfg.Sinks[p.Sink])
	if err != nil {
		return p.Sink, nil, err
	}
	at, closeSinks, err := sinks.OpenResolved(ctx, cfg.Sinks, p)
	defer closeSinks()
	if err != nil {
		return p.Sink, ranges, fmt.Errorf("reading the routing of %s: %w", p.Name, err)
	}
	out := make([]keyspace.Range, len(at.Sink.Shards))
	for i, sh := range at.Sink.Shards {
		out[i] = sh.Range
	}
	return at.Name, out, nil
}
