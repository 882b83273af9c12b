package main

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// plannedProjection is a compiled projection with its read table's DDL.
type plannedProjection struct {
	p     *projections.Projection
	types projections.Types
	ddl   []string
}

// unplanned is a projection that does not fit the live source schema.
type unplanned struct {
	name string
	err  error
}

// planEach compiles the declarations and plans each projection against
// the live source schema, the projections that do not fit the source
// apart (in declaration order); err is what no projection can run with
// (any declaration problem, a sink's key ranges, the source DSN), for
// `run` refuses a config with one.
func planEach(ctx context.Context, cfg config.Config) (planned []plannedProjection, failed []unplanned, err error) {
	ds := projections.CompileEach(cfg)
	errs := sinkRangeProblems(cfg)
	for _, d := range ds {
		errs = append(errs, unjoin(d.Err)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	src, connector, err := openSource(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	for _, d := range ds {
		pp, err := planOne(ctx, src, connector, d.P)
		if err != nil {
			if ctx.Err() != nil || reachingSource(err) {
				return nil, nil, err
			}
			failed = append(failed, unplanned{name: d.Name, err: err})
			continue
		}
		planned = append(planned, pp)
	}
	return planned, failed, nil
}

// checkProjections is what `check` and `plan` know of the projections in
// one run: those that plan, and every problem of every projection — its
// declaration's (Compile) and, wherever its from names a table, the live
// source schema's, which SourceColumns checks even beside declaration
// problems, leaving out only the checks that depend on what failed to
// compile — plus the sinks' key ranges. One projection's problems never
// keep another's from being checked.
func checkProjections(ctx context.Context, cfg config.Config) ([]plannedProjection, []error) {
	problems := sinkRangeProblems(cfg)
	var src *sql.DB
	var connector sqldriver.Connector
	srcErr := errors.New("source.dsn is empty") // (an invalid config: check goes on with it)
	if cfg.Source.DSN != "" {
		src, connector, srcErr = openSource(cfg)
	}
	if srcErr == nil {
		defer src.Close()
	}
	var planned []plannedProjection
	for _, d := range projections.CompileEach(cfg) {
		errs := unjoin(d.Err)
		if d.P == nil || srcErr != nil {
			problems = append(problems, errs...)
			continue
		}
		pp, err := planOne(ctx, src, connector, d.P)
		switch {
		case err == nil && len(errs) == 0:
			planned = append(planned, pp)
			continue
		case err == nil:
		case ctx.Err() != nil:
			return planned, append(problems, ctx.Err())
		case reachingSource(err):
			if me := new(driver.MySQLError); errors.As(err, &me) {
				errs = append(errs, fmt.Errorf("projections.%s: reading its tables' schema on the source: %w: grant the source user SELECT on the tables it reads", d.Name, err))
				break
			}
			// The server is out of reach (the source's own finding says
			// so): the rest is checked without it.
			srcErr = err
		default:
			errs = append(errs, unjoin(err)...)
		}
		problems = append(problems, errs...)
	}
	if srcErr != nil {
		problems = append(problems, fmt.Errorf("projections: not checked against the source schema: %w", srcErr))
	}
	return planned, problems
}

// sinkRangeProblems are the sinks' key-range problems (sinks.ShardRanges),
// in sink name order.
func sinkRangeProblems(cfg config.Config) []error {
	names := make([]string, 0, len(cfg.Sinks))
	for name := range cfg.Sinks {
		names = append(names, name)
	}
	slices.Sort(names)
	var errs []error
	for _, name := range names {
		if _, err := sinks.ShardRanges(name, cfg.Sinks[name]); err != nil {
			errs = append(errs, unjoin(err)...)
		}
	}
	return errs
}

// openSource opens a pool on the source for reading its schema.
func openSource(cfg config.Config) (*sql.DB, sqldriver.Connector, error) {
	dcfg, err := driver.ParseDSN(cfg.Source.DSN.Reveal())
	if err != nil {
		return nil, nil, fmt.Errorf("source.dsn: %w", err)
	}
	connector, err := driver.NewConnector(dcfg)
	if err != nil {
		return nil, nil, err
	}
	return sql.OpenDB(connector), connector, nil
}

// planOne checks p against the live source schema and derives its read
// table's DDL.
func planOne(ctx context.Context, src *sql.DB, connector sqldriver.Connector, p *projections.Projection) (plannedProjection, error) {
	cols, err := p.SourceColumns(ctx, src)
	if err != nil {
		return plannedProjection{}, err
	}
	p.SourceTypes = sourceTypesOf(p, connector)
	return plannedProjection{p: p, types: cols, ddl: sinks.DDL(p, cols)}, nil
}

// unjoin is err's problems one by one: errors.Join's flattened, nil for
// nil.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}

// reachingSource tells an error reading the source's schema (the server,
// the network, a grant) from a declaration that does not fit it.
func reachingSource(err error) bool {
	var me *driver.MySQLError
	var ne net.Error
	return errors.As(err, &me) || errors.As(err, &ne) || errors.Is(err, driver.ErrInvalidConn)
}

// sourceTypesOf reads p's current source column definitions on a
// connection of its own: a projector calls it only when a source DDL left
// its read table behind, so it holds no connection open meanwhile.
func sourceTypesOf(p *projections.Projection, connector sqldriver.Connector) func(context.Context) (projections.Types, error) {
	return func(ctx context.Context) (projections.Types, error) {
		db := sql.OpenDB(connector)
		defer db.Close()
		return p.SourceColumns(ctx, db)
	}
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	c := newCommand("plan", stdout, stderr)
	apply := c.fs.Bool("apply", false, "create the tables and run the safe ALTERs of drifted ones on the sinks")
	if code, done := c.parse(args); done {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	cfg, err := c.load()
	if invalid := new(config.Invalid); errors.As(err, &invalid) {
		// A config that decodes but does not validate: its problems and
		// every projection's, in one run, as check lists them.
		_, problems := checkProjections(ctx, invalid.Config)
		return c.failLines(exitProblem, errors.Join(append(unjoin(invalid.Err), problems...)...))
	}
	if err != nil {
		return c.failf(exitUsage, "%v", err)
	}
	planned, problems := checkProjections(ctx, cfg)
	if len(problems) > 0 {
		// Every problem of every projection, so that one run shows them all.
		return c.failLines(exitProblem, errors.Join(problems...))
	}
	unsafe := 0
	// Statements shared by the projections of a sink (its bookkeeping
	// tables) are printed with the first of them only.
	printed := map[string]map[string]bool{}
	for _, pp := range planned {
		fmt.Fprintf(stdout, "-- projection %s -> sink %s\n", pp.p.Name, pp.p.Sink)
		for _, line := range pp.p.FanOutScope(len(cfg.Sinks[pp.p.Sink].Shards)) {
			fmt.Fprintln(stdout, "-- "+line)
		}
		for _, line := range pp.p.JoinedGroupsPlan() {
			fmt.Fprintln(stdout, "-- "+line)
		}
		for _, line := range pp.p.ChildrenPlan(len(cfg.Sinks[pp.p.Sink].Shards)) {
			fmt.Fprintln(stdout, "-- "+line)
		}
		for _, line := range shardKeyWarnings(ctx, cfg, pp.p, stderr) {
			fmt.Fprintln(stdout, "-- warning: "+line)
		}
		for _, c := range pp.p.Columns {
			if c.Computed() {
				fmt.Fprintf(stdout, "-- computed %s = %s: %s\n", c.Name, strings.NewReplacer("\n", " ", "\r", " ").Replace(c.Expr.String()), pp.types.Read[c.Name])
			}
		}
		if ag := pp.p.Aggregation; ag != nil {
			fmt.Fprintf(stdout, "-- aggregate: one row per group (%s); each source row's last contribution in %s, on every shard\n", strings.Join(ag.GroupBy, ", "), pp.p.ContributionsTable())
			for _, a := range ag.Aggregates {
				fmt.Fprintf(stdout, "-- aggregate %s = %s: %s\n", a.Column, strings.NewReplacer("\n", " ", "\r", " ").Replace(a.Text), pp.types.Read[a.Column])
				if a.Distinct() {
					fmt.Fprintf(stdout, "-- distinct values of %s in %s, on every shard: one row per group and value (a reference count), written when a row's value or group changes: 2 more statements per batch that moves a value, up to 4 when a group gains or loses one\n", a.Column, pp.p.DistinctTable(a.Column))
				}
			}
		}
		if printed[pp.p.Sink] == nil {
			printed[pp.p.Sink] = map[string]bool{}
		}
		shared := 0
		for _, st := range pp.ddl {
			st = strings.TrimSpace(st)
			if printed[pp.p.Sink][st] {
				shared++
				continue
			}
			printed[pp.p.Sink][st] = true
			fmt.Fprintln(stdout, st+";")
		}
		if shared > 0 {
			fmt.Fprintf(stdout, "-- and %d statement(s) printed above for sink %s (its bookkeeping tables)\n", shared, pp.p.Sink)
		}
		// Without --apply the sink may be out of reach (plan is also a
		// dry run away from the servers): then an existing read table goes
		// uncompared, said on stderr so that stdout stays the DDL. The
		// table compared is on the sink that serves the projection now (a
		// reshard may have moved it off the one the config names).
		at, closeSinks, err := sinks.OpenResolved(ctx, cfg.Sinks, pp.p)
		sink := at.Sink
		if err != nil {
			closeSinks()
			if *apply {
				fmt.Fprintf(stderr, "readside plan: %s: %v\n", pp.p.Name, err)
				return exitProblem
			}
			fmt.Fprintf(stderr, "readside plan: sink %s not reachable (%v): an existing %s is not compared with the plan; `readside check` compares it\n", pp.p.Sink, err, pp.p.Table)
			fmt.Fprintln(stdout)
			continue
		}
		// Creating a dropped table would hide the rows applied to it
		// before: plan names the fix and --apply leaves the table out.
		if dropped, err := sink.DroppedReadTable(ctx, pp.p, cfg.Sinks[pp.p.Sink].Consistency.Transactional()); err != nil || dropped != nil {
			closeSinks()
			if err != nil {
				fmt.Fprintf(stderr, "readside plan: %s: %v\n", pp.p.Name, err)
			} else {
				fmt.Fprintf(stderr, "readside plan: %v\nfix: %s\n", dropped, dropped.Fix())
			}
			if *apply {
				return exitProblem
			}
			fmt.Fprintln(stdout)
			continue
		}
		n := planDrift(ctx, sink, pp, *apply, stdout, stderr)
		closeSinks()
		fmt.Fprintln(stdout)
		if n < 0 {
			return exitProblem
		}
		unsafe += n
	}
	if *apply {
		fmt.Fprintf(stdout, "-- applied %d projection(s)\n", len(planned))
	}
	if unsafe > 0 {
		fmt.Fprintf(stderr, "readside plan: %d change(s) to existing read tables could lose values and are not applied: rebuild those projections as each change's \"-- instead:\" line says (readside replay --projection <name> --rebuild, or the whole sink on a sink with consistency: transaction)\n", unsafe)
		if *apply {
			return exitProblem
		}
	}
	return exitOK
}

// planDrift prints (and with apply runs) the ALTERs that bring pp's
// existing read table and join state tables to the plan, after its DDL
// (with apply, run first): the safe ones only; a DROP or a change that
// could lose values is printed commented out, the latter with the rebuild
// that replaces it. It returns how many changes could lose values, or -1
// when applying failed.
func planDrift(ctx context.Context, sink *sinks.Sharded, pp plannedProjection, apply bool, stdout, stderr io.Writer) int {
	if apply {
		if err := sink.Exec(ctx, pp.ddl); err != nil {
			fmt.Fprintf(stderr, "readside plan: applying %s: %v\n", pp.p.Name, err)
			return -1
		}
	}
	drifts, err := sink.Drifts(ctx, pp.p, pp.types)
	if err != nil {
		fmt.Fprintf(stderr, "readside plan: comparing the tables of %s: %v\n", pp.p.Name, err)
		return -1
	}
	unsafe := 0
	for _, d := range drifts {
		fmt.Fprintf(stdout, "-- %s.%s drifted: %s\n", d.Table, d.Column, d.Why)
		switch {
		case d.Safe:
			fmt.Fprintln(stdout, d.Alter+";")
			if apply {
				if err := sink.Shards[d.Shard].Exec(ctx, []string{d.Alter}); err != nil {
					fmt.Fprintf(stderr, "readside plan: %v\n", err)
					return -1
				}
			}
			if d.Existing == "" && d.Table == pp.p.Table {
				// A state table's new column is the same read column's: one hint.
				fmt.Fprintf(stdout, "-- then, for the rows already there: restart readside run with this config, and run readside replay --projection %s --backfill %s\n", pp.p.Name, d.Column)
			}
		case d.Harmless:
			fmt.Fprintf(stdout, "-- not applied (it drops data; run it once nothing reads the column): %s;\n", d.Alter)
		default:
			unsafe++
			fmt.Fprintf(stdout, "-- not applied (values could be lost): %s;\n-- instead: %s\n", d.Alter, pp.p.RebuildHow())
		}
	}
	return unsafe
}
