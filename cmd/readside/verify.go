package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/verify"
)

// runVerify compares projections' read tables with the source (and with
// --repair fixes them). Exit 0: equal; 1: drift (after a repair: drift
// left) or behind (rows that differed while the projection never caught
// up); 2: error.
func runVerify(args []string, stdout, stderr io.Writer) int {
	c := newCommand("verify", stdout, stderr)
	fs := c.fs
	var f verifyFlags
	fs.StringVar(&f.name, "projection", "", "`NAME` of the projection to verify (default: every projection)")
	fs.BoolVar(&f.repair, "repair", false, "re-publish the differing source rows through the tailer, delete rows the source does not have, move rows on a shard their key range does not name, rebuild differing aggregate groups from their contributions and withdraw the sink's state of source rows that are gone, then verify those keys again")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.IntVar(&f.chunk, "chunk-rows", 1000, "source rows per checksummed chunk")
	fs.IntVar(&f.maxRate, "max-rows-per-second", 0, "throttle the scan (0: unthrottled)")
	fs.DurationVar(&f.maxLag, "max-source-lag", 0, "pause while the source replica's lag is above this (0: no ceiling)")
	fs.DurationVar(&f.settle, "settle", 30*time.Second, "how long differing rows are re-checked before they count as drift")
	fs.IntVar(&f.samples, "samples", 10, "keys listed per kind of difference")
	fs.DurationVar(&f.repairWait, "repair-wait", 2*time.Minute, "how long --repair waits for the re-published rows to arrive")
	fs.DurationVar(&f.progressEvery, "progress-every", 5*time.Second, "progress line period when stderr is not a terminal")
	fs.BoolVar(&f.fresh, "restart", false, "ignore the progress of an interrupted run and start from the beginning")
	e, code := c.setup(args, nil)
	if e == nil {
		return code
	}
	defer e.stop()
	ps, err := projections.Compile(e.cfg)
	if err != nil {
		return c.failLines(exitUsage, err)
	}
	var chosen []*projections.Projection
	for _, p := range ps {
		if f.name == "" || p.Name == f.name {
			chosen = append(chosen, p)
		}
	}
	if len(chosen) == 0 {
		return c.failf(exitUsage, "no projection %q in the config (projections.<name>)", f.name)
	}
	src, err := verify.OpenSource(e.cfg.Source)
	if err != nil {
		return c.failf(exitUsage, "%v", err)
	}
	defer src.Close()
	// Each projection is verified on the sink that serves it now (a
	// reshard may have moved it off the one the config names).
	opener := newSinkOpener(e.cfg)
	defer opener.close()
	code = exitOK
	var reports []*verify.Report
	for _, p := range chosen {
		rep, err := verifyOne(e, f, p, src, opener)
		if err != nil {
			fmt.Fprintf(stderr, "readside verify %s: %v\n", p.Name, err)
			return exitUsage
		}
		switch {
		case rep.Repair != nil && rep.Repair.Remaining > 0:
			code = exitProblem
		case rep.Repair == nil && !rep.Equal():
			code = exitProblem
		}
		reports = append(reports, rep)
		if !f.asJSON {
			rep.WriteText(stdout)
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(reports)
	}
	return code
}

// verifyFlags are verify's flags.
type verifyFlags struct {
	name                       string
	repair, asJSON, fresh      bool
	chunk, maxRate, samples    int
	maxLag, settle, repairWait time.Duration
	progressEvery              time.Duration
}

// verifyOne verifies p on the sink that serves it now and, with
// --repair, repairs its drift.
func verifyOne(e *env, f verifyFlags, p *projections.Projection, src *sql.DB, opener *sinkOpener) (*verify.Report, error) {
	at, err := opener.resolve(e.ctx, p)
	if err != nil {
		return nil, err
	}
	stateFile := verify.StateFile(e.cfg.DataDir, p.Name)
	if f.fresh {
		_ = os.Remove(stateFile)
	}
	v := verify.New(p, src, at.Sink, verify.Options{ChunkRows: f.chunk, MaxRowsPerSecond: f.maxRate, MaxSourceLag: f.maxLag,
		Settle: f.settle, Samples: f.samples, StateFile: stateFile, Progress: progressLine(e.stderr, f.progressEvery, e.cfg.Log, e.log), Ends: projector.Ends(e.cfg.Kafka.Brokers), Log: e.log})
	rep, err := v.Run(e.ctx)
	if err != nil || !f.repair || rep.Drift() == 0 {
		return rep, err
	}
	cfg := e.cfg
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, table, where)
	}
	if rep.Repair, err = v.Repair(e.ctx, rep, request, f.repairWait); err != nil {
		return nil, fmt.Errorf("repair: %w", err)
	}
	return rep, nil
}
