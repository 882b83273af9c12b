package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/httpapi"
)

// runStatus prints the /status of a running daemon, or, when none
// answers, the same report read from the stores (sink offsets, broker end
// offsets, the checkpoint topic).
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("status")
	var common commonFlags
	common.register(fs)
	addr := fs.String("http", "", "ask the daemon at `ADDR` (default: http.listen in the config, else 127.0.0.1:9100)")
	asJSON := fs.Bool("json", false, "print the JSON report")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, cfgErr := config.Load(common.configPath, os.Environ())
	if *addr == "" {
		*addr = "127.0.0.1:9100"
		if cfgErr == nil && cfg.HTTP.Listen != "" {
			*addr = dialable(cfg.HTTP.Listen)
		}
	}
	rep, daemonErr := fetchStatus(ctx, *addr)
	note := "from the daemon at " + *addr
	if daemonErr != nil {
		if cfgErr != nil {
			fmt.Fprintf(stderr, "readside status: no daemon answered at %s (%v), and the config needed to read the stores directly does not load: %v\n", *addr, daemonErr, cfgErr)
			return exitUsage
		}
		if len(cfg.Kafka.Brokers) == 0 {
			cfg.Kafka.Brokers = []string{cfg.Kafka.EmbeddedListen}
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
		note = fmt.Sprintf("read directly from the stores: no daemon answered at %s (%v)", *addr, daemonErr)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printStatus(stdout, rep, note)
	}
	if !rep.Healthy || rep.Source.Error != "" {
		return exitProblem
	}
	for _, p := range rep.Projections {
		if p.Error != "" {
			return exitProblem
		}
	}
	return exitOK
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
	fmt.Fprintf(w, "readside status at %s, %s\n", r.Time.Format(time.RFC3339), note)
	if r.From == "daemon" {
		fmt.Fprintf(w, "healthy: %s   ready: %s\n", yes[r.Healthy], yes[r.Ready])
		for _, why := range r.NotReady {
			fmt.Fprintf(w, "  not ready: %s\n", why)
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
		fmt.Fprintf(w, "  error: %s\n", s.Error)
	}
	if len(r.Projections) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECTION\tSTATE\tMEMBERS\tLAG\tPARTITIONS (sink partition: applied/end)")
	for _, p := range r.Projections {
		parts := make([]string, 0, len(p.Partitions))
		for _, pt := range p.Partitions {
			parts = append(parts, fmt.Sprintf("%s %d: %d/%d", pt.Sink, pt.Partition, max(pt.Applied, 0), pt.End))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", p.Name, p.State, p.Members, p.ConsumerLag, strings.Join(parts, ", "))
		if p.Error != "" {
			fmt.Fprintf(tw, "\terror: %s\t\t\t\n", p.Error)
		}
	}
	tw.Flush()
}
