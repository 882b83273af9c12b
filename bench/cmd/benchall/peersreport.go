package main

// peers.json and peers.md of `make bench-peers`.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/readside/readside/e2e/testbed"
)

// writePeers writes peers.json and peers.md.
func writePeers(dir string, res *peersResults) error {
	if err := writeJSON(dir, "peers.json", res); err != nil {
		return err
	}
	md := peersMarkdown(res)
	fmt.Print(md)
	return os.WriteFile(filepath.Join(dir, "peers.md"), []byte(md), 0o644)
}

func peersMarkdown(res *peersResults) string {
	var b strings.Builder
	b.WriteString("# readside vs Debezium (make bench-peers)\n\n")
	fmt.Fprintf(&b, "%s, commit %s, %d CPUs, %s; broker %s; MariaDB %s; Debezium %s (MariaDB source, JDBC sink) in Kafka Connect %s standalone on %s, -Xms1g -Xmx1g. 1-minute load average %.2f before the run, %.2f after. Took %.0f s.\n\n",
		res.StartedAt.Format("2006-01-02 15:04 MST"), res.Host.Commit, res.Host.CPUs, res.Host.GoVer, res.Broker, res.MariaDB, res.Debezium,
		testbed.KafkaVersion, res.JVM, res.LoadBefore, res.LoadAfter, res.DurationS)
	b.WriteString(settleSummary(res.SettleLimitS, res.Settles))
	b.WriteString("Rates are source row events per second, both measured in this run on the same seeded stream. Source: binlog backlog → Kafka (readside's tailer; Debezium's MariaDB connector). Sink: the filled topic → the read table (readside's projector; Debezium's JDBC sink, upsert). RSS is the peak over the process's life; CPU is user+system seconds per 1,000 events during the drain. Ratios are readside / Debezium.\n\n")
	b.WriteString("| workload | events | readside source | Debezium source | **source ratio** | readside sink | Debezium sink | **sink ratio** | readside peak RSS MiB (tailer / projector) | Debezium peak RSS MiB (source / sink) | **memory ratio** |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range res.Workloads {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | **%.2f×** | %.0f | %.0f | **%.2f×** | %.0f / %.0f | %.0f / %.0f | **%.3f×** |\n", w.Workload.Name, w.Workload.Events,
			w.Readside.Tailer.PerS, w.Source.PerS, w.SourceRatio, w.Readside.Projector.PerS, w.Sink.PerS, w.SinkRatio,
			w.Readside.Tailer.PeakRSSMiB, w.Readside.Projector.PeakRSSMiB, w.Source.PeakRSSMiB, w.Sink.PeakRSSMiB, w.MemRatio)
	}
	b.WriteString("\n| workload | readside tailer CPU s/1k | Debezium source CPU s/1k | readside projector CPU s/1k | Debezium sink CPU s/1k | readside record B | Debezium record B | Debezium sink rows (readside read-table rows) | Debezium sink INSERT statements | load (source / sink) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range res.Workloads {
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %.0f | %.0f | %d (%d) | %d | %.2f / %.2f |\n", w.Workload.Name, w.Readside.Tailer.CPUPer1000, w.Source.CPUPer1000,
			w.Readside.Projector.CPUPer1000, w.Sink.CPUPer1000, w.Readside.AvgRecordBytes, w.AvgRecordB, w.SinkRows, w.ReadsideRows, w.SinkInserts, w.Source.Load1, w.Sink.Load1)
	}
	formats := false
	for _, w := range res.Workloads {
		for _, f := range w.Formats {
			if !formats {
				b.WriteString("\nreadside's tailer again on the same stream writing Debezium's format (`kafka.format`), no projection: what a Debezium consumer reads when the tailer replaces the connector.\n\n| workload | format | readside tailer | Debezium source | **source ratio** | tailer CPU s/1k | tailer peak RSS MiB | load |\n|---|---|---|---|---|---|---|---|\n")
				formats = true
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | **%.2f×** | %.3f | %.0f | %.2f |\n", w.Workload.Name, f.Format, f.Tailer.PerS, w.Source.PerS, f.SourceRatio,
				f.Tailer.CPUPer1000, f.Tailer.PeakRSSMiB, f.Tailer.Load1)
		}
	}
	for _, w := range res.Workloads {
		if w.Error != "" {
			fmt.Fprintf(&b, "\n**Failed on %s:** `%s`\n", w.Workload.Name, firstLines(w.Error, 3))
		}
	}
	if len(res.Latency) > 0 {
		b.WriteString("\nCommit → visible in the read table at the same offered open-loop insert rates (fractions of Debezium's slower stage on narrow_insert), after a warm-up step; readside runs as one `readside run` process, Debezium as one Connect worker with both connectors:\n\n")
		b.WriteString("| offered rows/s | readside p50 / p95 / p99 / max ms | Debezium p50 / p95 / p99 / max ms | readside CPU s/1k | Debezium CPU s/1k | readside RSS MiB | Debezium RSS MiB |\n|---|---|---|---|---|---|---|\n")
		for _, l := range res.Latency {
			r, d := l.Readside, l.Debezium
			fmt.Fprintf(&b, "| %.0f | %.1f / %.1f / %.1f / %.1f | %.1f / %.1f / %.1f / %.1f | %.3f | %.3f | %.0f | %.0f |\n", l.OfferedPerS,
				r.P50ms, r.P95ms, r.P99ms, r.Maxms, d.P50ms, d.P95ms, d.P99ms, d.Maxms, r.CPUPer1000, d.CPUPer1000, r.RSSMiB, d.RSSMiB)
		}
	}
	if res.LatencyErr != "" {
		fmt.Fprintf(&b, "\n**Latency step failed:** `%s`\n", firstLines(res.LatencyErr, 3))
	}
	return b.String()
}
