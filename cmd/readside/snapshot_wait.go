package main

// readside snapshot --wait: the request followed through the tailer's
// checkpoint (the only record of it the tailer keeps, on the broker) until
// the snapshot is complete: read from the binlog, queued, running with its
// rows published so far, then finished with its total (Checkpoint.Finished)
// or failed with its fix (the source's failure table).

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/progress"
)

// snapshotPoll is how often the checkpoint is read at most: the tailer
// writes it with every Kafka commit, a few times a second while it
// snapshots. A shorter --progress-every reads it as often (down to
// snapshotPollMin), so each progress line shows fresh rows.
const snapshotPoll, snapshotPollMin = time.Second, 100 * time.Millisecond

// snapshotWait is one followed request.
type snapshotWait struct {
	cfg   config.Config
	table string
	req   cdc.SnapshotRequested
	line  progress.Line
	// began is when the request was first seen running, with its rows then.
	began     time.Time
	beganRows int64
}

// follow polls the checkpoint until the request ends; its exit code.
func (w *snapshotWait) follow(ctx context.Context, stdout, stderr io.Writer) int {
	brokers := w.cfg.Kafka.ClientBrokers()
	topic, txn := event.CheckpointTopic(w.cfg.Kafka.TopicPrefix), w.cfg.TransactionalID()
	tick := time.NewTicker(min(snapshotPoll, max(w.line.Every, snapshotPollMin)))
	defer tick.Stop()
	for {
		cp, found, err := cdc.ReadCheckpoint(ctx, brokers, topic, txn)
		switch {
		case ctx.Err() != nil:
			w.line.Show(w.text("stopped following", 0), true)
			fmt.Fprintf(stderr, "readside snapshot: stopped following request %d; the tailer goes on with it (readside snapshot --pending)\n", w.req.ID)
			return exitProblem
		case err != nil:
			w.line.Show(w.text("stopped following", 0), true)
			fmt.Fprintf(stderr, "readside snapshot: reading the tailer's checkpoint from %s: %v; the request stays: follow it with readside snapshot --pending\n", w.cfg.Kafka.ClientBrokers(), err)
			return exitProblem
		}
		if done, code := w.step(ctx, cp, found, stdout, stderr); done {
			return code
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// step shows the request's state in cp; done when it ended.
func (w *snapshotWait) step(ctx context.Context, cp cdc.Checkpoint, found bool, stdout, stderr io.Writer) (done bool, code int) {
	if !found || cp.LastRequest < w.req.ID {
		w.line.Show(w.text("requested; waiting for the tailer to read it from the binlog", 0), false)
		return false, 0
	}
	for i, task := range cp.Snapshots {
		if task.ID != w.req.ID {
			continue
		}
		if i > 0 {
			w.line.Show(w.text(fmt.Sprintf("queued behind %d snapshot(s)", i), 0), false)
			return false, 0
		}
		if w.began.IsZero() {
			w.began, w.beganRows = time.Now(), task.Rows
		}
		w.line.Show(w.text("running", task.Rows), false)
		return false, 0
	}
	for _, f := range cp.Finished {
		if f.ID == w.req.ID {
			took := time.Duration(f.Seconds * float64(time.Second))
			// The tailer's own time for the rate from here on.
			w.began, w.beganRows = time.Now().Add(-took), 0
			w.line.Show(w.text("done", f.Rows), true)
			rate := "too short to time"
			if r := progress.Rate(f.Rows, took); r > 0 {
				rate = fmt.Sprintf("%.0f rows/s", r)
			}
			fmt.Fprintf(stdout, "snapshot of %s done: %d rows in %s (%s)\n", f.Table, f.Rows, took.Round(time.Millisecond), rate)
			return true, exitOK
		}
	}
	// Read and gone without finishing: failed (the tailer recorded why) or
	// cancelled.
	log := cdc.NewSnapshotLog(w.cfg.Source)
	defer log.Close()
	failures, err := log.Failures(ctx)
	w.line.Show(w.text("ended", 0), true)
	if err != nil {
		fmt.Fprintf(stderr, "readside snapshot: request %d left the tailer's queue unfinished; reading the failures: %v\n", w.req.ID, err)
		return true, exitProblem
	}
	for _, f := range failures {
		if f.Request == w.req.ID {
			printSnapshotFailures(stderr, []cdc.SnapshotFailure{f}, "")
			return true, exitProblem
		}
	}
	fmt.Fprintf(stderr, "readside snapshot: request %d of %s left the tailer's queue unfinished and without a failure: cancelled (readside snapshot --cancel), or the tailer is older than this readside and does not record finished snapshots\n", w.req.ID, w.table)
	return true, exitProblem
}

// text is the progress line: the state, and while running or done the
// rows against the estimate and the rate since the request was seen
// running.
func (w *snapshotWait) text(state string, rows int64) string {
	s := fmt.Sprintf("snapshot of %s (request %d): %s", w.table, w.req.ID, state)
	if rows == 0 && state != "running" {
		return s
	}
	s += fmt.Sprintf(", %d", rows)
	if est := w.req.Estimate; est != nil && *est > 0 {
		s += fmt.Sprintf(" of ~%d rows (%.0f%%)", *est, min(100, 100*float64(rows)/float64(*est)))
	} else {
		s += " rows"
	}
	if r := progress.Rate(rows-w.beganRows, time.Since(w.began)); !w.began.IsZero() && r > 0 {
		s += fmt.Sprintf(", %.0f rows/s", r)
	}
	return s
}
