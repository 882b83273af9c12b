// Command rawupsert is limit B2 of `make bench`: a projection's own writes,
// decoded from the records a tailer published (a record file benchall
// writes) and *not* coalesced, applied with the sink's Apply — the exact
// version-guarded multi-row upsert (and delete) statements and
// transaction the projector uses — into a fresh copy of the read table
// (<table>_b2), swept over batch sizes × connections; each connection
// owns a key range, as the projector's partitions do. It prints one JSON
// line: the best point's writes per second, its CPU per 1,000 writes,
// peak RSS, and the whole sweep.
//
//	go run ./rawupsert -config readside.yaml -projection p_narrow_insert -records /tmp/bench/narrow_insert.records
//
// The source (for column types) and the sink come from the readside
// config. A projection with joins is measured on its child rows alone:
// the records of its own source topic, upserted without the parent
// copies (no parent locks, state or fan-out), so B2 is the plain upsert
// of the child's own columns.
//
// With -joins (projections with joins only), it measures instead the
// join's whole statement set, "B2 with join statements" (joins.go): every
// record, parents included, built into batches by the projector's own
// Build and applied with Apply into fresh copies of the read table and
// the join state tables.
//
// With -aggregate (aggregate projections only), it measures the raw
// multi-row upsert of the projection's group rows, coalesced per batch
// of records and computed here from the source rows (aggregate.go); for
// groups from a joined parent also the contributions with their links,
// the parent state and the regroup (aggregate_joined.go).
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// DefaultSweep is benchall's sweep: batch rows x connections.
const DefaultSweep = "1000x1,5000x1,2000x2,5000x2,5000x4"

func main() {
	cfgPath := flag.String("config", "", "readside config (source.dsn for column types, the projection, its sink)")
	name := flag.String("projection", "", "projection to measure (default: the config's only projection)")
	recPath := flag.String("records", "", "record file (benchall writes <bench dir>/<workload>.records)")
	sweep := flag.String("sweep", DefaultSweep, "comma-separated batch-rows x connections points")
	aggregate := flag.Bool("aggregate", false, "an aggregate projection's B2: the raw multi-row upsert of its group rows, coalesced per batch of records (see aggregate.go)")
	joins := flag.Bool("joins", false, "measure the join's statements too: every record, parents included, batched by the projector's Build (batch rows = records), partitions dealt to connections (see joins.go)")
	arrays := flag.String("arrays", "", "with -joins: a children projection of the config whose child state the measured projection copies; each batch also writes the read rows with arrays its records changed (see arrays.go)")
	flag.StringVar(&checksumCols, "checksum", "", "with -joins: comma-separated read columns whose checksum (benchio.TableChecksum) the result carries, taken before the tables are dropped")
	flag.DurationVar(&settleLimit, "settle", 0, "before each point, wait up to this long for MariaDB to flush its dirty pages and purge its undo history (benchall passes its -settle; 0: do not wait)")
	flag.Parse()
	if err := run(*cfgPath, *name, *recPath, *sweep, *arrays, *joins, *aggregate); err != nil {
		benchio.Fail("rawupsert", err)
	}
}

func run(cfgPath, name, recPath, sweepText, arraysName string, joins, aggregate bool) error {
	if cfgPath == "" || recPath == "" {
		return errors.New("-config and -records are required (see go doc ./rawupsert inside bench/)")
	}
	points, err := parseSweep(sweepText)
	if err != nil {
		return fmt.Errorf("-sweep: %w", err)
	}
	ctx := context.Background()
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		return err
	}
	if aggregate {
		// The aggregate's own compilation is not needed: the group rows
		// are computed here from a plain copy of the source rows.
		recs, err := benchio.ReadRecords(recPath)
		if err != nil {
			return err
		}
		return runAggregate(ctx, cfg, name, recs, recPath, points)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		return err
	}
	var p, arrays *projections.Projection
	for _, c := range ps {
		if c.Name == name || (name == "" && len(ps) == 1) {
			p = c
		}
		if arraysName != "" && c.Name == arraysName {
			arrays = c
		}
	}
	if p == nil {
		return fmt.Errorf("no projection %q in %s (name one with -projection)", name, cfgPath)
	}
	if arraysName != "" && (arrays == nil || !joins) {
		return fmt.Errorf("-arrays %s: name a children projection of %s, with -joins", arraysName, cfgPath)
	}
	recs, err := benchio.ReadRecords(recPath)
	if err != nil {
		return err
	}
	if joins {
		return runJoins(ctx, cfg, p, recs, recPath, points, arrays)
	}
	// Typed against the source before its writes are made: computed
	// columns are evaluated with their types.
	types, sink, err := open(ctx, cfg, p)
	if err != nil {
		return err
	}
	defer sink.Close()
	var writes []projections.Write
	for _, rec := range recs {
		if rec.Topic != "" && rec.Topic != p.Topic {
			continue // a join's parent records
		}
		ev, err := event.DecodeEvent(rec.Value)
		if err != nil {
			return err
		}
		ws, err := p.Writes(ev)
		if err != nil {
			return err
		}
		writes = append(writes, ws...)
	}
	if len(writes) == 0 {
		return fmt.Errorf("%s holds no records of %s", recPath, p.Topic)
	}
	recs = nil

	raw := *p
	raw.Joins = nil
	for i := range writes {
		writes[i].Parents = nil // the parent references go with the joins
	}
	raw.Table += "_b2"
	if err := sink.Exec(ctx, append([]string{fmt.Sprintf("DROP TABLE IF EXISTS `%s`", raw.Table)}, sinks.DDL(&raw, types)...)); err != nil {
		return err
	}
	defer sink.Exec(ctx, []string{fmt.Sprintf("DROP TABLE IF EXISTS `%s`", raw.Table)})

	var best benchio.Result
	for _, pt := range points {
		if err := sink.Exec(ctx, []string{fmt.Sprintf("TRUNCATE TABLE `%s`", raw.Table)}); err != nil {
			return err
		}
		conns := make([][]*projections.Batch, pt.Connections)
		parts := make([][]projections.Write, pt.Connections)
		for _, w := range writes {
			h := fnv.New32a()
			h.Write([]byte(w.Key))
			i := int(h.Sum32() % uint32(pt.Connections))
			parts[i] = append(parts[i], w)
		}
		for i, part := range parts {
			for lo := 0; lo < len(part); lo += pt.BatchRows {
				conns[i] = append(conns[i], &projections.Batch{Writes: part[lo:min(lo+pt.BatchRows, len(part))]})
			}
		}
		settlePoint(ctx, sink, &best, pt)
		load, cpu0 := benchio.Load1(), benchio.SelfCPU()
		t := time.Now()
		if err := applyAll(ctx, sink, &raw, conns, nil); err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		pt.PerS = float64(len(writes)) / secs
		best.Sweep = append(best.Sweep, pt)
		if pt.PerS > best.PerS {
			best.PerS, best.Seconds, best.Load1, best.Events = pt.PerS, secs, load, len(writes)
			best.CPUPer1000 = (benchio.SelfCPU() - cpu0) / float64(len(writes)) * 1000
			best.Description = fmt.Sprintf("%d-row batches, %d connection(s)", pt.BatchRows, pt.Connections)
		}
	}
	benchio.Emit(best)
	return nil
}

// checksumCols is -checksum.
var checksumCols string

// settleLimit is -settle.
var settleLimit time.Duration

// settlePoint lets MariaDB flush and purge what the point before wrote
// (benchio.SettleInnoDB), so that every point starts alike and the sweep's
// later points do not pay for the earlier ones. A failure is reported on
// stderr and the point runs unsettled.
func settlePoint(ctx context.Context, sink *sinks.MySQL, best *benchio.Result, pt benchio.Point) {
	if settleLimit <= 0 {
		return
	}
	s, err := benchio.SettleInnoDB(ctx, sink.DB(), fmt.Sprintf("B2 %dx%d", pt.BatchRows, pt.Connections), settleLimit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawupsert: warning:", err)
	}
	best.Settles = append(best.Settles, s)
}

// applyAll applies each connection's batches in order, the connections
// concurrently, and returns the first error.
func applyAll(ctx context.Context, sink *sinks.MySQL, p *projections.Projection, conns [][]*projections.Batch, after [][][]string) error {
	errs := make(chan error, len(conns))
	for ci, batches := range conns {
		go func() {
			for bi, b := range batches {
				if b != nil {
					if err := sink.Apply(ctx, p, b); err != nil {
						errs <- err
						return
					}
				}
				// A background fan-out's copies, after each batch: the
				// coalescing window of in_batch's fan-out, so the point's
				// batch size sets both alike.
				if p.FanOut == projections.FanOutBackground {
					if err := sink.DrainFanOuts(ctx, p); err != nil {
						errs <- err
						return
					}
				}
				// The batch's read rows with arrays (-arrays), in a
				// transaction of their own after the child state's.
				if after != nil && len(after[ci][bi]) > 0 {
					if err := execTxns(ctx, sink.DB(), [][]string{after[ci][bi]}); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openSource opens the config's source server.
func openSource(cfg config.Config) (*sql.DB, error) {
	dcfg, err := driver.ParseDSN(cfg.Source.DSN.Reveal())
	if err != nil {
		return nil, fmt.Errorf("source.dsn: %w", err)
	}
	connector, err := driver.NewConnector(dcfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// open reads p's column types from the source and opens p's sink (one
// server: a sharded sink is refused).
func open(ctx context.Context, cfg config.Config, p *projections.Projection) (projections.Types, *sinks.MySQL, error) {
	src, err := openSource(cfg)
	if err != nil {
		return projections.Types{}, nil, err
	}
	defer src.Close()
	types, err := p.SourceColumns(ctx, src)
	if err != nil {
		return types, nil, err
	}
	sc := cfg.Sinks[p.Sink]
	if len(sc.Shards) > 0 {
		return types, nil, fmt.Errorf("sinks.%s is sharded: rawupsert measures one sink server; give it a config with sinks.%s.dsn", p.Sink, p.Sink)
	}
	sink, err := sinks.Open(ctx, sc.DSN.Reveal())
	return types, sink, err
}

func parseSweep(s string) ([]benchio.Point, error) {
	var out []benchio.Point
	for _, f := range strings.Split(s, ",") {
		rows, conns, ok := strings.Cut(strings.TrimSpace(f), "x")
		r, err1 := strconv.Atoi(rows)
		c, err2 := strconv.Atoi(conns)
		if !ok || err1 != nil || err2 != nil || r < 1 || c < 1 {
			return nil, fmt.Errorf("%q is not <batch rows>x<connections>, e.g. 5000x2", f)
		}
		out = append(out, benchio.Point{BatchRows: r, Connections: c})
	}
	return out, nil
}
