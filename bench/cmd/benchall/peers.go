package main

// `make bench-peers`: Debezium's MariaDB source connector and its JDBC sink
// connector in Kafka Connect standalone, on the same test bed, workloads and
// measurements as readside, with readside measured in the same run so the
// ratios readside/Debezium come from one run. docs/benchmarks.md, "Debezium
// side by side", explains the method and the published config
// (bench/peers/).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

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
	Error       string  `json:"error,omitempty"`
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
	// Debezium's own databases: the same table names as readside's, so
	// the records carry the same source metadata.
	d := &dbz{e: e, cn: cn, res: &res}
	if d.srcDB, err = bed.MySQL.CreateDatabase(ctx, "dbzsrc"); err != nil {
		return err
	}
	if d.sinkDB, err = bed.MySQL.CreateDatabase(ctx, "dbzreads"); err != nil {
		return err
	}
	if d.sink, err = sinks.Open(ctx, bed.MySQL.AdminDSN()+d.sinkDB); err != nil {
		return err
	}
	defer d.sink.Close()
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.dbz_ping (id INT PRIMARY KEY, at DATETIME(6))", d.srcDB)); err != nil {
		return err
	}

	start := time.Now()
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
		b, _ := json.Marshal(pw)
		logf("%s", b)
		res.Workloads = append(res.Workloads, pw)
	}
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
	res.DurationS = time.Since(start).Seconds()
	res.LoadAfter = loadavg()
	res.Settles = e.settles
	return writePeers(outDir, &res)
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

// connectInstall is a resolved Kafka Connect worker and plug-in directory.
type connectInstall struct {
	java       string
	classpath  string
	pluginPath string
}

// pluginExcludes are the groups a plug-in directory leaves to the worker's
// class loader, as a Kafka distribution's libs/ provides them: Kafka's own
// APIs, slf4j, and Jackson (the same 2.19.0 on both sides; a plug-in-local
// jackson-databind fails on the worker's Jackson module service entries,
// "JakartaXmlBindAnnotationModule not a subtype").
const pluginExcludes = "org.apache.kafka,org.slf4j,com.fasterxml.jackson.core"

// installConnect resolves the worker's classpath and copies each Debezium
// plug-in with its dependencies into its own plugin.path directory, cached
// under ~/.cache/readside-bench-peers keyed by the poms (Maven offline
// first, so a warm cache needs no network).
func installConnect(ctx context.Context, workDir string) (*connectInstall, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found: install a JDK 17 (apt-get install default-jre-headless); the test bed's Kafka needs it too")
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return nil, errors.New("mvn not found: install Maven (apt-get install maven); it resolves Kafka Connect and Debezium from Maven Central")
	}
	h := sha256.New()
	h.Write([]byte(pluginExcludes))
	for _, b := range [][]byte{peers.ConnectPom, peers.SourcePom, peers.SinkPom} {
		h.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "readside-bench-peers", hex.EncodeToString(h.Sum(nil)[:8]))
	cn := &connectInstall{java: java, pluginPath: filepath.Join(cache, "plugins")}
	cpFile := filepath.Join(cache, "connect.classpath")
	done := filepath.Join(cache, "complete")
	if _, err := os.Stat(done); err == nil {
		if b, err := os.ReadFile(cpFile); err == nil && classpathPresent(string(b)) {
			cn.classpath = strings.TrimSpace(string(b))
			return cn, nil
		}
	}
	if err := os.RemoveAll(cache); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cn.pluginPath, 0o755); err != nil {
		return nil, err
	}
	mvnRun := func(pom []byte, name string, goal ...string) error {
		path := filepath.Join(workDir, name+"-pom.xml")
		if err := os.WriteFile(path, pom, 0o644); err != nil {
			return err
		}
		var out []byte
		var err error
		for _, offline := range []bool{true, false} {
			args := append([]string{"-q", "-B", "-f", path}, goal...)
			if offline {
				args = append([]string{"-o"}, args...)
			}
			if out, err = exec.CommandContext(ctx, mvn, args...).CombinedOutput(); err == nil {
				return nil
			}
		}
		return fmt.Errorf("resolving %s with Maven (%s): %w\n%s", name, path, err, out)
	}
	if err := mvnRun(peers.ConnectPom, "connect", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile); err != nil {
		return nil, err
	}
	for name, pom := range map[string][]byte{"debezium-mariadb": peers.SourcePom, "debezium-jdbc": peers.SinkPom} {
		if err := mvnRun(pom, name, "dependency:copy-dependencies", "-DincludeScope=runtime", "-DexcludeGroupIds="+pluginExcludes,
			"-DoutputDirectory="+filepath.Join(cn.pluginPath, name)); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, err
	}
	cn.classpath = strings.TrimSpace(string(b))
	return cn, os.WriteFile(done, nil, 0o644)
}

func classpathPresent(cp string) bool {
	for _, jar := range strings.Split(strings.TrimSpace(cp), ":") {
		if _, err := os.Stat(jar); err != nil {
			return false
		}
	}
	return strings.TrimSpace(cp) != ""
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

// connectProc is a running Kafka Connect standalone worker.
type connectProc struct {
	*proc
	rest    string
	logPath string
	names   []string
	once    sync.Once
	rss     float64
}

// end is proc.end, once: the deferred stop after an explicit one must not
// wait for a second peak RSS reading.
func (c *connectProc) end() float64 {
	c.once.Do(func() { c.rss = c.proc.end() })
	return c.rss
}

// start runs a standalone worker with the given connector configs, with
// Kafka's own default JVM flags (kafka-run-class.sh) and a fixed 1 GiB
// heap, and waits until every connector and task is RUNNING.
func (d *dbz) start(ctx context.Context, tag, offsets string, connectors map[string]string) (*connectProc, error) {
	rest := freeAddr()
	_, port, _ := strings.Cut(rest, ":")
	dir := filepath.Join(d.e.dir, "connect")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	worker := peers.Render(peers.Worker, map[string]string{"BOOTSTRAP": strings.Join(d.e.bed.Kafka.Brokers(), ","), "REST_PORT": port,
		"PLUGIN_PATH": d.cn.pluginPath, "OFFSETS_FILE": offsets})
	args := []string{"-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true", "-cp", d.cn.classpath, "org.apache.kafka.connect.cli.ConnectStandalone"}
	wpath := filepath.Join(dir, tag+".worker.properties")
	if err := os.WriteFile(wpath, []byte(worker), 0o600); err != nil {
		return nil, err
	}
	d.publish("worker.properties", worker)
	args = append(args, wpath)
	var names []string
	for kind, body := range connectors {
		path := filepath.Join(dir, tag+"."+kind+".properties")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return nil, err
		}
		d.publish(map[string]string{"source": "mariadb-source.properties", "sink": "jdbc-sink.properties"}[kind], body)
		args = append(args, path)
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "name="); ok {
				names = append(names, v)
			}
		}
	}
	logPath := filepath.Join(dir, tag+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	cmd := exec.Command(d.cn.java, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &proc{cmd: cmd, peak: make(chan int64, 1), stop: cancel}
	go func() { p.peak <- testbed.SamplePeakRSS(pctx, cmd.Process.Pid) }()
	c := &connectProc{proc: p, rest: rest, logPath: logPath, names: names}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := c.check()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errNotRunning) || time.Now().After(deadline) {
			c.end()
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var errNotRunning = errors.New("not running yet")

// check fails with the worker's own words when it exited or a connector or
// task FAILED, and with errNotRunning while one is not RUNNING yet.
func (c *connectProc) check() error {
	if !pidAlive(c.cmd.Process.Pid) {
		return fmt.Errorf("the Kafka Connect worker exited; %s ends:\n%s", c.logPath, tail(c.logPath, 30))
	}
	for _, name := range c.names {
		resp, err := http.Get("http://" + c.rest + "/connectors/" + name + "/status")
		if err != nil {
			return errNotRunning
		}
		var st struct {
			Connector struct {
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"connector"`
			Tasks []struct {
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"tasks"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return errNotRunning
		}
		if st.Connector.State == "FAILED" {
			return fmt.Errorf("connector %s FAILED: %s", name, firstLines(st.Connector.Trace, 8))
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 {
			return errNotRunning
		}
		for _, t := range st.Tasks {
			if t.State == "FAILED" {
				return fmt.Errorf("connector %s task FAILED: %s", name, firstLines(t.Trace, 12))
			}
			if t.State != "RUNNING" {
				return errNotRunning
			}
		}
	}
	return nil
}

// healthy is check for the measuring loops: only failures count.
func (c *connectProc) healthy() error {
	if err := c.check(); err != nil && !errors.Is(err, errNotRunning) {
		return err
	}
	return nil
}

func pidAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
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
			return fmt.Errorf("Debezium's source streamed no ping in 2 minutes (see %s)", c.logPath)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Two offset flush intervals, then a clean stop (which flushes too).
	time.Sleep(time.Second)
	c.end()
	if st, err := os.Stat(offsets); err != nil || st.Size() == 0 {
		return fmt.Errorf("Debezium's source committed no offset while priming (see %s)", c.logPath)
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
		return fmt.Errorf("Debezium's sink table differs from readside's read table of the same stream: %d rows, sums %v; readside %d rows, sums %v",
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

// sourceDrain starts the primed source on the backlog and times it from
// its first record in the topic to the last of the backlog's records
// acknowledged (acks=all), as readside's tailerDrain does from its first
// record to the checkpoint covering the backlog.
func (d *dbz) sourceDrain(ctx context.Context, v map[string]string, offsets string, w workload) (rate, error) {
	r := rate{Load1: loadavg()}
	c, err := d.start(ctx, v["NAME"]+".source", offsets, map[string]string{"source": peers.Render(peers.Source, v)})
	if err != nil {
		return r, err
	}
	defer func() {
		if c != nil {
			c.end()
		}
	}()
	var t0 time.Time
	var h0 int64
	var cpu0 float64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		_, sum := d.e.endOffsets(ctx, v["TOPIC"])
		if t0.IsZero() && sum > 0 {
			t0, h0, cpu0 = time.Now(), sum, c.cpuSeconds()
		}
		if sum >= int64(w.Events) {
			break
		}
		if err := c.healthy(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d events in 10 minutes (see %s)", sum, w.Events, c.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t1, cpu1 := time.Now(), c.cpuSeconds()
	r.PeakRSSMiB = c.end()
	c = nil
	ev := float64(int64(w.Events) - h0)
	r.Seconds = t1.Sub(t0).Seconds()
	r.PerS = ev / r.Seconds
	r.CPUPer1000 = (cpu1 - cpu0) / ev * 1000
	return r, nil
}

// sinkDrain starts the JDBC sink on the filled topic and times it from its
// first committed consumer offset to every partition committed to its end,
// in source events, as readside's projectorDrain does with its applied
// offsets. Offsets are committed every 250 ms (offset.flush.interval.ms).
func (d *dbz) sinkDrain(ctx context.Context, v map[string]string, w workload) (rate, error) {
	r := rate{Load1: loadavg()}
	ends, total := d.e.endOffsets(ctx, v["TOPIC"])
	c, err := d.start(ctx, v["NAME"]+".sink", filepath.Join(d.e.dir, "connect", v["NAME"]+".sink.offsets"),
		map[string]string{"sink": peers.Render(peers.Sink, v)})
	if err != nil {
		return r, err
	}
	defer func() {
		if c != nil {
			c.end()
		}
	}()
	group := "connect-" + v["NAME"] + "-sink"
	var t0 time.Time
	var s0 int64
	var cpu0 float64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		committed, sum := d.committed(ctx, group, v["TOPIC"])
		if t0.IsZero() && sum > 0 {
			t0, s0, cpu0 = time.Now(), sum, c.cpuSeconds()
		}
		done := true
		for p, end := range ends {
			if committed[p] < end {
				done = false
			}
		}
		if done && sum > 0 {
			break
		}
		if err := c.healthy(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d records committed in 10 minutes (see %s)", sum, total, c.logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t1, cpu1 := time.Now(), c.cpuSeconds()
	r.PeakRSSMiB = c.end()
	c = nil
	share := 1 - float64(s0)/float64(max(total, 1))
	ev := float64(w.Events) * share
	r.Seconds = t1.Sub(t0).Seconds()
	r.PerS = ev / r.Seconds
	r.CPUPer1000 = (cpu1 - cpu0) / ev * 1000
	return r, nil
}

// committed is a consumer group's committed offsets on a topic.
func (d *dbz) committed(ctx context.Context, group, topic string) (map[int32]int64, int64) {
	m := map[int32]int64{}
	var sum int64
	resp, err := d.e.adm.FetchOffsets(ctx, group)
	if err != nil {
		return m, 0
	}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == topic && o.At >= 0 {
			m[o.Partition] = o.At
			sum += o.At
		}
	})
	return m, sum
}

// runLatency offers the same open-loop insert rates to Debezium (source
// and sink in one worker) and to readside (`readside run`), each on its
// own fresh table, and reads commit → visible from _bench_visible_at. A
// warm-up step at the lowest rate (not reported) runs first on both.
func (d *dbz) runLatency(ctx context.Context, rates []float64, stepDur time.Duration) error {
	w := workload{Name: "latency", Events: 0, TxnRows: 200, RowBytes: 150}
	// Debezium.
	v := d.vars("latency", "latency")
	if err := d.prepare(ctx, w, v); err != nil {
		return err
	}
	if err := d.createSinkTable(ctx, w, v["SINK_TABLE"]); err != nil {
		return err
	}
	offsets := filepath.Join(d.e.dir, "connect", v["NAME"]+".offsets")
	if err := d.prime(ctx, v, offsets); err != nil {
		return fmt.Errorf("priming the source: %w", err)
	}
	c, err := d.start(ctx, v["NAME"]+".latency", offsets, map[string]string{"source": peers.Render(peers.Source, v), "sink": peers.Render(peers.Sink, v)})
	if err != nil {
		return err
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
			return fmt.Errorf("Debezium at %.0f rows/s: %w (see %s)", rt, err, c.logPath)
		}
		logf("Debezium latency at %.0f/s: %+v", rt, st)
		if i > 0 {
			dbzSteps = append(dbzSteps, st)
		}
		time.Sleep(2 * time.Second)
	}
	c.end()

	// readside, the same rates.
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

// writePeers writes peers.json and peers.md.
func writePeers(dir string, res *peersResults) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "peers.json"), append(b, '\n'), 0o644); err != nil {
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
	for _, w := range res.Workloads {
		if w.Error != "" {
			fmt.Fprintf(&b, "\n**Debezium failed on %s:** `%s`\n", w.Workload.Name, firstLines(w.Error, 3))
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
