package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/preflight"
)

// listSnapshots prints `readside snapshot --pending`: the tailer's queue
// from its checkpoint (the first entry is the one in progress), the
// request rows it has not read from the binlog yet, and the requests it
// failed recently, each with its fix.
func listSnapshots(cfg config.Config, stdout, stderr io.Writer) int {
	ctx, stop := signalContext()
	defer stop()
	log := cdc.NewSnapshotLog(cfg.Source)
	defer log.Close()
	fmt.Fprintf(stdout, "snapshots of the tailer with server_id %d:\n", cfg.Source.ServerID)

	brokers := cfg.Kafka.ClientBrokers()
	var cp cdc.Checkpoint
	found := false
	err := brokerAnswers(ctx, brokers)
	if err == nil {
		cp, found, err = cdc.ReadCheckpoint(ctx, brokers, event.CheckpointTopic(cfg.Kafka.TopicPrefix), cfg.TransactionalID())
	}
	switch {
	case err != nil:
		what := fmt.Sprintf("no broker at %s (%s)", strings.Join(brokers, ", "), briefly(err))
		if len(cfg.Kafka.Brokers) == 0 {
			what = fmt.Sprintf("no broker at %s (the embedded broker runs inside readside run)", cfg.Kafka.EmbeddedListen)
		}
		fmt.Fprintln(stdout, "  "+wrap("queue unknown: it is in the tailer's checkpoint, and "+what, helpWidth-2, "\n    "))
	case !found:
		fmt.Fprintln(stdout, "  no checkpoint yet: the tailer has not started (its first start queues the initial snapshots with source.snapshot.mode initial)")
	case len(cp.Snapshots) == 0:
		fmt.Fprintf(stdout, "  none queued or running (checkpoint written %s)\n", cp.WrittenAt.Format(time.RFC3339))
	default:
		for i, task := range cp.Snapshots {
			state := "queued "
			if i == 0 {
				state = "running"
			}
			fmt.Fprintf(stdout, "  %s  %s  %s, %d rows published\n", state, task.Table, describeTask(task), task.Rows)
		}
	}
	if found {
		unread, err := log.Unread(ctx, cp.LastRequest)
		if err != nil {
			fmt.Fprintf(stderr, "readside snapshot: %v\n", err)
			return exitProblem
		}
		for _, r := range unread {
			fmt.Fprintf(stdout, "  written  %s  request %d%s, at %s; the tailer has not read it from the binlog yet\n", r.Table, r.ID, whereNote(r.Where), r.RequestedAt.Format(time.RFC3339))
		}
	}
	failures, err := log.Failures(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "readside snapshot: %v\n", err)
		return exitProblem
	}
	if len(failures) == 0 {
		fmt.Fprintf(stdout, "no snapshot request failed in the last %s\n", cdc.FailureWindow)
		return exitOK
	}
	fmt.Fprintf(stdout, "failed in the last %s (skipped; the tailer streamed on):\n", cdc.FailureWindow)
	printSnapshotFailures(stdout, failures, "")
	return exitOK
}

func describeTask(t cdc.SnapshotTask) string {
	if t.ID == 0 {
		return "initial snapshot" + whereNote(t.Where)
	}
	return fmt.Sprintf("request %d%s", t.ID, whereNote(t.Where))
}

func whereNote(where string) string {
	if where == "" {
		return ""
	}
	return " where " + where
}

// addedTableFindings are check's findings on tables added to
// source.tables after the tailer's first start: with snapshot mode never
// their existing rows are never published unless asked for. They need the
// tailer's checkpoint; when no broker answers (the embedded one runs
// inside readside run) the broker's own finding says so.
func addedTableFindings(ctx context.Context, cfg config.Config) []preflight.Finding {
	brokers := cfg.Kafka.ClientBrokers()
	if brokerAnswers(ctx, brokers) != nil {
		return nil
	}
	cp, found, err := cdc.ReadCheckpoint(ctx, brokers, event.CheckpointTopic(cfg.Kafka.TopicPrefix), cfg.TransactionalID())
	if err != nil || !found {
		return nil
	}
	var out []preflight.Finding
	for _, name := range cdc.UncoveredTables(cp, cfg.Source.Tables) {
		f := cdc.Finding{Severity: "ok", What: name + " was added to source.tables after the tailer's last checkpoint: its existing rows are snapshotted on the next start (source.snapshot.mode initial)"}
		if cfg.Source.Snapshot.Mode != config.SnapshotInitial {
			f = cdc.Finding{Severity: "warning",
				What: name + " was added to source.tables after the tailer's first start and source.snapshot.mode is " + string(cfg.Source.Snapshot.Mode) + ": its existing rows are not published, only its changes",
				Fix:  "readside snapshot --table " + name + " (online, takes no lock)"}
		}
		out = append(out, preflight.Finding{Area: "source", Finding: f})
	}
	return out
}
