package main

import (
	"fmt"
	"strings"
)

// latencyMarkdown writes the latency steps (commit → broker ack and commit
// → visible) and the sink outage of the end-to-end step.
func latencyMarkdown(b *strings.Builder, e *e2eResult) {
	if l := e.Live; l != nil {
		fmt.Fprintf(b, "**Live capacity %.0f rows/s**: for %.0f s the generator wrote 500-row INSERTs as fast as the end-to-end lag allowed (under %d rows committed and not yet applied) while readside ran, and this many rows were applied per second over the window's last two thirds (the source's rate over the whole window: %.0f rows/s). "+
			"The backlog drain above has the box to itself; live, the source's inserts take the same MariaDB and cores. The latency steps and the outage are fractions of the live capacity; the last step is half the drain rate, what the fractions were taken of until session 9. Load %.2f.\n\n",
			l.PerS, l.Seconds, l.MaxLagRows, l.SourcePerS, l.Load1)
	}
	b.WriteString("Latency at fixed offered rates, open-loop inserts, in ms. **ack**: commit → the record received by a read_committed consumer of the topic (the tailer's Kafka transaction acknowledged and stable; ≤ 10 ms fetch wait). **visible**: commit → the projector's upsert of the row in the read table (`_bench_visible_at`). Commit is the generator's microsecond clock before the source INSERT.\n\n")
	b.WriteString("| offered | rows/s offered | achieved | rows | ack p50 | ack p95 | ack p99 | ack max | **visible p50** | visible p95 | **visible p99** | visible max | CPU s/1k | RSS MiB | load |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range e.Latency {
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %d | %.1f | %.1f | %.1f | %.1f | **%.1f** | %.1f | **%.1f** | %.1f | %.3f | %.0f | %.2f |\n", s.label(), s.OfferedPerS, s.AchievedPerS, s.Rows,
			s.Ack.P50ms, s.Ack.P95ms, s.Ack.P99ms, s.Ack.Maxms, s.P50ms, s.P95ms, s.P99ms, s.Maxms, s.CPUPer1000, s.RSSMiB, s.Load1)
	}
	b.WriteString("\nWhere the time went, from readside's histograms over each step (means): the tailer's Kafka commits (flush and EndTxn, while the next records are held) and the projector's batches (poll to sink commit, the wait for the previous batch included).\n\n")
	b.WriteString("The first columns are per row, in ms: the source INSERT's round trip (commit included: time before the binlog has the row) and commit → the tailer's produce call (the record's CreateTime; held records are produced when the commit before them is done).\n\n")
	b.WriteString("| offered | source INSERT p50 / p99 | commit → produce p50 / p99 | Kafka commits | mean commit ms | projector batches | mean batch ms | mean rows per batch | buffer pool reads per row |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range e.Latency {
		fmt.Fprintf(b, "| %s | %.1f / %.1f | %.1f / %.1f | %d | %.1f | %d | %.1f | %.0f | %.2f |\n", s.label(), s.SourceInsert.P50ms, s.SourceInsert.P99ms, s.Produce.P50ms, s.Produce.P99ms,
			s.KafkaCommits, s.KafkaCommitMs, s.Batches, s.BatchMs, s.BatchRows, s.PoolReadsPerRow)
	}
	b.WriteString("\nChart: `latest.png` (latency per offered rate; throughput and RSS over the whole step).\n")
	o := e.Outage
	if o == nil {
		return
	}
	fmt.Fprintf(b, "\n### Sink outage at %.0f%% load\n\n", o.Fraction*100)
	fmt.Fprintf(b, "Rows offered open-loop at %.0f rows/s (achieved %.0f) throughout; the sink (behind a TCP proxy in benchall) cut for **%.0f s** — connections closed, new ones refused — while the tailer kept publishing. Load %.2f.\n\n", o.OfferedPerS, o.AchievedPerS, o.OutageS, o.Load1)
	caught := fmt.Sprintf("**%.1f s**", o.CatchUpS)
	if !o.CaughtUp {
		caught = fmt.Sprintf("**not caught up after %.0f s** (lag %d offsets left)", o.CatchUpS, o.LagAtEndOffsets)
	}
	b.WriteString("| backlog at restore (events) | backlog (offsets) | catch-up s (lag back to pre-outage max) | backlog applied s | catch-up applied rows/s | lag shrank offsets/s | CPU s/1k rows | RSS before MiB | **peak RSS outage + catch-up MiB** |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| %d | %d | %s | %.1f | %.0f | %.0f | %.3f | %.0f | **%.0f** |\n\n", o.BacklogEvents, o.BacklogOffsets, caught, o.BacklogAppliedS, o.CatchUpRowsPerS, o.NetPerS, o.CPUPer1000, o.RSSBeforeMiB, o.PeakRSSMiB)
	fmt.Fprintf(b, "Commit → visible before the outage: p50 %.1f, p99 %.1f, max %.1f ms (%d rows); after catch-up: p50 %.1f, p99 %.1f, max %.1f ms (%d rows).\n",
		o.Pre.P50ms, o.Pre.P99ms, o.Pre.Maxms, o.Pre.N, o.Post.P50ms, o.Post.P99ms, o.Post.Maxms, o.Post.N)
}

// label names a latency step in the tables: its fraction of the live
// capacity, and for the step at half the drain rate, that.
func (s latencyStep) label() string {
	if s.HalfDrain {
		return fmt.Sprintf("%.0f%% (½ drain)", s.Fraction*100)
	}
	return fmt.Sprintf("%.0f%%", s.Fraction*100)
}

// workloadLatencyMarkdown writes the latency steps of the workloads that
// have their own (workloadlatency.go).
func workloadLatencyMarkdown(b *strings.Builder, ws []workloadResult) {
	head := false
	for _, w := range ws {
		l := w.Latency
		if l == nil {
			continue
		}
		if !head {
			head = true
			b.WriteString("\n## Commit → visible on the workloads' own mixes\n\n")
			b.WriteString("After its drains, one `readside run` on the workload's config; its own mix written as fast as the lag allows (live capacity, rows applied per second over the window's last two thirds, offsets of all its topics), then open-loop at a fraction of it. " +
				"A sample is a read row stamped during the step: a trigger sets `_bench_visible_at` (the statement time) when the row's stamp column (a copy of its source row's `commit_us`, or `max(commit_us)` of a group) moves forward (children: or is written again at the same value), so a join's fan-out or a group member leaving does not restamp; latency = `_bench_visible_at` − the stamp, one sample per read row changed (its last change).\n\n")
			b.WriteString("| workload | live capacity rows/s | offered | rows/s offered | achieved | rows | samples | **visible p50** | visible p95 | **visible p99** | visible max | projector batches (mean ms, rows) | CPU s/1k | load |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		}
		for _, s := range l.Steps {
			fmt.Fprintf(b, "| %s | %.0f | %s | %.0f | %.0f | %d | %d | **%.1f** | %.1f | **%.1f** | %.1f | %d (%.1f, %.0f) | %.3f | %.2f |\n", w.Workload.Name, l.Live.PerS, s.label(), s.OfferedPerS, s.AchievedPerS, s.Rows, s.Samples,
				s.P50ms, s.P95ms, s.P99ms, s.Maxms, s.Batches, s.BatchMs, s.BatchRows, s.CPUPer1000, s.Load1)
		}
	}
	// A background fan-out's copies lag their batches: the samples above
	// are the rows the batches wrote, so say how far the parents' other
	// rows were behind.
	for _, w := range ws {
		if w.Latency == nil {
			continue
		}
		for _, s := range w.Latency.Steps {
			if a := s.FanOutPendingAge; a != nil {
				fmt.Fprintf(b, "\n%s at %s (`fan_out: background`): the oldest parent change not yet copied into its other rows was p50 %.0f / p99 %.0f / max %.0f ms old (sampled every 50 ms over the step).\n",
					w.Workload.Name, s.label(), a.P50ms, a.P99ms, a.Maxms)
			}
		}
	}
}
