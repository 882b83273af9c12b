package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

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

// planProjections compiles the declarations and derives each read table's
// DDL from the live source schema. Every problem is reported at once.
func planProjections(ctx context.Context, cfg config.Config) ([]plannedProjection, error) {
	ps, err := projections.Compile(cfg)
	for name, sink := range cfg.Sinks {
		if _, rerr := sinks.ShardRanges(name, sink); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	dcfg, err := driver.ParseDSN(cfg.Source.DSN.Reveal())
	if err != nil {
		return nil, fmt.Errorf("source.dsn: %w", err)
	}
	connector, err := driver.NewConnector(dcfg)
	if err != nil {
		return nil, err
	}
	src := sql.OpenDB(connector)
	defer src.Close()
	var out []plannedProjection
	var errs []error
	for _, p := range ps {
		cols, err := p.SourceColumns(ctx, src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, plannedProjection{p: p, types: cols, ddl: sinks.DDL(p, cols)})
	}
	return out, errors.Join(errs...)
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plan")
	var common commonFlags
	common.register(fs)
	apply := fs.Bool("apply", false, "create the tables on the sinks and run the safe ALTERs for read tables that drifted")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "readside plan: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	planned, err := planProjections(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "readside plan:\n%v\n", err)
		return exitProblem
	}
	for _, pp := range planned {
		fmt.Fprintf(stdout, "-- projection %s -> sink %s\n", pp.p.Name, pp.p.Sink)
		for _, st := range pp.ddl {
			fmt.Fprintln(stdout, strings.TrimSpace(st)+";")
		}
		fmt.Fprintln(stdout)
		if *apply {
			sink, err := sinks.OpenSharded(ctx, pp.p.Sink, cfg.Sinks[pp.p.Sink])
			if err != nil {
				fmt.Fprintf(stderr, "readside plan: sink %s: %v\n", pp.p.Sink, err)
				return exitProblem
			}
			err = sink.Exec(ctx, pp.ddl)
			sink.Close()
			if err != nil {
				fmt.Fprintf(stderr, "readside plan: applying %s: %v\n", pp.p.Name, err)
				return exitProblem
			}
		}
	}
	if *apply {
		fmt.Fprintf(stdout, "-- applied %d projection(s)\n", len(planned))
	}
	return exitOK
}
