package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/readside/readside/bench/internal/benchio"
)

// writeResults writes latest.json and latest.md, with the ratios that are
// the figures to quote (absolute rates on a shared machine are noisy).
func writeResults(dir string, res *results) error {
	if e := res.EndToEnd; e != nil {
		for _, w := range res.Workloads {
			if w.Workload.Name == "narrow_insert" {
				e.SlowerName, e.VsSlower = "tailer", e.Rate.PerS/w.Tailer.PerS
				if w.Projector.PerS < w.Tailer.PerS {
					e.SlowerName, e.VsSlower = "projector", e.Rate.PerS/w.Projector.PerS
				}
			}
		}
	}
	if err := writeJSON(dir, "latest.json", res); err != nil {
		return err
	}
	if res.EndToEnd != nil {
		if err := writeChart(filepath.Join(dir, "latest.png"), res.EndToEnd); err != nil {
			return err
		}
	}
	md := markdown(res)
	fmt.Print(md)
	return os.WriteFile(filepath.Join(dir, "latest.md"), []byte(md), 0o644)
}

func markdown(res *results) string {
	var b strings.Builder
	kind := "make bench"
	if res.Quick {
		kind = "make bench-quick"
	}
	fmt.Fprintf(&b, "# readside benchmark (%s)\n\n", kind)
	fmt.Fprintf(&b, "%s, commit %s, %d CPUs, %s; broker %s; MariaDB %s. 1-minute load average %.2f before the run, %.2f after; each rate's own load is in latest.json. Took %.0f s.\n\n",
		res.StartedAt.Format("2006-01-02 15:04 MST"), res.Host.Commit, res.Host.CPUs, res.Host.GoVer, res.Broker, res.MariaDB, res.LoadBefore, res.LoadAfter, res.DurationS)
	if res.Host.BrokerJVM == "production" {
		fmt.Fprintf(&b, "The Kafka broker ran with Kafka's production JVM settings (G1, 1 GiB heap, full JIT), not the test bed's (serial GC, C1 only).\n\n")
	}
	if res.Host.MariaDBArgs != "" {
		fmt.Fprintf(&b, "MariaDB ran with `%s` after the test bed's own options.\n\n", res.Host.MariaDBArgs)
	}
	if res.Host.ReadsideEnv != "" {
		fmt.Fprintf(&b, "The readside processes ran with `%s`.\n\n", res.Host.ReadsideEnv)
	}
	b.WriteString(settleSummary(res.SettleLimitS, res.Settles))
	b.WriteString("Rates are row events per second. B0: go-mysql parses the same binlog range, rows discarded (best of 3). B1: the tailer's records produced again to the same broker (franz-go, acks=all, idempotent; best of 3). B2: the projection's own writes through the sink's multi-row version-guarded upsert, best of a batch/connection sweep, not coalesced, in writes/s; for a projection with joins, the child table's writes alone, without the join (no parent locks, parent state or fan-out). B2 with join statements (projections with joins only): every record of the projection's topics, parents included, built into batches by the projector's own Build (coalesced per key; batch rows = records) and applied with the sink's Apply — parent locks, parent state, child upserts, fan-out, offsets and watermarks, the projector's statements — partitions dealt to connections as the projector does, best of the same sweep, in records (source events)/s. Projector rates count source events consumed; `rows/s` is read-table writes after coalescing per key.\n\n")
	b.WriteString("| workload | events | record B | B0 parse | B1 produce | tailer | **tailer / min(B0,B1)** | B2 upsert | projector (events/s) | projector rows/s | **projector / B2** | B2 with join statements | **projector / B2-join** |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range res.Workloads {
		join, vsJoin := "–", "–"
		if w.B2Join != nil {
			join, vsJoin = fmt.Sprintf("%.0f", w.B2Join.PerS), fmt.Sprintf("**%.2f**", w.ProjectorVsB2Join)
		}
		if w.B0.PerS == 0 { // a transactional variant: its base's limits (consistency.go)
			fmt.Fprintf(&b, "| %s | %d | – | – | – | %.0f | – | – | %.0f | %.0f (records) | – | – | – |\n", w.Workload.Name, w.Workload.Events, w.Tailer.PerS, w.Projector.PerS, w.ProjectorRows)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f | %.0f | **%.2f** | %.0f | %.0f | %.0f | **%.2f** | %s | %s |\n", w.Workload.Name, w.Workload.Events, w.AvgRecordBytes,
			w.B0.PerS, w.B1.PerS, w.Tailer.PerS, w.TailerVsLimit, w.B2.PerS, w.Projector.PerS, w.ProjectorRows, w.ProjectorVsB2, join, vsJoin)
	}
	b.WriteString("\nB1 per run (each to its own topic; the best is the limit):")
	for i, w := range res.Workloads {
		sep := ";"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %s", sep, w.Workload.Name, w.B1.Description)
	}
	b.WriteString(".\n")
	for _, w := range res.Workloads {
		if w.B2JoinCheck != "" {
			fmt.Fprintf(&b, "\nB2 with join statements, %s: %s.\n", w.Workload.Name, w.B2JoinCheck)
		}
	}
	for _, w := range res.Workloads {
		if w.B2Check != "" {
			fmt.Fprintf(&b, "\nB2, %s: %s.\n", w.Workload.Name, w.B2Check)
		}
		if w.ChildrenCheck != "" {
			fmt.Fprintf(&b, "\nChildren, %s: %s.\n", w.Workload.Name, w.ChildrenCheck)
		}
	}
	for _, sk := range res.Skipped {
		fmt.Fprintf(&b, "\nSkipped: %s\n", sk)
	}
	b.WriteString("\nCost of the readside processes (CPU seconds per 1,000 events during the drain, from /proc/<pid>/stat; peak RSS over the process's life):\n\n")
	b.WriteString("| workload | tailer CPU s/1k | tailer peak RSS MiB | projector CPU s/1k | projector peak RSS MiB | B2 best point | B2 with join statements: best point |\n|---|---|---|---|---|---|---|\n")
	for _, w := range res.Workloads {
		join := "–"
		if w.B2Join != nil {
			join = w.B2Join.Description
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.0f | %.3f | %.0f | %s | %s |\n", w.Workload.Name, w.Tailer.CPUPer1000, w.Tailer.PeakRSSMiB, w.Projector.CPUPer1000, w.Projector.PeakRSSMiB, w.B2.Description, join)
	}
	workloadLatencyMarkdown(&b, res.Workloads)
	consistencyMarkdown(&b, res)
	reshardMarkdown(&b, res.Reshard)
	snapshotMarkdown(&b, res.Snapshot)
	if e := res.EndToEnd; e != nil {
		fmt.Fprintf(&b, "\n## End to end (`readside run`, tailer and projector in one process), %s\n\n", e.Workload.Name)
		fmt.Fprintf(&b, "Backlog of %d events drained at **%.0f events/s**", e.Workload.Events, e.Rate.PerS)
		if e.SlowerName != "" {
			fmt.Fprintf(&b, " = **%.2f × the slower stage** (%s, narrow_insert)", e.VsSlower, e.SlowerName)
		}
		fmt.Fprintf(&b, ", timed like the projector stage from the first applied batch; %.0f events/s from the tailer's first record in the topic, which also holds the projector's start "+
			"(%.1f s against %.1f s). %.3f CPU s per 1,000 events; peak RSS %.0f MiB over the whole step (catch-up and latency). Load %.2f.\n\n",
			e.FromFirstRecord.PerS, e.FromFirstRecord.Seconds, e.Rate.Seconds, e.Rate.CPUPer1000, e.PeakRSSMiB, e.Rate.Load1)
		latencyMarkdown(&b, e)
	}
	return b.String()
}

// settleSummary says how long the run waited for MariaDB to flush and
// purge before its stages (-settle), and which stages started unsettled.
func settleSummary(limitS float64, settles []benchio.Settle) string {
	if limitS <= 0 {
		return "The stages did not wait for MariaDB to settle (`-settle 0`): each one started with whatever the one before left InnoDB to flush and purge.\n\n"
	}
	var total, longest float64
	var longestStage string
	var unsettled []string
	for _, s := range settles {
		total += s.Seconds
		if s.Seconds > longest {
			longest, longestStage = s.Seconds, s.Stage
		}
		if !s.Settled {
			unsettled = append(unsettled, s.Stage)
		}
	}
	out := fmt.Sprintf("Before each stage (and each B2 point) the run waited, up to %.0f s, for MariaDB to write its dirty pages and purge its undo history: %d waits, %.1f s in all, the longest %.1f s (%s).", limitS, len(settles), total, longest, longestStage)
	if len(unsettled) > 0 {
		out += fmt.Sprintf(" Not settled within the limit: %s.", strings.Join(unsettled, "; "))
	}
	return out + "\n\n"
}

// writeJSON writes v, indented, to dir/name, making dir if needed.
func writeJSON(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}
