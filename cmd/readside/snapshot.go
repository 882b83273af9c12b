package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
)

// runSnapshot asks the running tailer (the one with this config's
// server_id) to snapshot a table. The request travels through the source's
// binlog, so it is ordered with every change and survives restarts.
func runSnapshot(args []string, stdout, stderr io.Writer) int {
	c := newCommand("snapshot", stdout, stderr)
	table := c.fs.String("table", "", "table to snapshot, db.table (must be in source.tables)")
	where := c.fs.String("where", "", "only rows matching this SQL condition")
	cancel := c.fs.Bool("cancel", false, "delete the pending snapshot requests of --table instead (the tailer drops them, even one it has begun)")
	pending := c.fs.Bool("pending", false, "list the tailer's queued and running snapshots, requests it has not read yet, and recent failures")
	wait := c.fs.Bool("wait", false, "follow the request until the snapshot is complete: rows published of the estimate and the rate, on stderr")
	every := c.fs.Duration("progress-every", 5*time.Second, "with --wait: progress line period when stderr is not a terminal")
	if code, done := c.parse(args); done {
		return code
	}
	cfg, code, ok := c.loadOrFail()
	if !ok {
		return code
	}
	if *pending {
		if *table != "" || *where != "" || *cancel || *wait {
			fmt.Fprintln(stderr, "readside snapshot: --pending lists every table's requests: give it without --table, --where, --cancel or --wait")
			return exitUsage
		}
		return listSnapshots(cfg, stdout, stderr)
	}
	if _, _, ok := config.SplitTable(*table); !ok {
		fmt.Fprintln(stderr, "readside snapshot: --table db.table is required")
		return exitUsage
	}
	if *cancel {
		if *wait {
			fmt.Fprintln(stderr, "readside snapshot: --wait follows a request: give it without --cancel")
			return exitUsage
		}
		return cancelSnapshot(cfg, *table, *where, stdout, stderr)
	}
	captured := false
	for _, t := range cfg.Source.Tables {
		captured = captured || t == *table
	}
	if !captured {
		fmt.Fprintf(stderr, "readside snapshot: %s is not in source.tables: add it first\n", *table)
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	req, err := cdc.RequestSnapshotID(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, *table, *where)
	if err != nil {
		fmt.Fprintf(stderr, "readside snapshot: %v\n", err)
		return exitProblem
	}
	if !*wait {
		fmt.Fprintf(stdout, "snapshot of %s requested from the tailer with server_id %d; it starts when the tailer reads the request from the binlog (progress in its log and readside_source_events_total{op=\"r\"}; --wait follows it)\n", *table, cfg.Source.ServerID)
		return exitOK
	}
	fmt.Fprintf(stdout, "snapshot of %s requested (request %d) from the tailer with server_id %d; following it until it is complete (Ctrl-C stops following, not the snapshot)\n", *table, req.ID, cfg.Source.ServerID)
	cfg.Kafka.Brokers = cfg.Kafka.ClientBrokers()
	w := &snapshotWait{cfg: cfg, table: *table, req: req, line: progressLine(stderr, *every, cfg.Log, newLogger(cfg.Log, stderr))}
	return w.follow(ctx, stdout, stderr)
}

// cancelSnapshot deletes the requests of table; the tailer sees the deletes
// in the binlog and drops those snapshots.
func cancelSnapshot(cfg config.Config, table, where string, stdout, stderr io.Writer) int {
	if where != "" {
		fmt.Fprintln(stderr, "readside snapshot: --cancel takes --table only: it cancels every request of that table")
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	n, err := cdc.CancelSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, table)
	if err != nil {
		fmt.Fprintf(stderr, "readside snapshot: %v\n", err)
		return exitProblem
	}
	fmt.Fprintf(stdout, "deleted %d snapshot request(s) of %s for the tailer with server_id %d; it drops them when it reads the deletes from the binlog\n", n, table, cfg.Source.ServerID)
	return exitOK
}

// printSnapshotFailures prints the failed snapshot requests of a status
// report, each with its error and fix.
func printSnapshotFailures(w io.Writer, failures []cdc.SnapshotFailure, readErr string) {
	if readErr != "" {
		fmt.Fprintln(w, "  "+wrap("snapshot failures: "+readErr, helpWidth-2, "\n    "))
	}
	for _, f := range failures {
		what := fmt.Sprintf("snapshot request %d of %s", f.Request, f.Table)
		if f.Where != "" {
			what += fmt.Sprintf(" (where %s)", f.Where)
		}
		fmt.Fprintln(w, "  "+wrap(fmt.Sprintf("FAILED %s at %s, skipped: %s", what, f.FailedAt.Format(time.RFC3339), f.Error), helpWidth-2, "\n    "))
		fmt.Fprintln(w, "    "+wrap("fix: "+f.Fix, helpWidth-4, "\n      "))
	}
}

// storedSnapshotFailures reads the failed snapshot requests from the
// source, for a status report made without the daemon.
func storedSnapshotFailures(ctx context.Context, cfg config.Config) ([]cdc.SnapshotFailure, string) {
	log := cdc.NewSnapshotLog(cfg.Source)
	defer log.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	failures, err := log.Failures(ctx)
	if err != nil {
		return nil, err.Error()
	}
	return failures, ""
}
