package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/readside/readside/keyspace"
)

// reshardLoad is what runs beside a reshard: a writer (inserts, updates,
// deletes), a reader that routes as an application does (design: "What
// readers see") and a prober that measures commit → visible on the shard
// the routing generation names.
type reshardLoad struct {
	r    *reshardRig
	rows int // ids 1..rows were loaded; those divisible by 10 are never deleted
	seed uint64
	wg   sync.WaitGroup

	writes, reads atomic.Int64
	mu            sync.Mutex
	phase         string
	latency       map[string][]time.Duration // commit → visible, by phase
	misses        []string
	errs          []error
	gens          map[uint64]int // reads per routing generation
}

// probeBase is the first of the prober's ids, far above the loaded and
// inserted ones.
const probeBase = 1 << 40

func newReshardLoad(r *reshardRig, rows int, seed uint64) *reshardLoad {
	return &reshardLoad{r: r, rows: rows, seed: seed, phase: "before", latency: map[string][]time.Duration{}, gens: map[uint64]int{}}
}

func (l *reshardLoad) start(ctx context.Context) {
	for _, f := range []func(context.Context){l.write, l.read, l.probe} {
		l.wg.Add(1)
		go func() { defer l.wg.Done(); f(ctx) }()
	}
}

func (l *reshardLoad) wait() { l.wg.Wait() }

// mark starts a new phase for the latency samples.
func (l *reshardLoad) mark(phase string) {
	l.mu.Lock()
	l.phase = phase
	l.mu.Unlock()
}

func (l *reshardLoad) fail(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

// write runs transactions of 1–4 statements every few milliseconds: new
// ids, updates of any id, deletes of ids not divisible by 10.
func (l *reshardLoad) write(ctx context.Context) {
	db, items := l.r.bed.MySQL.DB(), "`"+l.r.src+"`.items"
	rng := rand.New(rand.NewPCG(l.seed, 28))
	next := l.rows + 1
	for ctx.Err() == nil {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			break
		}
		for range 1 + rng.IntN(4) {
			now := time.Now().UnixMicro()
			switch k := rng.IntN(10); {
			case k < 4:
				_, err = tx.ExecContext(ctx, "INSERT INTO "+items+" VALUES (?, ?, 0, 'live', ?)", next, next%97, now)
				next++
			case k < 8:
				_, err = tx.ExecContext(ctx, "UPDATE "+items+" SET v = v + 1, commit_us = ? WHERE id = ?", now, 1+rng.IntN(next-1))
			default:
				id := 1 + rng.IntN(next-1)
				if id%10 == 0 {
					id++
				}
				_, err = tx.ExecContext(ctx, "DELETE FROM "+items+" WHERE id = ?", id)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("writer: %w", err))
			}
			return
		}
		l.writes.Add(1)
		time.Sleep(5 * time.Millisecond)
	}
}

// read looks up loaded ids divisible by 10 (never deleted) on the shard
// the routing generation names, each after reading the routing: none may
// be missing.
func (l *reshardLoad) read(ctx context.Context) {
	rng := rand.New(rand.NewPCG(l.seed, 29))
	for ctx.Err() == nil {
		id := int64(10 * (1 + rng.IntN(l.rows/10)))
		rt, err := l.r.routing(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("reader: %w", err))
			}
			return
		}
		srv, rg := rt.shardOf(id)
		var one int
		err = l.r.servers[srv].DB().QueryRowContext(ctx, "SELECT 1 FROM "+l.r.table(srv)+" WHERE id = ?", id).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			l.mu.Lock()
			l.misses = append(l.misses, fmt.Sprintf("id %d missing on shard %s (server %c) at generation %d", id, rg, 'A'+srv, rt.generation))
			l.mu.Unlock()
		case err != nil:
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("reader: %w", err))
			}
			return
		}
		l.reads.Add(1)
		l.mu.Lock()
		l.gens[rt.generation]++
		l.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

// probe upserts one of 64 probe rows with a growing v, then polls the
// shard the routing names until it shows that v: commit → visible.
func (l *reshardLoad) probe(ctx context.Context) {
	db, items := l.r.bed.MySQL.DB(), "`"+l.r.src+"`.items"
	for seq := int64(1); ctx.Err() == nil; seq++ {
		id := int64(probeBase + seq%64)
		if _, err := db.ExecContext(ctx, "INSERT INTO "+items+" VALUES (?, 0, ?, 'probe', ?) ON DUPLICATE KEY UPDATE v = VALUES(v), commit_us = VALUES(commit_us)",
			id, seq, time.Now().UnixMicro()); err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("prober: %w", err))
			}
			return
		}
		committed := time.Now()
		l.mu.Lock()
		phase := l.phase
		l.mu.Unlock()
		for ctx.Err() == nil {
			rt, err := l.r.routing(ctx)
			if err == nil {
				srv, _ := rt.shardOf(id)
				var v int64
				err = l.r.servers[srv].DB().QueryRowContext(ctx, "SELECT v FROM "+l.r.table(srv)+" WHERE id = ?", id).Scan(&v)
				if err == nil && v >= seq {
					l.mu.Lock()
					l.latency[phase] = append(l.latency[phase], time.Since(committed))
					l.mu.Unlock()
					break
				}
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "doesn't exist") {
				if ctx.Err() == nil {
					l.fail(fmt.Errorf("prober: %w", err))
				}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// report logs the numbers and fails for misses and load errors.
func (l *reshardLoad) report() {
	t := l.r.t
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.errs {
		t.Error(err)
	}
	t.Logf("load: %d write transactions, %d routed reads (per generation %v), %d misses", l.writes.Load(), l.reads.Load(), l.gens, len(l.misses))
	if l.gens[0] == 0 || l.gens[1] == 0 {
		t.Errorf("the reader did not read at both generations (0: the old sink, 1: the new): %v", l.gens)
	}
	for i, m := range l.misses {
		if i == 10 {
			t.Errorf("… and %d more misses", len(l.misses)-10)
			break
		}
		t.Errorf("a reader routing by _readside_routing missed a key that exists: %s", m)
	}
	for _, phase := range []string{"before", "reshard", "after"} {
		t.Logf("commit → visible on the routed shard, %s the reshard: %s", map[string]string{"before": "before", "reshard": "during", "after": "after"}[phase], quantiles(l.latency[phase]))
	}
}

// quantiles is "n samples, p50 …, p99 …, max …".
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("%d samples, p50 %s, p99 %s, max %s", len(s), q(0.5), q(0.99), s[len(s)-1].Round(100*time.Microsecond))
}

// route is the routing an application reads: the generation and the
// layout of the sink it names.
type route struct {
	generation uint64
	layout     sinkLayout
	ranges     []keyspace.Range
}

func (rt route) shardOf(id int64) (server int, keyrange string) {
	ks := keyspaceID(id)
	for i, rg := range rt.ranges {
		if rg.Contains(ks) {
			return rt.layout[i].server, rg.Text
		}
	}
	panic(fmt.Sprintf("no range of %s holds %016x", rt.layout.ranges(), ks))
}

// routing reads the projection's _readside_routing row on the first old
// server (it serves the projection before and after): no row (or no
// table yet), or a row at generation 0, is generation 0 on "old".
func (r *reshardRig) routing(ctx context.Context) (route, error) {
	srv := r.old[0].server
	var gen uint64
	var sink, ranges string
	err := r.servers[srv].DB().QueryRowContext(ctx, "SELECT generation, sink, ranges FROM `"+r.dbs[srv]+"`.`_readside_routing` WHERE projection = ?", reshardProj).Scan(&gen, &sink, &ranges)
	rt := route{layout: r.old}
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "doesn't exist")):
	case err != nil:
		return rt, err
	case gen == 0: // the row the fence inserts before the first generation: as if none
		ranges = rt.layout.ranges()
	case sink == "new":
		rt.generation, rt.layout = gen, r.new
	case sink != "old":
		return rt, fmt.Errorf("_readside_routing names sink %q", sink)
	default:
		rt.generation = gen
	}
	if err == nil && ranges != rt.layout.ranges() {
		return rt, fmt.Errorf("_readside_routing says sink %s has ranges %q, the config %q", sink, ranges, rt.layout.ranges())
	}
	for _, s := range rt.layout {
		rg, err := keyspace.ParseRange(s.keyrange)
		if err != nil {
			return rt, err
		}
		rt.ranges = append(rt.ranges, rg)
	}
	return rt, nil
}
