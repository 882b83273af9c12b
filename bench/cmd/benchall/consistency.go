package main

// Transaction-consistent sinks (issue 42, docs/design/consistent-sinks.md):
// the join, aggregate and children workloads again on a sink with
// `consistency: transaction`, the same seeded streams, set against their
// row-mode figures of the same run; and one source transaction of
// 1,000,000 rows into a transactional sink (runBigTxn).
//
// In that mode a read row is visible when the applier's commit lands, not
// when its upsert runs: the commit's statements all run inside one sink
// transaction that ends with the frontier's UPDATE. A trigger on
// `_readside_frontier` logs the time of every such UPDATE, and a row's
// visible time is the first logged commit at or after its upsert.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/sinks"
)

// consistencyLine is the sink's consistency key for the configs written
// now (nothing in row mode, the default).
func (e *env) consistencyLine() string {
	if e.consistency == "" {
		return ""
	}
	return "    consistency: " + e.consistency + "\n"
}

// ownDatabases points the env at a fresh source and sink database for a
// workload whose tables have another's names (a variant writing its
// base's stream again) and at the sink consistency given; restore points
// it back.
func (e *env) ownDatabases(ctx context.Context, name, consistency string) (restore func(), err error) {
	src, err := e.bed.MySQL.CreateDatabase(ctx, "src_"+name)
	if err != nil {
		return nil, err
	}
	sinkDB, err := e.bed.MySQL.CreateDatabase(ctx, "reads_"+name)
	if err != nil {
		return nil, err
	}
	sink, err := sinks.Open(ctx, e.bed.MySQL.AdminDSN()+sinkDB)
	if err != nil {
		return nil, err
	}
	old := *e
	e.srcDB, e.sinkDB, e.sink, e.consistency = src, sinkDB, sink, consistency
	return func() {
		sink.Close()
		e.srcDB, e.sinkDB, e.sink, e.consistency = old.srcDB, old.sinkDB, old.sink, old.consistency
	}, nil
}

// frontierLogDDL logs the statement time of every frontier UPDATE: the
// last statement of each consistent commit, so its time is when the
// commit's rows became visible (to within the COMMIT itself, which row
// mode's stamps leave out too).
var frontierLogDDL = []string{
	"CREATE TABLE IF NOT EXISTS `_bench_frontier_log` (n BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, at_us BIGINT NOT NULL, KEY (at_us))",
	"DROP TRIGGER IF EXISTS `_bench_frontier_seen`",
	"CREATE TRIGGER `_bench_frontier_seen` AFTER UPDATE ON `_readside_frontier` FOR EACH ROW" +
		" INSERT INTO `_bench_frontier_log` (at_us) VALUES (CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED))",
}

// visibleQuery selects commit → visible in µs of every row of table
// stamped in [from, to]: in row mode from the row's own upsert; in
// transaction mode from the first frontier UPDATE at or after it.
func visibleQuery(table string, transactional bool) string {
	visible := visibleUS
	if transactional {
		visible = "(SELECT MIN(f.at_us) FROM `_bench_frontier_log` f WHERE f.at_us >= " + visibleUS + ")"
	}
	return fmt.Sprintf("SELECT %s - _bench_stamped_us FROM `%s` WHERE _bench_stamped_us BETWEEN ? AND ?", visible, table)
}

// modeComparison sets a transactional workload against its row-mode base
// of the same run: the targets are drain ≥ 0.7 × and commit →
// visible p99 at 50% ≤ 2 × row mode.
type modeComparison struct {
	Workload string `json:"workload"`
	Base     string `json:"base"`
	// Drains in source events/s (projector stage alone, the topic filled).
	RowDrain   float64 `json:"row_drain_per_s"`
	TxnDrain   float64 `json:"txn_drain_per_s"`
	DrainRatio float64 `json:"drain_ratio"`
	// Tailer drains: the transactional sink makes the tailer write cuts.
	RowTailer   float64 `json:"row_tailer_per_s"`
	TxnTailer   float64 `json:"txn_tailer_per_s"`
	TailerRatio float64 `json:"tailer_ratio"`
	// Live capacities (offsets applied/s with the source written live).
	RowLive float64 `json:"row_live_per_s,omitempty"`
	TxnLive float64 `json:"txn_live_per_s,omitempty"`
	// Commit → visible at the base's 50%: both at the same offered rate.
	Offered  float64 `json:"offered_per_s,omitempty"`
	RowP50   float64 `json:"row_p50_ms,omitempty"`
	TxnP50   float64 `json:"txn_p50_ms,omitempty"`
	RowP99   float64 `json:"row_p99_ms,omitempty"`
	TxnP99   float64 `json:"txn_p99_ms,omitempty"`
	P99Ratio float64 `json:"p99_ratio,omitempty"`
	// Peak RSS of the projector drain and of the latency step's daemon.
	RowDrainRSS float64 `json:"row_drain_peak_rss_mib"`
	TxnDrainRSS float64 `json:"txn_drain_peak_rss_mib"`
	RowLiveRSS  float64 `json:"row_live_peak_rss_mib,omitempty"`
	TxnLiveRSS  float64 `json:"txn_live_peak_rss_mib,omitempty"`
}

// compareModes pairs every transactional workload with its base's result
// of the same run, or with the base's in_batch twin when that ran (the
// join's like for like: a transactional sink fans out in its commit).
func compareModes(ws []workloadResult) []modeComparison {
	var out []modeComparison
	for _, t := range ws {
		if !t.Workload.transactional() || t.Workload.Base == "" {
			continue
		}
		base := t.Workload.Base
		for _, r := range ws {
			if r.Workload.Base == base && r.Workload.InBatch && !r.Workload.transactional() && t.Workload.InBatch {
				base = r.Workload.Name
			}
		}
		for _, r := range ws {
			if r.Workload.Name != base {
				continue
			}
			c := modeComparison{Workload: t.Workload.Name, Base: r.Workload.Name,
				RowDrain: r.Projector.PerS, TxnDrain: t.Projector.PerS, DrainRatio: t.Projector.PerS / r.Projector.PerS,
				RowTailer: r.Tailer.PerS, TxnTailer: t.Tailer.PerS, TailerRatio: t.Tailer.PerS / r.Tailer.PerS,
				RowDrainRSS: r.Projector.PeakRSSMiB, TxnDrainRSS: t.Projector.PeakRSSMiB}
			if r.Latency != nil && t.Latency != nil && len(r.Latency.Steps) > 0 && len(t.Latency.Steps) > 0 {
				rs, ts := r.Latency.Steps[0], t.Latency.Steps[0]
				c.RowLive, c.TxnLive = r.Latency.Live.PerS, t.Latency.Live.PerS
				c.Offered = ts.OfferedPerS
				c.RowP50, c.TxnP50, c.RowP99, c.TxnP99 = rs.P50ms, ts.P50ms, rs.P99ms, ts.P99ms
				c.P99Ratio = ts.P99ms / rs.P99ms
				c.RowLiveRSS, c.TxnLiveRSS = r.Latency.PeakRSS, t.Latency.PeakRSS
			}
			out = append(out, c)
		}
	}
	return out
}

func consistencyMarkdown(b *strings.Builder, res *results) {
	if len(res.Consistency) == 0 && res.BigTxn == nil {
		return
	}
	b.WriteString("\n## Transaction-consistent sinks\n\n")
	if len(res.Consistency) > 0 {
		b.WriteString("Each `…_txn` workload writes its base's seeded stream again into a sink with `consistency: transaction` (its own databases and topics; the join `in_batch`, which that mode requires, set against `orders_with_region_inbatch` when that ran, else against the base's `fan_out: background`). Drain: the projector stage alone (the applier in transaction mode) on the filled topics, source events/s. Latency: commit → visible p99 with the mix offered at 50% of the **base's** live capacity, or at `-latency-rates` (the same rows/s in both modes); in transaction mode a row is visible at its commit's frontier UPDATE. Targets: drain ≥ 0.7 ×, p99 ≤ 2 × row mode.\n\n")
		b.WriteString("| workload | row drain | txn drain | **txn / row drain** | tailer txn / row | row live | txn live | offered | row p50 / p99 ms | txn p50 / p99 ms | **txn / row p99** | peak RSS MiB drain row / txn | live row / txn |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range res.Consistency {
			fmt.Fprintf(b, "| %s | %.0f | %.0f | **%.2f** | %.2f | %.0f | %.0f | %.0f | %.1f / %.1f | %.1f / %.1f | **%.2f** | %.0f / %.0f | %.0f / %.0f |\n",
				c.Workload, c.RowDrain, c.TxnDrain, c.DrainRatio, c.TailerRatio, c.RowLive, c.TxnLive, c.Offered, c.RowP50, c.RowP99, c.TxnP50, c.TxnP99, c.P99Ratio,
				c.RowDrainRSS, c.TxnDrainRSS, c.RowLiveRSS, c.TxnLiveRSS)
		}
	}
	if t := res.BigTxn; t != nil {
		fmt.Fprintf(b, "\nOne source transaction of %d rows (`INSERT … SELECT` from a sequence, %.1f s to commit at the source) into a transactional sink, one `readside run`: in the topic %.1f s after the source commit, **visible %.1f s after it** (the frontier covering it; %d rows read back), **peak RSS %.0f MiB** (target ≤ 300), %.1f CPU s.\n",
			t.Rows, t.SourceS, t.ToTopicS, t.ToVisibleS, t.ReadRows, t.PeakRSSMiB, t.CPUS)
	}
}

// bigTxnResult is the single large source transaction's step.
type bigTxnResult struct {
	Rows int `json:"rows"`
	// SourceS is the INSERT … SELECT's own time at the source.
	SourceS float64 `json:"source_s"`
	// ToTopicS and ToVisibleS run from the source commit to the first
	// checkpoint, and the sink's frontier, covering it.
	ToTopicS   float64 `json:"to_topic_s"`
	ToVisibleS float64 `json:"to_visible_s"`
	ReadRows   int     `json:"read_rows"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	CPUS       float64 `json:"cpu_s"`
	Load1      float64 `json:"load1"`
}

// runBigTxn writes one source transaction of rows narrow rows into a table
// whose copy projection is on a transactional sink, with one `readside
// run` (tailer and applier) already caught up, and times it to the topic
// and to visible, with the process's peak RSS: the applier streams it into
// one open sink transaction, never splitting it.
func (e *env) runBigTxn(ctx context.Context, rows int) (*bigTxnResult, error) {
	restore, err := e.ownDatabases(ctx, "bigtxn", "transaction")
	if err != nil {
		return nil, err
	}
	defer restore()
	const tbl = "big_items"
	if err := e.bed.MySQL.Exec(ctx, workload{}.tableDDL(e.srcDB, tbl)); err != nil {
		return nil, err
	}
	prefix := prefixFor(tbl)
	cfgPath, err := e.config("p_"+tbl, tbl, prefix, true)
	if err != nil {
		return nil, err
	}
	_, ps, err := compile(cfgPath)
	if err != nil {
		return nil, err
	}
	proj := ps[0]
	cl, err := checkpointClient(e.bed, prefix)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	p, err := startReadside(e.bin, cfgPath, "all", cfgPath+".log", freeAddr())
	if err != nil {
		return nil, err
	}
	defer func() {
		if p != nil {
			p.end()
		}
	}()
	if _, err := waitCheckpoint(ctx, cl, e.bed, nil, time.Minute); err != nil {
		return nil, err
	}
	// The applier has started once its frontier row is there.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		f, err := sinks.ReadFrontier(ctx, e.sink.DB(), "reads")
		if err == nil && f.Checkpoint >= 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the applier wrote no frontier within a minute (see %s.log): %v", cfgPath, err)
		}
	}
	e.settle(ctx, "the 1,000,000-row transaction")
	res := &bigTxnResult{Rows: rows, Load1: loadavg()}
	cpu0 := p.cpuSeconds()
	t0 := time.Now()
	stmt := fmt.Sprintf("INSERT INTO `%s`.`%s` (id, k, a, b, c, d, commit_us) SELECT seq, seq %% 997, seq %% 1000000, CONCAT('name-', seq, '-', seq * 7919 %% 1000003), (seq %% 10000000) / 100, '2026-01-01' + INTERVAL seq SECOND, %d FROM %s",
		e.srcDB, tbl, t0.UnixMicro(), seqRows(ctx, e.bed.MySQL.DB(), rows))
	if _, err := e.bed.MySQL.DB().ExecContext(ctx, stmt); err != nil {
		return nil, fmt.Errorf("the %d-row transaction: %w", rows, err)
	}
	committed := time.Now()
	res.SourceS = committed.Sub(t0).Seconds()
	pos, err := e.bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return nil, err
	}
	want, err := endPosition(pos)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Minute); res.ToVisibleS == 0; {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %d-row transaction was not visible within 10 minutes (see %s.log)", rows, cfgPath)
		}
		if res.ToTopicS == 0 {
			if found := pollCheckpoint(ctx, cl, 50*time.Millisecond); found != nil {
				if ok, _ := found.Contains(want); ok {
					res.ToTopicS = time.Since(committed).Seconds()
				}
			}
		} else {
			time.Sleep(50 * time.Millisecond)
		}
		f, err := sinks.ReadFrontier(ctx, e.sink.DB(), "reads")
		if err != nil {
			return nil, err
		}
		if ok, _ := (cdc.Position{Flavor: f.Flavor, GTID: f.GTID}).Contains(want); ok && f.GTID != "" {
			res.ToVisibleS = time.Since(committed).Seconds()
		}
	}
	res.CPUS = p.cpuSeconds() - cpu0
	res.PeakRSSMiB = p.end()
	p = nil
	if err := e.sink.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM `%s`", proj.Table)).Scan(&res.ReadRows); err != nil {
		return nil, err
	}
	if res.ReadRows != rows {
		return res, fmt.Errorf("the read table %s holds %d rows once the frontier covers the transaction, the source wrote %d", proj.Table, res.ReadRows, rows)
	}
	return res, nil
}

// scanLatencies reads visibleQuery's rows (a row whose commit is not
// logged, none once the step is applied, is left out).
func scanLatencies(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var lat []int64
	for rows.Next() {
		var us sql.NullInt64
		if err := rows.Scan(&us); err != nil {
			return nil, err
		}
		if us.Valid {
			lat = append(lat, us.Int64)
		}
	}
	return lat, rows.Err()
}
