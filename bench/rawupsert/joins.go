package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// runJoins is "B2 with join statements" (-joins): the limit of a
// projection with joins doing all of its sink work, which the plain B2
// leaves out (the parent locks, the parent state and the fan-out to the
// children, sinks/apply.go). Every record of the projection's topics,
// parents included, is built into batches by the projector's own
// Projection.Build (coalescing per read key and per parent key, offsets
// and watermarks filled in) and applied with the sink's Apply — the
// exact statements and transaction the projector runs — into fresh
// copies of the read table and the join state tables, under a copy of
// the projection named <name>_b2j (so its tables, offsets, watermarks,
// tombstones and truncations are its own). A point's batch rows are
// records per Build, as a projector poll is; its connections each get
// whole partitions (dealPartitions, dealt as the projector deals a poll),
// applying their batches one after the other. Building happens before the clock
// starts, as B2's decoding does; the rate counts records (source events,
// parents included), like the projector's.
//
// With arrays (-arrays, a children projection whose child state p
// copies), every batch also writes the read rows with arrays its records
// changed, once each (arrays.go), and the rate counts the records of
// arrays' topics too.
func runJoins(ctx context.Context, cfg config.Config, p *projections.Projection, recs []*kgo.Record, recPath string, points []benchio.Point, arrays *projections.Projection) error {
	if len(p.Joins) == 0 {
		return fmt.Errorf("projection %s has no joins: -joins measures a join's statements; run without -joins for B2", p.Name)
	}
	topics := p.Topics()
	var model []string
	var atypes projections.Types
	var shape *arrayModel // arrays' topics and columns (each point replays a model of its own)
	if arrays != nil {
		src, err := openSource(cfg)
		if err != nil {
			return err
		}
		atypes, err = arrays.SourceColumns(ctx, src)
		src.Close()
		if err != nil {
			return err
		}
		if shape, err = newArrayModel(arrays); err != nil {
			return err
		}
		model = shape.topics()
	}
	var mine, modelled []*kgo.Record
	for _, r := range recs {
		if r.Value == nil {
			continue
		}
		if slices.Contains(topics, r.Topic) || slices.Contains(model, r.Topic) {
			mine = append(mine, r)
		}
		if slices.Contains(model, r.Topic) {
			modelled = append(modelled, r)
		}
	}
	if len(mine) == 0 {
		return fmt.Errorf("%s holds no records of %s", recPath, strings.Join(append(topics, model...), ", "))
	}

	jp := *p
	jp.Name += "_b2j"
	jp.Table += "_b2j"
	types, sink, err := open(ctx, cfg, &jp)
	if err != nil {
		return err
	}
	defer sink.Close()
	tables := []string{jp.Table}
	for _, j := range jp.Joins {
		tables = append(tables, j.StateTable(&jp), j.PendingTable(&jp))
	}
	var drop []string
	for _, t := range tables {
		drop = append(drop, fmt.Sprintf("DROP TABLE IF EXISTS `%s`", t))
	}
	// reset leaves no trace of a previous point: the tables are created
	// again (sinks.DDL: the read table with its fan-out index, the state
	// tables, the bookkeeping tables) and the copy's bookkeeping rows go.
	reset := func(ctx context.Context, create bool) error {
		stmts := drop
		if create {
			stmts = append(append([]string{}, drop...), sinks.DDL(&jp, types)...)
		}
		if err := sink.Exec(ctx, stmts); err != nil {
			return err
		}
		for _, t := range []string{"_readside_offsets", "_readside_watermarks", "_readside_tombstones", "_readside_truncations"} {
			// A join's truncation row is named <projection>#join<n>.
			if _, err := sink.DB().ExecContext(ctx, "DELETE FROM `"+t+"` WHERE projection = ? OR LEFT(projection, ?) = ?", jp.Name, len(jp.Name)+5, jp.Name+"#join"); err != nil {
				return fmt.Errorf("clearing %s of %s: %w", t, jp.Name, err)
			}
		}
		return nil
	}
	defer reset(context.Background(), false)
	arraysTbl := ""
	var steps []arrayStep
	if arrays != nil {
		if steps, err = sourceOrder(modelled); err != nil {
			return err
		}
		arraysTbl = arrays.Table + "_b2a"
		drop, err := arraysTable(ctx, sink, arrays, atypes, arraysTbl)
		if err != nil {
			return err
		}
		defer drop()
	}

	var best benchio.Result
	var first *outcome
	for _, pt := range points {
		conns, at, writes, parents, err := buildBatches(&jp, mine, pt)
		if err != nil {
			return err
		}
		var after [][][]string
		var final []string
		if arrays != nil {
			if after, final, err = arrayBatches(arrays, arraysTbl, steps, at, conns); err != nil {
				return err
			}
			if err := sink.Exec(ctx, []string{"TRUNCATE TABLE `" + arraysTbl + "`"}); err != nil {
				return err
			}
		}
		if err := reset(ctx, true); err != nil {
			return err
		}
		settlePoint(ctx, sink, &best, pt)
		load, cpu0 := benchio.Load1(), benchio.SelfCPU()
		t := time.Now()
		if err := applyAll(ctx, sink, &jp, conns, after); err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		cpu := benchio.SelfCPU() - cpu0
		if arrays != nil {
			// Outside the clock: every row as the replay leaves it (the
			// connections' last writes of a row need not be its last
			// state), for the comparison with the projector's table.
			if err := sink.Exec(ctx, final); err != nil {
				return err
			}
			if best.ArrayRows, best.ArrayChecksum, err = arraysChecksum(ctx, sink.DB(), shape, arraysTbl); err != nil {
				return err
			}
		}
		// Every point applies the same records, so it must leave the same
		// rows: a difference means a point did less (or other) work.
		var out outcome
		if out.rows, out.joined, err = benchio.JoinedRows(ctx, sink.DB(), &jp); err != nil {
			return err
		}
		if first == nil {
			first = &out
			best.ReadRows, best.JoinedRows = out.rows, out.joined
		} else if !out.equal(*first) {
			return fmt.Errorf("the %dx%d point left %s, the first point %s: the points did not do the same work", pt.BatchRows, pt.Connections, out, *first)
		}
		if checksumCols != "" {
			// The rows' values, for a comparison with a read table of
			// another shape (benchall's children join check).
			if _, best.Checksum, err = benchio.TableChecksum(ctx, sink.DB(), jp.Table, strings.Split(checksumCols, ",")); err != nil {
				return err
			}
		}
		pt.PerS = float64(len(mine)) / secs
		best.Sweep = append(best.Sweep, pt)
		if pt.PerS > best.PerS {
			best.PerS, best.Seconds, best.Load1, best.Events = pt.PerS, secs, load, len(mine)
			best.CPUPer1000 = cpu / float64(len(mine)) * 1000
			best.Description = fmt.Sprintf("%d-record batches, %d connection(s); %d read-row and %d parent-state writes after coalescing; left %s",
				pt.BatchRows, len(conns), writes, parents, out)
		}
	}
	benchio.Emit(best)
	return nil
}

// buildBatches deals the records to the point's connections by whole
// partitions and builds each connection's batches of BatchRows records
// with the projector's Build (of the records of p's topics; a batch with
// none of them is nil). It also returns the connection and batch of
// each record, and the writes and parent writes the batches hold.
func buildBatches(p *projections.Projection, recs []*kgo.Record, pt benchio.Point) (conns [][]*projections.Batch, at map[*kgo.Record][2]int, writes, parents int, err error) {
	topics := p.Topics()
	at = map[*kgo.Record][2]int{}
	for ci, group := range dealPartitions(recs, pt.Connections) {
		var batches []*projections.Batch
		for lo := 0; lo < len(group); lo += pt.BatchRows {
			var own []*kgo.Record
			for _, r := range group[lo:min(lo+pt.BatchRows, len(group))] {
				at[r] = [2]int{ci, len(batches)}
				if slices.Contains(topics, r.Topic) {
					own = append(own, r)
				}
			}
			if len(own) == 0 {
				batches = append(batches, nil)
				continue
			}
			b, bad := p.Build(projector.Records(own))
			if len(bad) > 0 {
				r := bad[0].Record
				return nil, nil, 0, 0, fmt.Errorf("%d records the projection refuses, the first %s/%d@%d: %w", len(bad), r.Topic, r.Partition, r.Offset, bad[0].Reason)
			}
			writes += len(b.Writes)
			parents += len(b.Parents)
			batches = append(batches, b)
		}
		conns = append(conns, batches)
	}
	return conns, at, writes, parents, nil
}

// outcome is what a point left in the read table: its rows, and per join
// the rows showing a parent (benchio.JoinedRows).
type outcome struct {
	rows   int64
	joined []int64
}

func (o outcome) equal(x outcome) bool { return o.rows == x.rows && slices.Equal(o.joined, x.joined) }

func (o outcome) String() string {
	return fmt.Sprintf("%d read rows, %v showing a parent (per join)", o.rows, o.joined)
}

// dealPartitions deals records to at most n connections by whole
// partitions, as the projector deals a poll to its concurrent
// transactions (projections/projector.go): largest partition first, each
// to the connection with the fewest records so far; a connection's
// records keep their order in recs.
func dealPartitions(recs []*kgo.Record, n int) [][]*kgo.Record {
	type partition struct {
		topic string
		id    int32
	}
	size := map[partition]int{}
	var parts []partition
	for _, r := range recs {
		pa := partition{r.Topic, r.Partition}
		if size[pa] == 0 {
			parts = append(parts, pa)
		}
		size[pa]++
	}
	if n = min(n, len(parts)); n <= 1 {
		return [][]*kgo.Record{recs}
	}
	slices.SortStableFunc(parts, func(a, b partition) int { return size[b] - size[a] })
	conn := map[partition]int{}
	load := make([]int, n)
	for _, pa := range parts {
		lightest := 0
		for i, l := range load {
			if l < load[lightest] {
				lightest = i
			}
		}
		conn[pa] = lightest
		load[lightest] += size[pa]
	}
	conns := make([][]*kgo.Record, n)
	for _, r := range recs {
		c := conn[partition{r.Topic, r.Partition}]
		conns[c] = append(conns[c], r)
	}
	return conns
}
