// Command benchall is `make bench`: in one run on one machine it measures
// the physical limits (B0 raw binlog parse, B1 raw produce, B2 raw upsert)
// and readside's stages (tailer drain, projector drain, end to end, commit
// → visible latency at fixed offered rates) on seeded workloads, with the
// CPU cost and peak RSS of the readside processes, and writes
// bench/results/latest.json and latest.md. It measures; it asserts nothing.
// docs/benchmarks.md explains every number.
//
//	make bench, or inside bench/: go run ./cmd/benchall [-quick] [-out ../bench/results]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

func main() {
	quick := flag.Bool("quick", false, "smaller sizes and shorter latency steps (make bench-quick)")
	out := flag.String("out", "bench/results", "directory for latest.json and latest.md")
	only := flag.String("workloads", "", "comma-separated workload names to run (default: all of the size)")
	profile := flag.String("cpuprofile", "", "run the tailer drains in-process and write a CPU profile of them here (pprof)")
	skipLatency := flag.Bool("skip-e2e", false, "skip the end-to-end and latency steps (the workloads' own latency steps too)")
	flag.BoolVar(&narrowE2E, "narrow-e2e", true, "run the end-to-end step on narrow inserts (backlog, live capacity, latency steps, outage); false keeps only the workloads' own latency steps")
	flag.StringVar(&fixedRates, "latency-rates", "", "comma-separated offered rows/s for the latency steps (the end-to-end step's and each workload's own) instead of fractions of the measured live capacity (same-conditions A/B runs)")
	flag.StringVar(&readsideEnv, "readside-env", "", "space-separated VAR=value for the readside processes only, e.g. GOMEMLIMIT=64MiB (A/B of runtime settings; the limit programs keep the default)")
	flag.DurationVar(&profileAfter, "profile-after", 300*time.Millisecond, "with -heapprofile: start the CPU profile this long after each readside process starts (the default catches a drain; ~25s catches the first latency step)")
	flag.IntVar(&profileSeconds, "profile-seconds", 3, "with -heapprofile: how many seconds the CPU profile of each readside process lasts")
	flag.StringVar(&logDir, "logdir", "", "write the readside processes' logs here instead of the test bed's directory, which is removed at the end")
	flag.StringVar(&heapDir, "heapprofile", "", "serve pprof in the readside processes and keep each one's heap profile at its largest RSS (<role>-<pid>.heap) and a CPU profile of 3 s (<role>-<pid>.cpu; see -profile-after) here")
	flag.StringVar(&prebuilt, "readside", "", "use this readside binary instead of building ./cmd/readside (before/after comparisons)")
	flag.StringVar(&outageFlag, "outage", "", "length of the sink outage in the end-to-end step (default 2m, 10s with -quick; 0 skips it)")
	flag.StringVar(&brokerJVM, "broker-jvm", "test", "JVM settings of the Kafka broker: test (the e2e tests' serial GC and C1 JIT only; the default: on 2 cores it leaves the most CPU to the rest, bench/results/history/tuning-log.md, entry 21) or production (Kafka's start scripts: G1, 1 GiB heap, full JIT)")
	// The test bed's 256 MiB buffer pool is sized for the tests; a bench
	// writes millions of rows (the end-to-end step's read table alone
	// grows past 3M, keyed at random), and with it every upsert past the
	// pool's reach read its page from disk: commit → visible then measured
	// the test bed's page misses (bench/results/history/tuning-log.md, entry 33).
	flag.StringVar(&mariadbArgs, "mariadb-args", "--innodb-buffer-pool-size=2G", "space-separated extra mariadbd options for the test bed's server, after its own (named in the report; \"\" for the test bed's server as is)")
	flag.DurationVar(&quietWait, "quiet-wait", 90*time.Second, "wait up to this long for a 1-minute load below 1.5 before starting")
	flag.DurationVar(&settleLimit, "settle", time.Minute, "before each stage, wait up to this long for MariaDB to flush its dirty pages and purge its undo history, so a stage does not pay for the writes of the one before (20s at most with -quick; 0: do not wait)")
	flag.IntVar(&snapshotRows, "snapshot-rows", 0, "rows of the snapshot step's table (default 2,000,000, 200,000 with -quick)")
	flag.IntVar(&bigTxnRows, "bigtxn-rows", 1_000_000, "rows of the txn_1m step's one source transaction into a transactional sink")
	flag.StringVar(&reshardFill, "reshard-fill", "", "the reshard step's --fill (copy or topics; default: the command's own)")
	chartFrom := flag.String("chart-from", "", "only redraw the PNG chart from this latest.json (into -out)")
	peersRun := flag.Bool("peers", false, "make bench-peers: Debezium (Kafka Connect standalone) next to readside on the narrow workloads; writes peers.json and peers.md")
	flag.Parse()
	if *chartFrom != "" {
		if err := redrawChart(*chartFrom, *out); err != nil {
			fmt.Fprintln(os.Stderr, "benchall:", err)
			os.Exit(1)
		}
		return
	}
	if *quick {
		settleLimit = min(settleLimit, 20*time.Second) // make bench-quick and bench-peers -quick
	}
	runner := func() error { return run(*quick, *out, *only, *profile, *skipLatency) }
	if *peersRun {
		runner = func() error { return runPeers(*quick, *out, *only) }
	}
	if err := runner(); err != nil {
		fmt.Fprintln(os.Stderr, "benchall:", err)
		os.Exit(1)
	}
}

var (
	quietWait    time.Duration
	prebuilt     string
	readsideEnv  string
	heapDir      string
	logDir       string
	profileAfter time.Duration
	// profileSeconds is the CPU profile's length.
	profileSeconds int
	fixedRates     string
	brokerJVM      string
	mariadbArgs    string
	settleLimit    time.Duration
	narrowE2E      bool
	bigTxnRows     int
)

func workloads(quick bool) []workload {
	n, wide, mix, sb := 300_000, 100_000, 60_000, 40_000
	if quick {
		n, wide, mix, sb = 60_000, 20_000, 10_000, 8_000
	}
	return []workload{
		{Name: "narrow_insert", Events: n, TxnRows: 200, RowBytes: 150},
		{Name: "narrow_update_zipf", Updates: 0.8, Zipf: true, Events: n, Preload: 50_000, TxnRows: 200, RowBytes: 150},
		{Name: "narrow_update_uniform", Updates: 0.8, Events: n, Preload: 50_000, TxnRows: 200, RowBytes: 150},
		{Name: "wide_insert", Wide: true, Events: wide, TxnRows: 100, RowBytes: 1200},
		{Name: "wide_update_zipf", Wide: true, Updates: 0.8, Zipf: true, Events: wide, Preload: 20_000, TxnRows: 100, RowBytes: 1200},
		// sources.go: transactions of 1–10 statements; the demo's joined
		// orders and chat messages; sysbench as an external load.
		{Name: "txn_mix", Kind: "txn_mix", Events: mix, Preload: 50_000, RowBytes: 150},
		{Name: "orders_by_customer", Kind: "orders_by_customer", Updates: 0.35, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120},
		{Name: "messages_by_sender", Kind: "messages_by_sender", Updates: 0.1, Events: mix, Preload: 20_000, TxnRows: 200, RowBytes: 300},
		// Computed read models (sources_computed.go): a month-bucket key
		// with computed columns; a join through a parent's parent.
		{Name: "messages_by_sender_month", Kind: "messages_by_sender_month", Updates: 0.1, Events: mix, Preload: 20_000, TxnRows: 200, RowBytes: 300, Live: true},
		{Name: "orders_with_region", Kind: "orders_with_region", Updates: 0.35, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		{Name: "orders_with_region_txn", Base: "orders_with_region", Consistency: "transaction", InBatch: true, Kind: "orders_with_region", Updates: 0.35, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		{Name: "orders_with_region_inbatch", Base: "orders_with_region", InBatch: true, Optional: true, Kind: "orders_with_region", Updates: 0.35, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		// Aggregates on Zipfian groups and nested children (issue 27:
		// sources_aggregate.go, sources_children.go), each with its own B2.
		// Each …_txn (the join, the aggregate, the children) is its base
		// right before it again on a sink with consistency: transaction
		// (consistency.go): the same stream, set against the base's
		// figures; the join in_batch (a transactional sink refuses a
		// background fan-out), orders_with_region_inbatch its row-mode
		// twin when named.
		{Name: "customer_order_stats", Kind: "customer_order_stats", Updates: 0.45, Zipf: true, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		// count(distinct) (sources_aggregate.go): the same stream, its
		// own B2.
		{Name: "customer_distinct_stats", Kind: "customer_distinct_stats", Updates: 0.45, Zipf: true, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		{Name: "customer_order_stats_txn", Base: "customer_order_stats", Consistency: "transaction", Kind: "customer_order_stats", Updates: 0.45, Zipf: true, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		{Name: "orders_with_lines", Kind: "orders_with_lines", Updates: 0.6, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		{Name: "orders_with_lines_txn", Base: "orders_with_lines", Consistency: "transaction", Kind: "orders_with_lines", Updates: 0.6, Events: mix, Preload: 30_000, TxnRows: 200, RowBytes: 120, Live: true},
		// Issue 44 (sources_joined.go): an aggregate grouped by a joined
		// parent's column, children carrying a joined parent's columns,
		// each with its own B2.
		{Name: "store_revenue", Kind: "store_revenue", Updates: 0.5, Events: mix, TxnRows: 200, RowBytes: 80},
		{Name: "film_cast", Kind: "film_cast", Updates: 0.45, Events: mix, TxnRows: 200, RowBytes: 60},
		{Name: "sysbench_write_only", Kind: "sysbench", Events: sb, Preload: 10_000, RowBytes: 250},
	}
}

type results struct {
	StartedAt  time.Time        `json:"started_at"`
	Quick      bool             `json:"quick"`
	Host       hostInfo         `json:"host"`
	Broker     string           `json:"broker"`
	MariaDB    string           `json:"mariadb"`
	Workloads  []workloadResult `json:"workloads"`
	Skipped    []string         `json:"skipped_workloads,omitempty"`
	EndToEnd   *e2eResult       `json:"end_to_end,omitempty"`
	Reshard    *reshardResult   `json:"reshard,omitempty"`
	Snapshot   *snapshotResult  `json:"snapshot,omitempty"`
	DurationS  float64          `json:"duration_s"`
	LoadBefore float64          `json:"load1_before"`
	LoadAfter  float64          `json:"load1_after"`
	// SettleLimitS is -settle; Settles are the waits for MariaDB to flush
	// and purge before each stage.
	SettleLimitS float64          `json:"settle_limit_s"`
	Settles      []benchio.Settle `json:"settles,omitempty"`

	// Consistency sets each transactional workload against its row-mode
	// base; BigTxn is the one large source transaction (consistency.go).
	Consistency []modeComparison `json:"consistency,omitempty"`
	BigTxn      *bigTxnResult    `json:"big_transaction,omitempty"`
}

type hostInfo struct {
	CPUs   int    `json:"cpus"`
	GoVer  string `json:"go"`
	Commit string `json:"commit"`
	// ReadsideEnv is -readside-env: runtime settings of the readside
	// processes in this run (empty: the defaults).
	ReadsideEnv string `json:"readside_env,omitempty"`
	// BrokerJVM is -broker-jvm: the Kafka broker's JVM settings.
	BrokerJVM string `json:"broker_jvm"`
	// MariaDBArgs is -mariadb-args (empty: the test bed's server as is).
	MariaDBArgs string `json:"mariadb_args,omitempty"`
}

// env is what every step shares: one test bed, one readside binary.
type env struct {
	bed      *testbed.Bed
	bin      string
	dir      string
	srcDB    string
	sinkDB   string
	sink     *sinks.MySQL
	adm      *kadm.Client
	kcl      *kgo.Client
	serverID uint32
	log      *slog.Logger
	profile  string
	// latency, when set, is the latency step of the workloads that have
	// one of their own (workload.Live).
	latency *latencyPlan
	// settles is every wait for MariaDB to settle before a stage, the limit
	// programs' included (benchio.SettleInnoDB).
	settles []benchio.Settle
	// consistency is the sink's consistency in the configs written now
	// ("": row); ownDatabases sets it (consistency.go).
	consistency string
	// capacities is each workload's live capacity measured so far: a
	// variant's latency step offers its fractions of its base's.
	capacities map[string]float64
}

func run(quick bool, outDir, only, profile string, skipE2E bool) error {
	ctx := context.Background()
	res := results{StartedAt: time.Now().UTC(), Quick: quick, Host: thisHost()}
	bed, load, closeBed, err := startBed(ctx)
	defer closeBed()
	if err != nil {
		return err
	}
	res.LoadBefore = load
	if quick {
		limitSweep = quickSweep
	}
	res.SettleLimitS = settleLimit.Seconds()
	e, err := newEnv(ctx, bed)
	if err != nil {
		return err
	}
	defer e.close()
	e.profile = profile
	res.Broker = bed.Kafka.Version()
	res.MariaDB, _ = bed.MySQL.Version(ctx)

	if !skipE2E {
		e.latency = &latencyPlan{fractions: []float64{0.5}, live: 10 * time.Second, step: 15 * time.Second}
		if quick {
			e.latency.live, e.latency.step = 4*time.Second, 5*time.Second
		}
	}
	start := time.Now()
	for _, w := range workloads(quick) {
		named := strings.Contains(","+only+",", ","+w.Name+",")
		if (only != "" || w.Optional) && !named {
			continue
		}
		logf("workload %s: %d events", w.Name, w.Events)
		r, err := e.runWorkload(ctx, w)
		if errors.Is(err, errSkip) {
			logf("workload %s: %v", w.Name, err)
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %v", w.Name, err))
			continue
		}
		if err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
		res.Workloads = append(res.Workloads, r)
		b, _ := json.Marshal(r)
		logf("%s", b)
	}
	res.Consistency = compareModes(res.Workloads)
	// One large source transaction into a transactional sink
	// (consistency.go); -workloads names it "txn_1m".
	if only == "" || strings.Contains(","+only+",", ",txn_1m,") {
		logf("txn_1m: one source transaction of %d rows", bigTxnRows)
		r, err := e.runBigTxn(ctx, bigTxnRows)
		if err != nil {
			return fmt.Errorf("txn_1m: %w", err)
		}
		res.BigTxn = r
		b, _ := json.Marshal(r)
		logf("%s", b)
	}
	// The reshard step (reshard.go); -workloads names it "reshard".
	if only == "" || strings.Contains(","+only+",", ",reshard,") {
		rows, b2 := 400_000, 0.0
		if quick {
			rows = 40_000
		}
		for _, w := range res.Workloads {
			if w.Workload.Name == "narrow_insert" {
				b2 = w.B2.PerS
			}
		}
		logf("reshard: %d rows, %s → %s", rows, rangesOf(reshardOld), rangesOf(reshardNew))
		r, err := e.runReshard(ctx, rows, b2)
		if err != nil {
			return fmt.Errorf("reshard: %w", err)
		}
		res.Reshard = r
		b, _ := json.Marshal(r)
		logf("%s", b)
	}
	// The snapshot step (snapshotstep.go); -workloads names it "snapshot".
	if only == "" || strings.Contains(","+only+",", ",snapshot,") {
		rows := 2_000_000
		if quick {
			rows = 200_000
		}
		if snapshotRows > 0 {
			rows = snapshotRows
		}
		logf("snapshot: %d rows", rows)
		r, err := e.runSnapshotStep(ctx, rows)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		res.Snapshot = r
		b, _ := json.Marshal(r)
		logf("%s", b)
	}
	if !skipE2E && narrowE2E {
		ew := workload{Name: "e2e_narrow_insert", Events: 200_000, TxnRows: 200, RowBytes: 150}
		steps, stepDur := []float64{0.25, 0.5, 0.75}, 20*time.Second
		if quick {
			ew.Events, stepDur = 50_000, 6*time.Second
		}
		od, err := outageFor(quick)
		if err != nil {
			return err
		}
		r, err := e.runEndToEnd(ctx, ew, steps, stepDur, od)
		if err != nil {
			return fmt.Errorf("end to end: %w", err)
		}
		res.EndToEnd = r
		b, _ := json.Marshal(r)
		logf("%s", b)
	}
	res.DurationS = time.Since(start).Seconds()
	res.LoadAfter = loadavg()
	res.Settles = e.settles
	return writeResults(outDir, &res)
}

// thisHost describes the machine and the commit measured.
func thisHost() hostInfo {
	h := hostInfo{CPUs: runtime.NumCPU(), GoVer: runtime.Version(), ReadsideEnv: readsideEnv, BrokerJVM: brokerJVM, MariaDBArgs: mariadbArgs}
	if b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		h.Commit = strings.TrimSpace(string(b))
	}
	return h
}

// startBed waits for a quiet machine (returning the load it settled on),
// then starts the test bed; closeBed is to be deferred even on error.
func startBed(ctx context.Context) (bed *testbed.Bed, load float64, closeBed func(), err error) {
	if brokerJVM != "production" && brokerJVM != "test" {
		return nil, 0, func() {}, fmt.Errorf("-broker-jvm %q: use production or test", brokerJVM)
	}
	load = waitQuiet(1.5, quietWait)
	logf("load before: %.2f", load)
	bed, err = testbed.Start(ctx, testbed.Options{ProductionJVM: brokerJVM == "production", MariaDBArgs: strings.Fields(mariadbArgs)})
	return bed, load, func() {
		if err := bed.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
		}
	}, err
}

// newEnv builds readside and the limit programs into the bed's directory
// (or takes -readside), creates the source and sink databases and opens
// the clients every step shares.
func newEnv(ctx context.Context, bed *testbed.Bed) (*env, error) {
	e := &env{bed: bed, dir: bed.Dir(), serverID: 700, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.bin = filepath.Join(bed.Dir(), "readside")
	product, err := productDir()
	if err != nil {
		return nil, err
	}
	if prebuilt != "" {
		e.bin = prebuilt
	} else {
		cmd := exec.Command("go", "build", "-o", e.bin, "./cmd/readside")
		cmd.Dir = product
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build: %v\n%s", err, b)
		}
	}
	if err := e.buildLimits(product); err != nil {
		return nil, err
	}
	if e.srcDB, err = bed.MySQL.CreateDatabase(ctx, "src"); err != nil {
		return nil, err
	}
	if e.sinkDB, err = bed.MySQL.CreateDatabase(ctx, "reads"); err != nil {
		return nil, err
	}
	if e.sink, err = sinks.Open(ctx, bed.MySQL.AdminDSN()+e.sinkDB); err != nil {
		return nil, err
	}
	if e.kcl, err = kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...)); err != nil {
		e.sink.Close()
		return nil, err
	}
	e.adm = kadm.NewClient(e.kcl)
	return e, nil
}

// settle waits, up to -settle, for MariaDB to write its dirty pages and
// purge its undo history before stage (benchio.SettleInnoDB). A server
// that will not settle is reported, not fatal: the stage then measures
// what it always did.
func (e *env) settle(ctx context.Context, stage string) {
	if settleLimit <= 0 {
		return
	}
	s, err := benchio.SettleInnoDB(ctx, e.bed.MySQL.DB(), stage, settleLimit)
	if err != nil {
		logf("warning: %v", err)
	} else if !s.Settled {
		logf("warning: MariaDB did not settle before %s within %s (dirty pages %d, undo history %d at the start)", stage, settleLimit, s.DirtyPages, s.HistoryLength)
	}
	e.settles = append(e.settles, s)
}

func (e *env) close() {
	e.kcl.Close()
	e.sink.Close()
}

// config writes a readside config for one workload: its own topic prefix,
// server id and read table, so steps never see each other's data.
func (e *env) config(name, table, prefix string, withProjection bool) (string, error) {
	e.serverID++
	var b strings.Builder
	fmt.Fprintf(&b, "source:\n  dsn: %q\n  server_id: %d\n  tables: [%s.%s]\n  snapshot:\n    mode: never\n", e.bed.MySQL.ReplDSN(), e.serverID, e.srcDB, table)
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  topic_prefix: %s\n  partitions: 6\n", strings.Join(e.bed.Kafka.Brokers(), ", "), prefix)
	if withProjection {
		fmt.Fprintf(&b, "sinks:\n  reads:\n    dsn: %q\n%s", e.bed.MySQL.AdminDSN()+e.sinkDB, e.consistencyLine())
		fmt.Fprintf(&b, "projections:\n  %s:\n    from: %s.%s\n    sink: reads\n    table: r_%s\n    key: [k, id]\n    shard_by: k\n    columns: {", name, e.srcDB, table, table)
		cols := []string{"id", "k", "a", "b", "c", "d", "commit_us"}
		if strings.HasPrefix(table, "wide") {
			cols = append(cols, "p")
		}
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s: %s", c, c)
		}
		b.WriteString("}\n")
	}
	b.WriteString("log:\n  level: warn\n")
	path := filepath.Join(e.dir, prefix+".yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// compile loads a config file and compiles its projections.
func compile(path string) (config.Config, []*projections.Projection, error) {
	cfg, err := config.Load(path, nil)
	if err != nil {
		return cfg, nil, err
	}
	ps, err := projections.Compile(cfg)
	return cfg, ps, err
}

// createReadTable creates a projection's read table ahead of the projector,
// with one column readside does not write: _bench_visible_at, set by
// MariaDB to the time of the upsert that made the row's current version
// (the statement time inside the sink transaction that commits it).
func (e *env) createReadTable(ctx context.Context, p *projections.Projection) error {
	types, err := p.SourceColumns(ctx, e.bed.MySQL.DB())
	if err != nil {
		return err
	}
	if err := e.sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
		return err
	}
	return e.sink.Exec(ctx, []string{fmt.Sprintf("ALTER TABLE `%s` ADD COLUMN _bench_visible_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)", p.Table)})
}

func prefixFor(name string) string { return fmt.Sprintf("b%d_%s", rand.IntN(1e6), name) }

func startCPUProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		logf("cpuprofile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		logf("cpuprofile: %v", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
