package main

// `make bench-peers`: Debezium's MariaDB source connector and its JDBC sink
// connector in Kafka Connect standalone, on the same test bed, workloads and
// measurements as readside, with readside measured in the same run so the
// ratios readside/Debezium come from one run. docs/benchmarks.md, "Debezium
// side by side", explains the method and the published config
// (bench/peers/).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/bench/peers"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/sinks"
)

// debeziumVersion is what bench/peers/debezium-*-pom.xml pin.
const debeziumVersion = "3.5.0.Final"

type peersResults struct {
	StartedAt  time.Time         `json:"started_at"`
	Quick      bool              `json:"quick"`
	Host       hostInfo          `json:"host"`
	Broker     string            `json:"broker"`
	MariaDB    string            `json:"mariadb"`
	Debezium   string            `json:"debezium"`
	JVM        string            `json:"jvm"`
	Workloads  []peerWorkload    `json:"workloads"`
	Latency    []peerLatency     `json:"latency,omitempty"`
	LatencyErr string            `json:"latency_error,omitempty"`
	Config     map[string]string `json:"config"` // the rendered worker and connector configs (passwords elided)
	DurationS  float64           `json:"duration_s"`
	LoadBefore float64           `json:"load1_before"`
	LoadAfter  float64           `json:"load1_after"`
	// Settles: the waits for MariaDB to flush and purge before each stage,
	// Debezium's as readside's, so both start alike (-settle).
	SettleLimitS float64          `json:"settle_limit_s"`
	Settles      []benchio.Settle `json:"settles,omitempty"`
}

type peerWorkload struct {
	Workload workload       `json:"workload"`
	Readside workloadResult `json:"readside"`
	// Debezium's source drain: backlog → Kafka, from the first record in
	// the topic to the last one acknowledged.
	Source rate `json:"debezium_source_drain"`
	// Debezium's sink drain: the filled topic → the table, from the first
	// committed consumer offset to lag 0, in source events.
	Sink         rate    `json:"debezium_sink_drain"`
	SinkRows     int64   `json:"debezium_sink_rows"`
	ReadsideRows int64   `json:"readside_read_table_rows"`
	SinkInserts  int64   `json:"debezium_sink_insert_statements"` // Com_insert during the sink drain
	TopicRecords int64   `json:"debezium_topic_records"`
	AvgRecordB   float64 `json:"debezium_avg_record_bytes"`
	// readside / Debezium.
	SourceRatio float64 `json:"tailer_vs_debezium_source"`
	SinkRatio   float64 `json:"projector_vs_debezium_sink"`
	MemRatio    float64 `json:"readside_vs_debezium_peak_rss"`
	// Formats: readside's tailer again on the same stream, writing
	// Debezium's format (peersformat.go).
	Formats []formatDrainResult `json:"formats,omitempty"`
	Error   string              `json:"error,omitempty"`
}

type peerLatency struct {
	OfferedPerS float64     `json:"offered_per_s"`
	Readside    latencyStep `json:"readside"`
	Debezium    latencyStep `json:"debezium"`
}

func runPeers(quick bool, outDir, only string) error {
	ctx := context.Background()
	res := peersResults{StartedAt: time.Now().UTC(), Quick: quick, Debezium: debeziumVersion, Config: map[string]string{}, Host: thisHost()}
	if b, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		res.JVM = strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)[0]
	}
	bed, load, closeBed, err := startBed(ctx)
	defer closeBed()
	if err != nil {
		return err
	}
	res.LoadBefore = load
	res.SettleLimitS = settleLimit.Seconds()
	if bed.Kafka.Kind != "kafka" {
		return fmt.Errorf("make bench-peers needs the real Apache Kafka broker (Kafka Connect runs against it); unset E2E_BROKER (it is %q)", bed.Kafka.Kind)
	}
	e, err := newEnv(ctx, bed)
	if err != nil {
		return err
	}
	defer e.close()
	res.Broker = bed.Kafka.Version()
	res.MariaDB, _ = bed.MySQL.Version(ctx)

	logf("resolving Kafka Connect and Debezium %s with Maven", debeziumVersion)
	cn, err := installConnect(ctx, bed.Dir())
	if err != nil {
		return err
	}
	d, err := newDbz(ctx, e, cn, &res)
	if err != nil {
		return err
	}
	defer d.sink.Close()

	start := time.Now()
	if err := d.compareWorkloads(ctx, quick, only); err != nil {
		return err
	}
	d.compareLatency(ctx, quick)
	res.DurationS = time.Since(start).Seconds()
	res.LoadAfter = loadavg()
	res.Settles = e.settles
	return writePeers(outDir, &res)
}

// newDbz makes Debezium's own databases, with the same table names as
// readside's so the records carry the same source metadata, and opens
// its sink.
func newDbz(ctx context.Context, e *env, cn *connectInstall, res *peersResults) (*dbz, error) {
	d := &dbz{e: e, cn: cn, res: res}
	var err error
	if d.srcDB, err = e.bed.MySQL.CreateDatabase(ctx, "dbzsrc"); err != nil {
		return nil, err
	}
	if d.sinkDB, err = e.bed.MySQL.CreateDatabase(ctx, "dbzreads"); err != nil {
		return nil, err
	}
	if err := e.bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.dbz_ping (id INT PRIMARY KEY, at DATETIME(6))", d.srcDB)); err != nil {
		return nil, err
	}
	if d.sink, err = sinks.Open(ctx, e.bed.MySQL.AdminDSN()+d.sinkDB); err != nil {
		return nil, err
	}
	return d, nil
}

// compareWorkloads runs each workload on readside, then on Debezium.
func (d *dbz) compareWorkloads(ctx context.Context, quick bool, only string) error {
	e, res := d.e, d.res
	var err error
	for _, w := range peerWorkloads(quick) {
		if only != "" && !strings.Contains(","+only+",", ","+w.Name+",") {
			continue
		}
		logf("workload %s: %d events, readside", w.Name, w.Events)
		pw := peerWorkload{Workload: w}
		if pw.Readside, err = e.runWorkload(ctx, w); err != nil {
			return fmt.Errorf("workload %s (readside): %w", w.Name, err)
		}
		logf("workload %s: tailer %.0f/s, projector %.0f/s; Debezium", w.Name, pw.Readside.Tailer.PerS, pw.Readside.Projector.PerS)
		if err := d.runWorkload(ctx, w, &pw); err != nil {
			// Reported, not fatal: the table says what Debezium failed on.
			pw.Error = err.Error()
			logf("workload %s (Debezium): %v", w.Name, err)
		}
		pw.ratios()
		for _, format := range []string{"debezium", "debezium-avro"} {
			logf("workload %s: readside's tailer in %s format", w.Name, format)
			if err := d.formatDrain(ctx, w, format, &pw); err != nil {
				pw.Error = strings.TrimSpace(pw.Error + "\nreadside in " + format + " format: " + err.Error())
				logf("workload %s (readside, %s format): %v", w.Name, format, err)
			}
		}
		b, _ := json.Marshal(pw)
		logf("%s", b)
		res.Workloads = append(res.Workloads, pw)
	}
	return nil
}

// compareLatency runs both latency sides when the first workload gave
// Debezium's rates; a failure is reported, not fatal.
func (d *dbz) compareLatency(ctx context.Context, quick bool) {
	res := d.res
	if len(res.Workloads) > 0 && res.Workloads[0].Source.PerS > 0 && res.Workloads[0].Sink.PerS > 0 {
		// The same offered rates for both, well below Debezium's slower
		// stage on the first workload (narrow inserts): end to end one
		// worker runs both connectors on the same two cores, so 50% of a
		// stage already saturated it in the first runs.
		capacity := min(res.Workloads[0].Source.PerS, res.Workloads[0].Sink.PerS)
		stepDur := 20 * time.Second
		if quick {
			stepDur = 6 * time.Second
		}
		if err := d.runLatency(ctx, []float64{0.1 * capacity, 0.25 * capacity}, stepDur); err != nil {
			res.LatencyErr = err.Error()
			logf("latency: %v", err)
		}
	}
}

// peerWorkloads are make bench's narrow workloads (the same sizes and
// seeds, so the same streams).
func peerWorkloads(quick bool) []workload {
	var out []workload
	for _, w := range workloads(quick) {
		if w.Name == "narrow_insert" || w.Name == "narrow_update_zipf" {
			out = append(out, w)
		}
	}
	return out
}

func (pw *peerWorkload) ratios() {
	if pw.Source.PerS > 0 {
		pw.SourceRatio = pw.Readside.Tailer.PerS / pw.Source.PerS
	}
	if pw.Sink.PerS > 0 {
		pw.SinkRatio = pw.Readside.Projector.PerS / pw.Sink.PerS
	}
	if m := max(pw.Source.PeakRSSMiB, pw.Sink.PeakRSSMiB); m > 0 {
		pw.MemRatio = max(pw.Readside.Tailer.PeakRSSMiB, pw.Readside.Projector.PeakRSSMiB) / m
	}
}

// dbz runs Debezium's side of the comparison.
type dbz struct {
	e      *env
	cn     *connectInstall
	res    *peersResults
	srcDB  string
	sinkDB string
	sink   *sinks.MySQL
	seq    int
}

// publish records a rendered config for the report, passwords elided.
func (d *dbz) publish(name, body string) {
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && strings.HasSuffix(k, "password") {
			line = k + "=…"
		}
		b.WriteString(line + "\n")
	}
	d.res.Config[name] = strings.TrimRight(b.String(), "\n") + "\n"
}

// vars are one pipeline's template values.
func (d *dbz) vars(name, table string) map[string]string {
	d.seq++
	prefix := fmt.Sprintf("dbz%d_%s", d.seq, name)
	return map[string]string{
		"NAME": prefix, "PREFIX": prefix, "BOOTSTRAP": strings.Join(d.e.bed.Kafka.Brokers(), ","),
		"DB_PORT": strconv.Itoa(d.e.bed.MySQL.Port), "DB_USER": testbed.AdminUser, "DB_PASSWORD": testbed.AdminPassword,
		"SERVER_ID": strconv.Itoa(900 + d.seq), "SRC_DB": d.srcDB, "TABLE": table, "SINK_DB": d.sinkDB,
		"TOPIC": prefix + "." + d.srcDB + "." + table, "SINK_TABLE": "dbz_" + table,
	}
}

// prepare creates a pipeline's source table and its topics (the broker does
// not auto-create topics): the data topic with readside's 6 partitions.
func (d *dbz) prepare(ctx context.Context, w workload, v map[string]string) error {
	if err := d.e.bed.MySQL.Exec(ctx, w.tableDDL(d.srcDB, v["TABLE"])); err != nil {
		return err
	}
	if _, err := d.e.adm.CreateTopic(ctx, 6, -1, nil, v["TOPIC"]); err != nil {
		return err
	}
	_, err := d.e.adm.CreateTopic(ctx, 1, -1, nil, v["PREFIX"]+"."+d.srcDB+".dbz_ping")
	return err
}

// prime starts the source connector once (schema only, no data) and stops
// it after it committed an offset — a ping row it streamed — so its next
// start reads the binlog from there, like readside's primeTailer.
func (d *dbz) prime(ctx context.Context, v map[string]string, offsets string) error {
	c, err := d.start(ctx, v["NAME"]+".prime", offsets, map[string]string{"source": peers.Render(peers.Source, v)})
	if err != nil {
		return err
	}
	defer c.end()
	ping := v["PREFIX"] + "." + d.srcDB + ".dbz_ping"
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := d.e.bed.MySQL.Exec(ctx, fmt.Sprintf("REPLACE INTO `%s`.dbz_ping VALUES (1, NOW(6))", d.srcDB)); err != nil {
			return err
		}
		if _, n := d.e.endOffsets(ctx, ping); n > 0 {
			break
		}
		if err := c.healthy(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Debezium source streamed no ping in 2 minutes (see %s)", c.logPath)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Two offset flush intervals, then a clean stop (which flushes too).
	time.Sleep(time.Second)
	c.end()
	if st, err := os.Stat(offsets); err != nil || st.Size() == 0 {
		return fmt.Errorf("the Debezium source committed no offset while priming (see %s)", c.logPath)
	}
	return nil
}

// runWorkload is Debezium's side of one workload: the same seeded stream
// written into its own copy of the table, the source drain, then the sink
// drain of the filled topic.
func (d *dbz) runWorkload(ctx context.Context, w workload, pw *peerWorkload) error {
	tbl := tableName(w)
	v := d.vars(w.Name, tbl)
	if err := d.prepare(ctx, w, v); err != nil {
		return err
	}
	gen := newGenerator(w, d.e.bed.MySQL.DB(), d.srcDB, tbl)
	if err := gen.preload(ctx); err != nil {
		return err
	}
	offsets := filepath.Join(d.e.dir, "connect", v["NAME"]+".offsets")
	if err := d.prime(ctx, v, offsets); err != nil {
		return fmt.Errorf("priming the source: %w", err)
	}
	if err := gen.backlog(ctx); err != nil {
		return err
	}
	d.e.settle(ctx, w.Name+": Debezium's source drain")
	var err error
	if pw.Source, err = d.sourceDrain(ctx, v, offsets, w); err != nil {
		return fmt.Errorf("source drain: %w", err)
	}
	logf("Debezium source %s: %.0f events/s, %.0f MiB", w.Name, pw.Source.PerS, pw.Source.PeakRSSMiB)
	_, pw.TopicRecords = d.e.endOffsets(ctx, v["TOPIC"])
	if recs, err := d.e.readTopic(ctx, v["TOPIC"], min(int(pw.TopicRecords), 5000)); err == nil {
		var n int
		for _, r := range recs {
			n += len(r.Key) + len(r.Value)
		}
		pw.AvgRecordB = float64(n) / float64(max(len(recs), 1))
	}
	if err := d.createSinkTable(ctx, w, v["SINK_TABLE"]); err != nil {
		return err
	}
	// The server's INSERT statement count around the sink drain (nothing
	// else writes meanwhile) shows how well the sink batches.
	d.e.settle(ctx, w.Name+": Debezium's sink drain")
	ins0 := d.comInsert(ctx)
	if pw.Sink, err = d.sinkDrain(ctx, v, w); err != nil {
		return fmt.Errorf("sink drain: %w", err)
	}
	pw.SinkInserts = d.comInsert(ctx) - ins0
	logf("Debezium sink %s: %.0f events/s, %.0f MiB", w.Name, pw.Sink.PerS, pw.Sink.PeakRSSMiB)
	// Both read tables hold the rows the backlog touched (the preload is
	// before both starts), from the same seeded stream: the same count and
	// the same seeded values (commit_us differs, it is the clock).
	sum := "SELECT COUNT(*), COALESCE(SUM(a), 0), COALESCE(SUM(CRC32(b)), 0) FROM `%s`.`%s`"
	var rsum, dsum [2]int64
	if err := d.e.bed.MySQL.DB().QueryRowContext(ctx, fmt.Sprintf(sum, d.e.sinkDB, "r_"+tbl)).Scan(&pw.ReadsideRows, &rsum[0], &rsum[1]); err != nil {
		return err
	}
	if err := d.e.bed.MySQL.DB().QueryRowContext(ctx, fmt.Sprintf(sum, d.sinkDB, v["SINK_TABLE"])).Scan(&pw.SinkRows, &dsum[0], &dsum[1]); err != nil {
		return err
	}
	if pw.SinkRows != pw.ReadsideRows || rsum != dsum {
		return fmt.Errorf("the Debezium sink table differs from readside's read table of the same stream: %d rows, sums %v; readside %d rows, sums %v",
			pw.SinkRows, dsum, pw.ReadsideRows, rsum)
	}
	return nil
}

// comInsert is the server's count of INSERT statements so far.
func (d *dbz) comInsert(ctx context.Context) int64 {
	var name string
	var n int64
	_ = d.e.bed.MySQL.DB().QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_insert'").Scan(&name, &n)
	return n
}

// createSinkTable is the JDBC sink's target: the source's columns and key
// plus _bench_visible_at, as readside's read tables have (schema.evolution
// is off, so the sink writes into exactly this table).
func (d *dbz) createSinkTable(ctx context.Context, w workload, name string) error {
	ddl := w.tableDDL(d.sinkDB, name)
	ddl = strings.TrimSuffix(ddl, ")") + ", _bench_visible_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))"
	return d.e.bed.MySQL.Exec(ctx, ddl)
}

// runLatency offers the same open-loop insert rates to Debezium (source
// and sink in one worker) and to readside (`readside run`), each on its
// own fresh table, and reads commit → visible from _bench_visible_at. A
// warm-up step at the lowest rate (not reported) runs first on both.
func (d *dbz) runLatency(ctx context.Context, rates []float64, stepDur time.Duration) error {
	w := workload{Name: "latency", Events: 0, TxnRows: 200, RowBytes: 150}
	dbzSteps, err := d.debeziumLatency(ctx, w, rates, stepDur)
	if err != nil {
		return err
	}
	return d.readsideLatency(ctx, w, rates, stepDur, dbzSteps)
}

// debeziumLatency is runLatency's Debezium side: one worker running both
// connectors on a fresh table, a step per rate after the warm-up.
func (d *dbz) debeziumLatency(ctx context.Context, w workload, rates []float64, stepDur time.Duration) ([]latencyStep, error) {
	v := d.vars("latency", "latency")
	if err := d.prepare(ctx, w, v); err != nil {
		return nil, err
	}
	if err := d.createSinkTable(ctx, w, v["SINK_TABLE"]); err != nil {
		return nil, err
	}
	offsets := filepath.Join(d.e.dir, "connect", v["NAME"]+".offsets")
	if err := d.prime(ctx, v, offsets); err != nil {
		return nil, fmt.Errorf("priming the source: %w", err)
	}
	c, err := d.start(ctx, v["NAME"]+".latency", offsets, map[string]string{"source": peers.Render(peers.Source, v), "sink": peers.Render(peers.Sink, v)})
	if err != nil {
		return nil, err
	}
	dbzEnv := *d.e
	dbzEnv.sink = d.sink
	gen := newGenerator(w, d.e.bed.MySQL.DB(), d.srcDB, "latency")
	var dbzSteps []latencyStep
	for i, rt := range append([]float64{rates[0]}, rates...) {
		d.e.settle(ctx, fmt.Sprintf("Debezium: latency at %.0f rows/s", rt))
		st, err := dbzEnv.latencyStep(ctx, gen, c.proc, nil, v["SINK_TABLE"], 0, rt, stepDur)
		if err == nil {
			err = c.healthy()
		}
		if err != nil {
			c.end()
			return nil, fmt.Errorf("running Debezium at %.0f rows/s: %w (see %s)", rt, err, c.logPath)
		}
		logf("Debezium latency at %.0f/s: %+v", rt, st)
		if i > 0 {
			dbzSteps = append(dbzSteps, st)
		}
		time.Sleep(2 * time.Second)
	}
	c.end()
	return dbzSteps, nil
}

// readsideLatency is runLatency's readside side: `readside run` on its
// own fresh table at the same rates, each step reported beside
// Debezium's step at that rate.
func (d *dbz) readsideLatency(ctx context.Context, w workload, rates []float64, stepDur time.Duration, dbzSteps []latencyStep) error {
	if err := d.e.bed.MySQL.Exec(ctx, w.tableDDL(d.e.srcDB, "latency")); err != nil {
		return err
	}
	prefix := prefixFor("latency")
	cfgPath, err := d.e.config("p_latency", "latency", prefix, true)
	if err != nil {
		return err
	}
	_, ps, err := compile(cfgPath)
	if err != nil {
		return err
	}
	if err := d.e.createReadTable(ctx, ps[0]); err != nil {
		return err
	}
	if err := d.e.primeTailer(ctx, cfgPath, prefix); err != nil {
		return err
	}
	p, err := startReadside(d.e.bin, cfgPath, "all", cfgPath+".all.log", freeAddr())
	if err != nil {
		return err
	}
	defer p.end()
	rgen := newGenerator(w, d.e.bed.MySQL.DB(), d.e.srcDB, "latency")
	for i, rt := range append([]float64{rates[0]}, rates...) {
		d.e.settle(ctx, fmt.Sprintf("readside: latency at %.0f rows/s", rt))
		st, err := d.e.latencyStep(ctx, rgen, p, nil, ps[0].Table, 0, rt, stepDur)
		if err != nil {
			return fmt.Errorf("readside at %.0f rows/s: %w", rt, err)
		}
		logf("readside latency at %.0f/s: %+v", rt, st)
		if i > 0 {
			d.res.Latency = append(d.res.Latency, peerLatency{OfferedPerS: rt, Readside: st, Debezium: dbzSteps[i-1]})
		}
		time.Sleep(2 * time.Second)
	}
	return nil
}
