package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// workload is one seeded, reproducible change stream against one table.
type workload struct {
	Name     string  `json:"name"`
	Kind     string  `json:"kind,omitempty"` // "" (the row workloads), txn_mix, orders_by_customer, messages_by_sender, sysbench (sources.go); messages_by_sender_month, orders_with_region (sources_computed.go)
	Wide     bool    `json:"wide"`           // ~1.2 KB rows instead of ~150 B
	Updates  float64 `json:"updates"`        // share of row changes that update an existing key
	Zipf     bool    `json:"zipf"`           // update keys Zipfian (s=1.1) instead of uniform
	Events   int     `json:"events"`         // row changes in the measured backlog
	Preload  int     `json:"preload"`        // rows written before the backlog (the keys updates pick from)
	TxnRows  int     `json:"txn_rows"`       // rows per source transaction (one multi-row statement)
	RowBytes int     `json:"row_bytes"`      // approximate JSON row image size
	// Live: after its drains, the workload's own mix live for its own
	// commit → visible step (workloadlatency.go).
	Live bool `json:"live_latency,omitempty"`
	// Consistency is the sink's consistency ("": row, the default;
	// "transaction": consistency.go); Base names the row-mode workload
	// whose stream this one writes again and whose figures it is set
	// against.
	Consistency string `json:"consistency,omitempty"`
	Base        string `json:"base,omitempty"`
	// InBatch drops a join's fan_out: background (a transactional sink
	// refuses it), so the row side of a comparison can match.
	InBatch bool `json:"in_batch,omitempty"`
	// Optional: run only when -workloads names it.
	Optional bool `json:"optional,omitempty"`
}

// stream is the workload its generator is seeded from: the base's name,
// so a consistency variant writes the base's very stream.
func (w workload) stream() workload {
	if w.Base != "" {
		w.Name = w.Base
	}
	return w
}

func (w workload) transactional() bool { return w.Consistency == "transaction" }

const seed = 20260601

// tableDDL is the source table of a workload. commit_us carries the
// generator's microsecond timestamp (the binlog header has 1 s resolution).
func (w workload) tableDDL(db, tbl string) string {
	extra := ""
	if w.Wide {
		extra = ", p VARCHAR(1100) NOT NULL"
	}
	return fmt.Sprintf("CREATE TABLE `%s`.`%s` (id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, a INT NOT NULL, b VARCHAR(60) NOT NULL, c DECIMAL(12,2) NOT NULL, d DATETIME(6) NOT NULL, commit_us BIGINT NOT NULL%s)", db, tbl, extra)
}

func (w workload) columns() []string {
	cols := []string{"id", "k", "a", "b", "c", "d", "commit_us"}
	if w.Wide {
		cols = append(cols, "p")
	}
	return cols
}

// generator writes a workload's rows; the same seed gives the same stream.
type generator struct {
	w     workload
	db    *sql.DB
	table string // `db`.`tbl`
	rnd   *rand.Rand
	zipf  *rand.Zipf
	maxID int64
	pad   string
}

func newGenerator(w workload, db *sql.DB, schema, tbl string) *generator {
	g := &generator{w: w, db: db, table: fmt.Sprintf("`%s`.`%s`", schema, tbl), rnd: rand.New(rand.NewPCG(seed, uint64(len(w.Name))))}
	g.pad = strings.Repeat("abcdefghij", 110)[:1000]
	return g
}

// appendRow appends one row's VALUES tuple.
func (g *generator) appendRow(b []byte, id int64, commitUS int64) []byte {
	b = append(b, '(')
	b = strconv.AppendInt(b, id, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, id%997, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(g.rnd.IntN(1_000_000)), 10)
	b = append(b, ",'name-"...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, g.rnd.Uint64(), 36)
	b = append(b, "',"...)
	b = strconv.AppendInt(b, int64(g.rnd.IntN(10_000_000)), 10)
	b = append(b, "/100,'2026-01-01 00:00:00' + INTERVAL "...)
	b = strconv.AppendInt(b, int64(g.rnd.IntN(1<<30)), 10)
	b = append(b, " MICROSECOND,"...)
	b = strconv.AppendInt(b, commitUS, 10)
	if g.w.Wide {
		off := g.rnd.IntN(100)
		b = append(b, ",'"...)
		b = append(b, g.pad[off:off+900]...)
		b = strconv.AppendUint(b, g.rnd.Uint64(), 36)
		b = append(b, '\'')
	}
	return append(b, ')')
}

func (g *generator) stmtHead() []byte {
	return []byte("INSERT INTO " + g.table + " (" + strings.Join(g.w.columns(), ",") + ") VALUES ")
}

func (g *generator) stmtTail(b []byte) []byte {
	b = append(b, " ON DUPLICATE KEY UPDATE a=VALUES(a), b=VALUES(b), c=VALUES(c), d=VALUES(d), commit_us=VALUES(commit_us)"...)
	if g.w.Wide {
		b = append(b, ", p=VALUES(p)"...)
	}
	return b
}

// preload inserts the keys the updates pick from (not part of the backlog).
func (g *generator) preload(ctx context.Context) error {
	for g.maxID < int64(g.w.Preload) {
		b := g.stmtHead()
		for i := 0; i < 1000 && g.maxID < int64(g.w.Preload); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			g.maxID++
			b = g.appendRow(b, g.maxID, time.Now().UnixMicro())
		}
		if _, err := g.db.ExecContext(ctx, string(b)); err != nil {
			return fmt.Errorf("preloading %s: %w", g.table, err)
		}
	}
	if g.w.Zipf && g.maxID > 1 {
		g.zipf = rand.NewZipf(g.rnd, 1.1, 1, uint64(g.maxID-1))
	}
	return nil
}

// next picks the key of the next row change: an update of an existing key
// or a new one.
func (g *generator) next() int64 {
	if g.maxID > 0 && g.rnd.Float64() < g.w.Updates {
		if g.zipf != nil {
			return int64(g.zipf.Uint64()) + 1
		}
		return g.rnd.Int64N(g.maxID) + 1
	}
	g.maxID++
	return g.maxID
}

// statement builds one transaction of n row changes.
func (g *generator) statement(n int, commitUS int64) (string, []int64) {
	b := g.stmtHead()
	ids := make([]int64, 0, n)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		id := g.next()
		ids = append(ids, id)
		b = g.appendRow(b, id, commitUS)
	}
	return string(g.stmtTail(b)), ids
}

// writeTxn writes one autocommit statement of n row changes stamped us
// (a txnWriter).
func (g *generator) writeTxn(ctx context.Context, n int, us int64) (int, error) {
	stmt, _ := g.statement(n, us)
	if _, err := g.db.ExecContext(ctx, stmt); err != nil {
		return 0, err
	}
	return n, nil
}

// backlog writes the workload's events as fast as the source takes them.
// A key repeated within one multi-row statement is still one row change
// each time (ON DUPLICATE KEY UPDATE logs every update).
func (g *generator) backlog(ctx context.Context) error {
	for done := 0; done < g.w.Events; {
		n := min(g.w.TxnRows, g.w.Events-done)
		stmt, _ := g.statement(n, time.Now().UnixMicro())
		if _, err := g.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("writing the backlog of %s: %w", g.w.Name, err)
		}
		done += n
	}
	return nil
}
