package main

// The reshard step (issue 28): a narrow projection on two shards (-80,
// 80-) is moved online onto three (-80, 80-c0, c0-) by `readside
// reshard` while `readside run` applies a live load. It reports the fill
// rate (rows the fill wrote on the new shard per second of the filling
// phase) next to narrow_insert's B2 of the same run (the sink's raw
// multi-row upsert of rows of the same shape: the fill is that kind of
// write), and commit → visible during the reshard, measured by a prober
// that reads each row it writes back from the shard the routing
// generation names, as an application routes.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// reshardResult is the reshard step's numbers.
type reshardResult struct {
	Rows     int     `json:"rows"`       // loaded before the reshard
	Fill     string  `json:"fill"`       // --fill ("" the command's default)
	Moved    int     `json:"rows_moved"` // rows on the new shard c0- when the command ended
	FillS    float64 `json:"fill_s"`     // seconds in phase filling
	FillPerS float64 `json:"fill_rows_per_s"`
	TotalS   float64 `json:"reshard_s"` // the whole command, cutover included
	Fence    string  `json:"fence"`     // the command's line about the fence
	// B2PerS is narrow_insert's B2 in this run (0: not run).
	B2PerS float64 `json:"b2_raw_upsert_per_s"`
	VsB2   float64 `json:"fill_vs_b2,omitempty"`
	// LiveRate is the load's row changes per second during the reshard;
	// Latency is commit → visible on the routed shard during it.
	LiveRate float64      `json:"live_rows_per_s"`
	Latency  reshardProbe `json:"latency_ms"`
	Phases   []string     `json:"phases"` // each phase seen, with its start (s into the command)
	// Progress is `_readside_reshards.progress` at the end: the command's
	// own count of rows copied, its fill rate and fence.
	Progress json.RawMessage `json:"progress,omitempty"`
}

type reshardProbe struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

// reshardFill is -reshard-fill.
var reshardFill string

// reshardRanges are the old and new sinks' shards: indexes into the
// step's three sink databases.
var (
	reshardOld = []reshardShard{{"-80", 0}, {"80-", 1}}
	reshardNew = []reshardShard{{"-80", 0}, {"80-c0", 1}, {"c0-", 2}}
)

type reshardShard struct {
	keyrange string
	db       int
}

func rangesOf(l []reshardShard) string {
	var rs []string
	for _, s := range l {
		rs = append(rs, s.keyrange)
	}
	return strings.Join(rs, ",")
}

const reshardProjection = "rs_items"

// runReshard runs the reshard step on rows preloaded rows; b2 is
// narrow_insert's B2 (0 when it did not run).
func (e *env) runReshard(ctx context.Context, rows int, b2 float64) (*reshardResult, error) {
	res := &reshardResult{Rows: rows, Fill: reshardFill, B2PerS: b2}
	db := e.bed.MySQL.DB()
	table := "`" + e.srcDB + "`.rs_items"
	if err := e.bed.MySQL.Exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY, k INT NOT NULL, a BIGINT NOT NULL, b VARCHAR(100) NOT NULL, commit_us BIGINT NOT NULL)"); err != nil {
		return nil, err
	}
	var dbs [3]string
	for i := range dbs {
		var err error
		if dbs[i], err = e.bed.MySQL.CreateDatabase(ctx, fmt.Sprintf("rs%c", 'a'+i)); err != nil {
			return nil, err
		}
	}
	prefix := prefixFor("reshard")
	cfgPath, err := e.reshardConfig(prefix, dbs)
	if err != nil {
		return nil, err
	}
	cl, err := checkpointClient(e.bed, prefix)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	p, err := startReadside(e.bin, cfgPath, "all", cfgPath+".log", freeAddr())
	if err != nil {
		return nil, err
	}
	defer p.end()
	if _, err := waitCheckpoint(ctx, cl, e.bed, nil, time.Minute); err != nil {
		return nil, err
	}
	// Rows of narrow_insert's size (~150 bytes).
	pad := strings.Repeat("x", 100)
	for lo := 1; lo <= rows; lo += 2000 {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " VALUES ")
		now := time.Now().UnixMicro()
		for id := lo; id < lo+2000 && id <= rows; id++ {
			if id > lo {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d,%d,'%s',%d)", id, id%1000, id, pad, now)
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return nil, err
		}
	}
	count := func() (int, error) {
		n := 0
		for _, s := range reshardOld {
			var c int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+dbs[s.db]+"`.`"+reshardProjection+"`").Scan(&c); err != nil {
				return 0, err
			}
			n += c
		}
		return n, nil
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		n, err := count()
		if err == nil && n >= rows {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the preload of %d rows was not applied within 10 minutes (%d, %v)", rows, n, err)
		}
	}
	e.settle(ctx, "reshard")

	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	pr := &reshardProber{db: db, table: table, dbs: dbs, first: rows + 1}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pr.write(lctx) }()
	go func() { defer wg.Done(); pr.probe(lctx) }()

	args := []string{"reshard", "--projection", reshardProjection, "--to", rangesOf(reshardNew), "--sink", "new", "--yes", "-c", cfgPath}
	if reshardFill != "" {
		args = append(args, "--fill", reshardFill)
	}
	logf("readside %s", strings.Join(args, " "))
	phases := map[string]time.Time{}
	start := time.Now()
	pr.mark(true)
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	q := "SELECT phase FROM `" + dbs[2] + "`.`_readside_reshards` WHERE projection = ?"
	var order []string
	var werr error
	for running := true; running; {
		select {
		case werr = <-done:
			running = false
		case <-time.After(20 * time.Millisecond):
		}
		var ph string
		if db.QueryRowContext(ctx, q, reshardProjection).Scan(&ph) == nil {
			if _, ok := phases[ph]; !ok {
				phases[ph] = time.Now()
				order = append(order, ph)
			}
		}
	}
	end := time.Now()
	pr.mark(false)
	res.TotalS = end.Sub(start).Seconds()
	if werr != nil {
		return nil, fmt.Errorf("readside reshard: %v\n%s", werr, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "fence") {
			res.Fence = strings.TrimSpace(line)
		}
	}
	for _, ph := range order {
		res.Phases = append(res.Phases, fmt.Sprintf("%s@%.1fs", ph, phases[ph].Sub(start).Seconds()))
	}
	// The fill ends where the next phase begins (the command's end if the
	// poll saw no later one).
	fillEnd := end
	if i := slices.Index(order, "filling"); i >= 0 && i+1 < len(order) {
		fillEnd = phases[order[i+1]]
	}
	fillStart, ok := phases["filling"]
	if !ok {
		fillStart = start
	}
	res.FillS = fillEnd.Sub(fillStart).Seconds()
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+dbs[2]+"`.`"+reshardProjection+"`").Scan(&res.Moved); err != nil {
		return nil, err
	}
	var progress []byte
	if db.QueryRowContext(ctx, "SELECT progress FROM `"+dbs[2]+"`.`_readside_reshards` WHERE projection = ?", reshardProjection).Scan(&progress) == nil && json.Valid(progress) {
		res.Progress = progress
	}
	res.FillPerS = float64(res.Moved) / res.FillS
	if b2 > 0 {
		res.VsB2 = res.FillPerS / b2
	}
	stopLoad()
	wg.Wait()
	res.LiveRate = float64(pr.changes) / res.TotalS
	res.Latency = pr.summary()
	if pr.err != nil {
		return nil, pr.err
	}
	return res, nil
}

func (e *env) reshardConfig(prefix string, dbs [3]string) (string, error) {
	e.serverID++
	var b strings.Builder
	fmt.Fprintf(&b, "source:\n  dsn: %q\n  server_id: %d\n  tables: [%s.rs_items]\n  snapshot:\n    mode: never\n", e.bed.MySQL.ReplDSN(), e.serverID, e.srcDB)
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  topic_prefix: %s\n  partitions: 6\n", strings.Join(e.bed.Kafka.Brokers(), ", "), prefix)
	b.WriteString("sinks:\n")
	for _, s := range []struct {
		name   string
		shards []reshardShard
	}{{"old", reshardOld}, {"new", reshardNew}} {
		fmt.Fprintf(&b, "  %s:\n    shards:\n", s.name)
		for _, sh := range s.shards {
			fmt.Fprintf(&b, "      - {keyrange: %q, dsn: %q}\n", sh.keyrange, e.bed.MySQL.AdminDSN()+dbs[sh.db])
		}
	}
	fmt.Fprintf(&b, "projections:\n  %s:\n    from: %s.rs_items\n    sink: old\n    key: [id]\n    shard_by: id\n    columns: {id: id, k: k, a: a, b: b, commit_us: commit_us}\n", reshardProjection, e.srcDB)
	b.WriteString("log:\n  level: warn\n")
	path := filepath.Join(e.dir, prefix+".yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// reshardProber writes the live load (about 200 row changes/s: updates of
// loaded rows and new ones) and, beside it, probe rows it reads back from
// the shard _readside_routing names until they show.
type reshardProber struct {
	db      *sql.DB
	table   string
	dbs     [3]string
	first   int // the first id after the preload
	changes int

	mu      sync.Mutex
	during  bool
	samples []time.Duration
	err     error
}

func (p *reshardProber) mark(during bool) {
	p.mu.Lock()
	p.during = during
	p.mu.Unlock()
}

func (p *reshardProber) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

func (p *reshardProber) write(ctx context.Context) {
	rng := rand.New(rand.NewPCG(seed, 28))
	next := p.first
	for tick := time.NewTicker(10 * time.Millisecond); ctx.Err() == nil; <-tick.C {
		now := time.Now().UnixMicro()
		var res sql.Result
		var err error
		if rng.IntN(2) == 0 {
			res, err = p.db.ExecContext(ctx, "INSERT INTO "+p.table+" VALUES (?, ?, ?, 'live', ?)", next, next%1000, next, now)
			next++
		} else {
			res, err = p.db.ExecContext(ctx, "UPDATE "+p.table+" SET a = a + 1, commit_us = ? WHERE id IN (?, ?)", now, 1+rng.IntN(p.first-1), 1+rng.IntN(p.first-1))
		}
		if err != nil {
			p.fail(ctx, err)
			return
		}
		n, _ := res.RowsAffected()
		p.changes += int(n)
	}
}

// probe upserts one of 64 probe rows at a time and polls the routed shard
// until it shows the write.
func (p *reshardProber) probe(ctx context.Context) {
	old, new := ranges(reshardOld), ranges(reshardNew)
	for seq := int64(1); ctx.Err() == nil; seq++ {
		id := int64(1<<40 + seq%64)
		if _, err := p.db.ExecContext(ctx, "INSERT INTO "+p.table+" VALUES (?, 0, ?, 'probe', ?) ON DUPLICATE KEY UPDATE a = VALUES(a), commit_us = VALUES(commit_us)", id, seq, time.Now().UnixMicro()); err != nil {
			p.fail(ctx, err)
			return
		}
		committed := time.Now()
		p.mu.Lock()
		during := p.during
		p.mu.Unlock()
		for ctx.Err() == nil {
			var sink string
			err := p.db.QueryRowContext(ctx, "SELECT sink FROM `"+p.dbs[0]+"`.`_readside_routing` WHERE projection = ?", reshardProjection).Scan(&sink)
			layout, rs := reshardOld, old
			if err == nil && sink == "new" {
				layout, rs = reshardNew, new
			}
			ks := keyspace.ID(projections.ShardValue(projections.ValueOf(id), 0))
			target := ""
			for i, r := range rs {
				if r.Contains(ks) {
					target = p.dbs[layout[i].db]
				}
			}
			var a int64
			err = p.db.QueryRowContext(ctx, "SELECT a FROM `"+target+"`.`"+reshardProjection+"` WHERE id = ?", id).Scan(&a)
			if err == nil && a >= seq {
				if during {
					p.mu.Lock()
					p.samples = append(p.samples, time.Since(committed))
					p.mu.Unlock()
				}
				break
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "doesn't exist") {
				p.fail(ctx, err)
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *reshardProber) summary() reshardProbe {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := slices.Clone(p.samples)
	if len(s) == 0 {
		return reshardProbe{}
	}
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return reshardProbe{Samples: len(s), P50: ms(s[len(s)/2]), P99: ms(s[min(len(s)-1, len(s)*99/100)]), Max: ms(s[len(s)-1])}
}

func ranges(l []reshardShard) []keyspace.Range {
	var rs []keyspace.Range
	for _, s := range l {
		r, err := keyspace.ParseRange(s.keyrange)
		if err != nil {
			panic(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// reshardMarkdown is the reshard step's section of latest.md.
func reshardMarkdown(b *strings.Builder, r *reshardResult) {
	if r == nil {
		return
	}
	fill := r.Fill
	if fill == "" {
		fill = "the default"
	}
	fmt.Fprintf(b, "\n## Reshard (`readside reshard`, %s → %s, --fill %s)\n\n", rangesOf(reshardOld), rangesOf(reshardNew), fill)
	b.WriteString("A narrow projection of the rows loaded first, on two shards, moved onto three while `readside run` applies a live load. Fill rate: rows on the new shard c0- when the command ended over the seconds in phase filling; B2: narrow_insert's raw upsert in this run. Commit → visible: a prober's writes read back from the shard `_readside_routing` names, during the command.\n\n")
	b.WriteString("| rows | rows moved | fill s | **fill rows/s** | B2 upsert | **fill / B2** | reshard s | live rows/s | p50 ms | **p99 ms** | max ms | samples |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	b2, vs := "–", "–"
	if r.B2PerS > 0 {
		b2, vs = fmt.Sprintf("%.0f", r.B2PerS), fmt.Sprintf("**%.2f**", r.VsB2)
	}
	fmt.Fprintf(b, "| %d | %d | %.1f | **%.0f** | %s | %s | %.1f | %.0f | %.1f | **%.1f** | %.1f | %d |\n", r.Rows, r.Moved, r.FillS, r.FillPerS, b2, vs, r.TotalS, r.LiveRate, r.Latency.P50, r.Latency.P99, r.Latency.Max, r.Latency.Samples)
	fmt.Fprintf(b, "\nPhases (first seen, s into the command): %s. %s\n", strings.Join(r.Phases, ", "), r.Fence)
}
