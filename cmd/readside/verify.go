package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/verify"
)

// runVerify compares projections' read tables with the source (and with
// --repair fixes them). Exit 0: equal; 1: drift (after a repair: drift
// left) or behind (rows that differed while the projection never caught
// up); 2: error.
func runVerify(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify")
	var common commonFlags
	common.register(fs)
	name := fs.String("projection", "", "`NAME` of the projection to verify (default: every projection)")
	repair := fs.Bool("repair", false, "re-publish the differing source rows through the tailer, delete rows the source does not have, move rows on a shard their key range does not name, rebuild differing aggregate groups from their contributions and withdraw the sink's state of source rows that are gone, then verify those keys again")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	chunk := fs.Int("chunk-rows", 1000, "source rows per checksummed chunk")
	maxRate := fs.Int("max-rows-per-second", 0, "throttle the scan (0: unthrottled)")
	maxLag := fs.Duration("max-source-lag", 0, "pause while the source replica's lag is above this (0: no ceiling)")
	settle := fs.Duration("settle", 30*time.Second, "how long differing rows are re-checked before they count as drift")
	samples := fs.Int("samples", 10, "keys listed per kind of difference")
	repairWait := fs.Duration("repair-wait", 2*time.Minute, "how long --repair waits for the re-published rows to arrive")
	fresh := fs.Bool("restart", false, "ignore the progress of an interrupted run and start from the beginning")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "readside verify: %v\n", err)
		return exitUsage
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "readside verify:\n%v\n", err)
		return exitUsage
	}
	var chosen []*projections.Projection
	for _, p := range ps {
		if *name == "" || p.Name == *name {
			chosen = append(chosen, p)
		}
	}
	if len(chosen) == 0 {
		fmt.Fprintf(stderr, "readside verify: no projection %q in the config (projections.<name>)\n", *name)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := verify.OpenSource(cfg.Source.DSN.Reveal())
	if err != nil {
		fmt.Fprintf(stderr, "readside verify: %v\n", err)
		return exitUsage
	}
	defer src.Close()
	brokers := cfg.Kafka.Brokers
	if len(brokers) == 0 {
		brokers = []string{cfg.Kafka.EmbeddedListen}
	}
	log := newLogger(cfg.Log, stderr)
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, table, where)
	}
	code := exitOK
	var reports []*verify.Report
	// Each projection is verified on the sink that serves it now (a
	// reshard may have moved it off the one the config names).
	opener := newSinkOpener(cfg)
	defer opener.close()
	for _, p := range chosen {
		at, err := opener.resolve(ctx, p)
		if err != nil {
			fmt.Fprintf(stderr, "readside verify %s: %v\n", p.Name, err)
			return exitUsage
		}
		sink := at.Sink
		stateFile := verify.StateFile(cfg.DataDir, p.Name)
		if *fresh {
			_ = os.Remove(stateFile)
		}
		v := verify.New(p, src, sink, verify.Options{ChunkRows: *chunk, MaxRowsPerSecond: *maxRate, MaxSourceLag: *maxLag,
			Settle: *settle, Samples: *samples, StateFile: stateFile, Progress: stderr, Brokers: brokers, Log: log})
		rep, err := v.Run(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "readside verify %s: %v\n", p.Name, err)
			return exitUsage
		}
		if *repair && rep.Drift() > 0 {
			if rep.Repair, err = v.Repair(ctx, rep, request, *repairWait); err != nil {
				fmt.Fprintf(stderr, "readside verify %s: repair: %v\n", p.Name, err)
				return exitUsage
			}
		}
		switch {
		case rep.Repair != nil && rep.Repair.Remaining > 0:
			code = exitProblem
		case rep.Repair == nil && !rep.Equal():
			code = exitProblem
		}
		reports = append(reports, rep)
		if !*asJSON {
			rep.WriteText(stdout)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(reports)
	}
	return code
}
