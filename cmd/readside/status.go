package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/httpapi"
)

// runStatus prints the /status of a running daemon; when none answers,
// the same report read from the stores (sink offsets, broker end offsets,
// the checkpoint topic); and when the broker does not answer either (the
// embedded broker runs inside the daemon), what the sinks store, saying
// once what it cannot show.
func runStatus(args []string, stdout, stderr io.Writer) int {
	c := newCommand("status", stdout, stderr)
	addr := c.fs.String("http", "", "ask the daemon at `ADDR` (default: http.listen in the config, else 127.0.0.1:9100)")
	asJSON := c.fs.Bool("json", false, "print the JSON report")
	if code, done := c.parse(args); done {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	cfg, cfgErr := c.load()
	if *addr == "" {
		*addr = "127.0.0.1:9100"
		if cfgErr == nil && cfg.HTTP.Listen != "" {
			*addr = dialable(cfg.HTTP.Listen)
		}
	}
	rep, daemonErr := fetchStatus(ctx, *addr)
	note := "from the daemon at " + *addr
	if daemonErr != nil {
		noDaemon := fmt.Sprintf("no daemon at http://%s (%s)", *addr, briefly(daemonErr))
		if cfgErr != nil {
			fmt.Fprintf(stderr, "readside status: %s, and the config needed to read the stores directly does not load: %v\n", noDaemon, cfgErr)
			return exitUsage
		}
		embedded := len(cfg.Kafka.Brokers) == 0
		cfg.Kafka.Brokers = cfg.Kafka.ClientBrokers()
		if err := brokerAnswers(ctx, cfg.Kafka.Brokers); err != nil {
			what := fmt.Sprintf("no broker at %s (%s)", strings.Join(cfg.Kafka.Brokers, ", "), briefly(err))
			if embedded {
				what = fmt.Sprintf("no broker at %s (the embedded broker runs inside readside run)", cfg.Kafka.EmbeddedListen)
			}
			stored, err := readStored(ctx, cfg, noDaemon+" and "+what+": health, lag, consumer groups and the tailer's checkpoint need them; showing what the sinks store")
			if err != nil {
				fmt.Fprintf(stderr, "readside status: %v\n", err)
				return exitUsage
			}
			code := exitOK
			for _, p := range stored.Projections {
				for _, s := range p.Sinks {
					if s.Error != "" && s.Rows < 0 {
						code = exitProblem // the sink itself could not be read
					}
				}
			}
			if *asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(stored)
			} else {
				printStored(stdout, stored)
			}
			return code
		}
		opts, err := statusOptions(cfg, "none")
		if err != nil {
			fmt.Fprintf(stderr, "readside status: %v\n", err)
			return exitUsage
		}
		col, err := httpapi.NewCollector(opts, nil, nil)
		if err != nil {
			fmt.Fprintf(stderr, "readside status: %v\n", err)
			return exitUsage
		}
		defer col.Close()
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		rep = col.Collect(cctx)
		note = noDaemon + ": health and lag need a running daemon; positions read directly from the stores (sinks and broker)"
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printStatus(stdout, rep, note)
	}
	if !rep.Healthy || rep.Source.Error != "" || len(rep.Degraded) > 0 {
		return exitProblem
	}
	for _, p := range rep.Projections {
		if p.Error != "" {
			return exitProblem
		}
	}
	return exitOK
}

// briefly is the last part of a connection error ("connection refused"),
// which is the part a human acts on.
func briefly(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// brokerAnswers reports whether any of brokers answers a metadata request
// within a few seconds.
func brokerAnswers(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// dialable turns a listen address (":9100") into one to connect to.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || (host != "" && host != "0.0.0.0" && host != "::") {
		return listen
	}
	return net.JoinHostPort("127.0.0.1", port)
}

func fetchStatus(ctx context.Context, addr string) (httpapi.Report, error) {
	var rep httpapi.Report
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return rep, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return rep, fmt.Errorf("GET /status: %s", resp.Status)
	}
	return rep, json.NewDecoder(resp.Body).Decode(&rep)
}

func printStatus(w io.Writer, r httpapi.Report, note string) {
	yes := map[bool]string{true: "yes", false: "NO"}
	fmt.Fprintln(w, wrap(fmt.Sprintf("readside status at %s, %s", r.Time.Format(time.RFC3339), note), helpWidth, "\n"))
	if r.From == "daemon" {
		fmt.Fprintf(w, "healthy: %s   ready: %s", yes[r.Healthy], yes[r.Ready])
		if len(r.Degraded) > 0 {
			fmt.Fprintf(w, "   DEGRADED: %d projection(s) not following the source", len(r.Degraded))
		}
		fmt.Fprintln(w)
		printDegraded(w, r.Degraded)
		for _, why := range r.NotReady {
			fmt.Fprintln(w, "  "+wrap("not ready: "+why, helpWidth-2, "\n    "))
		}
	}
	s := r.Source
	fmt.Fprintf(w, "source: tailer %s", s.Tailer)
	if s.LagSeconds != nil {
		fmt.Fprintf(w, ", lag %.1fs", *s.LagSeconds)
	}
	if s.LastHeardSeconds != nil {
		fmt.Fprintf(w, ", last heard %.1fs ago", *s.LastHeardSeconds)
	}
	fmt.Fprintln(w)
	if s.Position != nil {
		fmt.Fprintf(w, "  checkpoint: %s, version %d", s.Position, s.LastVersion)
		if s.CheckpointAt != nil {
			fmt.Fprintf(w, ", written %s ago", time.Since(*s.CheckpointAt).Round(100*time.Millisecond))
		}
		fmt.Fprintln(w)
	} else if s.Error == "" {
		fmt.Fprintln(w, "  checkpoint: none yet")
	}
	if s.Error != "" {
		fmt.Fprintln(w, "  "+wrap("error: "+s.Error, helpWidth-2, "\n    "))
	}
	printInitialSnapshot(w, s.InitialSnapshot)
	printSnapshotFailures(w, s.SnapshotFailures, s.SnapshotFailuresError)
	printFrontiers(w, r.Sinks)
	if len(r.Projections) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECTION\tSTATE\tMEMBERS\tLAG")
	for _, p := range r.Projections {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", p.Name, p.State, p.Members, p.ConsumerLag)
	}
	tw.Flush()
	// Partitions and errors under the table, wrapped: one line per
	// partition in the table made it hundreds of columns wide.
	for _, p := range r.Projections {
		if p.Generation > 0 {
			fmt.Fprintln(w, wrap(fmt.Sprintf("%s applies through sink %s at routing generation %d (a reshard moved it)", p.Name, p.Sink, p.Generation), helpWidth, "\n    "))
		}
		if len(p.Partitions) > 0 {
			parts := make([]string, 0, len(p.Partitions))
			for _, pt := range p.Partitions {
				where := fmt.Sprintf("%s/%d", pt.Sink, pt.Partition)
				if pt.Topic != p.Topic {
					// A join's or children's topic: named, so its backlog
					// is not taken for the projection's own.
					where = fmt.Sprintf("%s/%s/%d", pt.Sink, pt.Topic, pt.Partition)
				}
				parts = append(parts, fmt.Sprintf("%s %d/%d", where, max(pt.Applied, 0), pt.End))
			}
			fmt.Fprintln(w, wrap(p.Name+" applied/end: "+strings.Join(parts, "  "), helpWidth, "\n    "))
		}
		if p.Error != "" {
			fmt.Fprintln(w, wrap(p.Name+" error: "+p.Error, helpWidth, "\n    "))
		}
	}
	printReshards(w, r.Reshards)
	printRebuilds(w, r.Rebuilds, r.RebuildsError)
}

// printRebuilds writes a line per rebuild or backfill under way under a
// heading (nothing when none).
func printRebuilds(w io.Writer, rs []httpapi.RebuildStatus, readErr string) {
	if len(rs) == 0 && readErr == "" {
		return
	}
	fmt.Fprintln(w, "\nrebuilds and backfills:")
	for _, r := range rs {
		fmt.Fprintln(w, "  "+wrap(r.Summary(), helpWidth-2, "\n    "))
	}
	if readErr != "" {
		fmt.Fprintln(w, "  "+wrap("error: "+readErr, helpWidth-2, "\n    "))
	}
}

// printFrontiers shows where each shard of a transaction-consistent sink
// is: the cut of the source its read tables are at.
func printFrontiers(w io.Writer, sinks []httpapi.SinkStatus) {
	for _, sk := range sinks {
		for _, f := range sk.Frontiers {
			line := fmt.Sprintf("sink %s (consistency: transaction) shard %s: ", sk.Name, f.Shard)
			switch {
			case f.Error != "":
				line += "error: " + f.Error
			case f.CheckpointOffset < 0:
				line += "nothing committed yet"
			default:
				line += fmt.Sprintf("frontier gtid %s, %d source transactions, %d commits", f.GTID, f.Transactions, f.Commits)
				if f.AppliedAt != nil {
					line += fmt.Sprintf(", applied %s ago", time.Since(*f.AppliedAt).Round(100*time.Millisecond))
				}
				if f.Loading {
					line += " (initial load under way: some read tables hold part of their rows)"
				}
			}
			fmt.Fprintln(w, wrap(line, helpWidth, "\n    "))
		}
		if p := sk.Committing; p != nil && time.Since(p.Started) >= time.Second {
			line := fmt.Sprintf("sink %s committing to gtid %s: %d of about %d records in the open transaction, for %s (visible when it commits)",
				sk.Name, p.GTID, p.Records, p.Offsets, time.Since(p.Started).Round(time.Second))
			fmt.Fprintln(w, wrap(line, helpWidth, "\n    "))
		}
	}
}
